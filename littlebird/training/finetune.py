"""QA fine-tuning of a saved LittleBird on short inputs, without a teacher.

The same windows as the distillation stage (question + paragraph, ``--max-length`` tokens, Padding
Insertion) but only the gold-label loss, so no teacher forward pass per step (2.2-3.2 s per step of 16
on 2 AMD EPYC cores with bf16 autocast). It continues a student (``--student-dir``: a distillation or
long-context model folder, or the shipped ``assets/littlebird-qa``) when no teacher is at hand.

    python -m littlebird.training.finetune --student-dir assets/littlebird-qa --output-dir runs/finetune
"""

from __future__ import annotations

from .options import add_data_arguments, short_context_features
from .student import student_stage_main


def main(argv=None) -> None:
    student_stage_main(argv, __doc__, lambda parser: add_data_arguments(parser, max_length=384), short_context_features)


if __name__ == "__main__":
    main()
