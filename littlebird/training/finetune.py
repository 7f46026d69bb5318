"""QA fine-tuning of a saved LittleBird on short inputs, without a teacher.

The same windows as the distillation stage (question + paragraph, ``--max-length`` tokens, Padding
Insertion) but only the gold-label loss: no teacher forward pass per step, so a step costs about
two thirds of a distillation step. It continues a student (``--student-dir``: a distillation or
long-context model folder, or the shipped ``assets/littlebird-qa``) when no teacher is at hand.

    python -m littlebird.training.finetune --student-dir assets/littlebird-qa --output-dir runs/finetune
"""

from __future__ import annotations

import argparse

from . import loop
from .options import (add_data_arguments, add_padding_insertion_arguments, add_trainable_arguments,
                      short_context_features)
from .student import train_saved_student


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--student-dir", required=True, help="a saved LittleBird QA model folder")
    add_data_arguments(parser, max_length=384)
    add_padding_insertion_arguments(parser)
    add_trainable_arguments(parser)
    loop.add_arguments(parser)
    args = parser.parse_args(argv)
    train_saved_student(args, short_context_features)


if __name__ == "__main__":
    main()
