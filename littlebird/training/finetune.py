"""QA fine-tuning of a saved LittleBird on short inputs, without a teacher.

The same windows as the distillation stage (question + paragraph, ``--max-length`` tokens, Padding
Insertion) but only the gold-label loss, so a step costs no teacher forward pass. It continues a student
(``--student-dir``: a distillation or long-context model folder, or the shipped ``assets/littlebird-qa``)
when no teacher is at hand.

    python -m littlebird.training.finetune --student-dir assets/littlebird-qa --output-dir runs/finetune
"""

from __future__ import annotations

from dataclasses import dataclass

from ..command_options import parse_options
from .options import ShortDataOptions, short_context_features
from .student import StudentOptions, train_saved_student


@dataclass(kw_only=True)
class FinetuneOptions(ShortDataOptions, StudentOptions):
    """The fine-tuning stage: a saved student on paragraph windows, gold labels only."""


def run(args: FinetuneOptions) -> None:
    """Fine-tune ``args.student_dir`` into ``<output_dir>/model`` (resuming from ``state.pt``)."""
    train_saved_student(args, short_context_features)


def main(argv=None) -> None:
    run(parse_options(FinetuneOptions, argv, description=__doc__))


if __name__ == "__main__":
    main()
