"""Stage 3: train the distilled LittleBird on long inputs, without a teacher (paper section 3.4, step 3).

Real questions meet real long contexts: every paragraph of a SQuAD article joined in order (several
thousand tokens), and for Korean, whose articles are mostly one passage, a question's passage among
other passages under their own headings. Half the documents are rendered as the demo's cleaner
renders a web page (``<h1> title <p> ...``) so the HTML structure tokens are learnt; the rest as
plain paragraphs. Each question gives one window of ``--max-length`` tokens holding its answer
(at a random place in the window), plus a share of windows without it. Padding Insertion stays on.
``--short-en-questions`` / ``--short-ko-questions`` mix in paragraph windows as the fine-tuning stage
cuts them, so the paragraph skill is practised while long inputs are learnt.

    python -m littlebird.training.long_context --student-dir runs/distill/model --output-dir runs/long
"""

from __future__ import annotations

from dataclasses import dataclass

from ..command_options import parse_options
from .options import LongDataOptions, long_context_features
from .student import StudentOptions, train_saved_student


@dataclass(kw_only=True)
class LongContextOptions(LongDataOptions, StudentOptions):
    """The long-context stage: a saved student on long windows, optionally mixed with paragraph windows."""


def run(args: LongContextOptions) -> None:
    """Train ``args.student_dir`` on long windows into ``<output_dir>/model`` (resuming from ``state.pt``)."""
    train_saved_student(args, long_context_features)


def main(argv=None) -> None:
    run(parse_options(LongContextOptions, argv, description=__doc__))


if __name__ == "__main__":
    main()
