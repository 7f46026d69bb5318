"""The example documents shipped in ``assets/examples`` (see :mod:`littlebird.assets`): what they are and their
suggested questions."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from littlebird.assets import asset_path
from littlebird.documents import formats

EXAMPLES_DIR = asset_path("examples")
LANGUAGES = ("en", "ko")


@dataclass(frozen=True)
class SuggestedQuestion:
    """A question about an example document, with its answer as written in the document."""

    question: str
    answer: str


@dataclass(frozen=True)
class Example:
    """One example document: an HTML page or a PDF file, plus the questions the UI suggests for it."""

    id: str
    title: str
    language: str
    path: Path
    questions: tuple[SuggestedQuestion, ...]

    @property
    def label(self) -> str:
        """How the example is named in the UI's drop-down."""
        return f"{self.title} ({'Korean' if self.language == 'ko' else 'English'})"

    @property
    def is_page(self) -> bool:
        """An HTML page, which the UI pastes; otherwise a file (a PDF), which it uploads."""
        format = formats.by_suffix(self.path.suffix)
        return format is not None and format.markup

    def read_html(self) -> str:
        """The document's HTML source, as a user would paste it."""
        if not self.is_page:
            raise ValueError(f"example {self.id!r} is a {self.path.suffix} file, not an HTML page: upload {self.path}")
        return self.path.read_text(encoding="utf-8")


def web_pages(examples: tuple[Example, ...] | None = None) -> tuple[Example, ...]:
    """The examples that are HTML pages (the four the app has always shipped), in order."""
    return tuple(example for example in (load_examples() if examples is None else examples) if example.is_page)


@lru_cache(maxsize=4)
def load_examples(directory: Path = EXAMPLES_DIR) -> tuple[Example, ...]:
    """Read ``examples.json`` in ``directory`` and check that every listed file is there.

    Raises ValueError naming the entry when the index is malformed, so a broken asset
    fails at start-up rather than when a user picks the example.
    """
    index = json.loads((directory / "examples.json").read_text(encoding="utf-8"))
    examples = []
    for entry in index["examples"]:
        path = directory / entry["file"]
        if not path.is_file():
            raise ValueError(f"example {entry['id']!r}: file {path} does not exist")
        if entry["language"] not in LANGUAGES:
            raise ValueError(f"example {entry['id']!r}: language must be one of {LANGUAGES}, got {entry['language']!r}")
        questions = tuple(SuggestedQuestion(q["question"], q["answer"]) for q in entry["questions"])
        if not 3 <= len(questions) <= 5:
            raise ValueError(f"example {entry['id']!r}: give 3 to 5 suggested questions, got {len(questions)}")
        examples.append(Example(entry["id"], entry["title"], entry["language"], path, questions))
    return tuple(examples)


def find_example(label_or_id: str, examples: tuple[Example, ...] | None = None) -> Example:
    """The example whose id or drop-down label is ``label_or_id``; KeyError if none is."""
    for example in examples if examples is not None else load_examples():
        if label_or_id in (example.id, example.label):
            return example
    raise KeyError(f"no example called {label_or_id!r}")


def choose_example(label: str) -> tuple[str | None, str | None, list[str], str]:
    """An example's HTML (to paste) or, for a file, its path (to upload; the other is None), its suggested
    questions and the first of them."""
    example = find_example(label)
    questions = [q.question for q in example.questions]
    if example.is_page:
        return example.read_html(), None, questions, questions[0]
    return None, str(example.path), questions, questions[0]
