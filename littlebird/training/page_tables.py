"""Table questions on real web pages: WikiTableQuestions' training pages, read as the app reads them.

``qa/wtq-train-pages.jsonl.gz`` holds whole English Wikipedia article pages as HTML, each with questions
about one of its tables. Their answers are values, not offsets. Each page goes through the app's own
cleaner (:func:`littlebird.documents.clean.clean_document`), so training reads what serving reads, and a question
is kept when its answer is one span of the cleaned page's model text:

1. one answer value (a list of several values is no span);
2. the value occurs in the model text as whole words, inside one block (no tag token within);
3. it occurs once; or, where it occurs more than once, once within the rows of the question's table (the
   page's table holding the most of the page's answer values; each page's questions share one table).
   Otherwise it stays ambiguous and the question is dropped;
4. a number answering a count or a sum ("how many", "total", "difference", ...) is dropped too: it is
   computed from the table, and where the same number stands in the page it is there by chance.

For training (``split="train"``), a question that ranks rows ("which ... had the most", "the last ...") whose
value a ranked unit of its table names (``littlebird.table_text``: "highest, most Silver: Indonesia, 12") takes
that occurrence as its answer instead of the row's: the unit is where the page says which row is highest, and a
span there is the row's cell written again, so the stage learns to answer from it rather than against it.

Each kept page is one SQuAD article whose context is the cleaned model text, each question with its
answer's offsets there and ``table_row``: the model-text range of the table row holding the answer
(``None`` outside a table), which the evaluation uses to tell an answer from the right row.
The pages are split by title with the same stable hash as every other dev split.
"""

from __future__ import annotations

import gzip
import html
import json
import re
from collections import Counter
from dataclasses import dataclass, fields
from pathlib import Path

from ..vocabulary import TAG_TOKENS
from .splits import is_dev_title

TABLE_PAGES_FILE = "qa/wtq-train-pages.jsonl.gz"
_TAG = re.compile("|".join(re.escape(token) for token in TAG_TOKENS))
_NUMBER = re.compile(r"[-+]?[\d,]*\.?\d+%?")
_COMPUTED = re.compile(
    r"\b(how many|how much|total|difference|average|combined|sum|more|less|fewer|than|"
    r"number of|count)\b",
    re.IGNORECASE,
)


@dataclass
class TableQuestionCounts:
    """How many questions survive each step of :func:`table_question_articles`."""

    pages: int = 0
    questions: int = 0
    one_value: int = 0
    in_model_text: int = 0
    once_in_page: int = 0
    once_in_table: int = 0
    ambiguous: int = 0
    computed: int = 0
    kept: int = 0
    kept_in_question_table: int = 0
    from_ranked_unit: int = 0

    def add(self, other: "TableQuestionCounts") -> None:
        """Add ``other``'s counts to these."""
        for item in fields(self):
            setattr(self, item.name, getattr(self, item.name) + getattr(other, item.name))

    def report(self) -> str:
        """One line per step, each with its share of all questions."""
        lines = [f"{self.pages:,} pages, {self.questions:,} questions"]
        steps = [
            ("one answer value", self.one_value),
            ("the value in the cleaned model text", self.in_model_text),
            ("  once in the page", self.once_in_page),
            ("  more than once, once in the question's table", self.once_in_table),
            ("  more than once, ambiguous (dropped)", self.ambiguous),
            ("a number answering a count or a sum (dropped)", self.computed),
            ("kept", self.kept),
            ("  of which inside the question's table", self.kept_in_question_table),
            ("  answered from a ranked unit (training)", self.from_ranked_unit),
        ]
        for name, count in steps:
            lines.append(f"{name}: {count:,} ({count / max(1, self.questions):.1%})")
        return "\n".join(lines)


def read_table_pages(path: str | Path) -> list[dict]:
    """The pages of a ``wtq-train-pages.jsonl.gz`` file, in file order."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def page_html(page: dict) -> str:
    """The page as a browser gets it: the rendered article body under its ``<title>``."""
    return (
        f"<!DOCTYPE html><html><head><title>{html.escape(page['title'])} - Wikipedia</title></head>"
        f"<body>{page['html']}</body></html>"
    )


def clean_page(page: dict, table_form: str | None = None):
    """The page through the app's cleaner (a :class:`littlebird.documents.clean.Document`), its tables in
    ``table_form`` (the cleaner's default when None)."""
    # Imported here, not above: only this step needs the cleaner's packages (trafilatura, lxml, the train
    # extra's), so listing stages, planning a recipe or running one without table questions loads none.
    from ..documents.clean import clean_document
    from ..documents.decode import RawDocument

    raw = RawDocument(page_html(page), True, page.get("url") or page["title"], "utf-8")
    return clean_document(raw) if table_form is None else clean_document(raw, table_form=table_form)


def value_occurrences(model_text: str, value: str, model_to_text=None, once: bool = True) -> list[int]:
    """Starts of ``value`` in ``model_text`` as whole words, each inside one block (no tag token in it) and,
    with ``model_to_text``, each character from the page (none of a table's headers, which the cleaner
    writes before every row's cells), and, ``once``, each shown occurrence once (where it is first written)."""
    value = value.strip()
    if not value or _TAG.search(value):
        return []
    starts = []
    for match in re.finditer(re.escape(value), model_text):
        start, end = match.span()
        glued_before = start > 0 and model_text[start - 1].isalnum() and value[0].isalnum()
        glued_after = end < len(model_text) and model_text[end].isalnum() and value[-1].isalnum()
        from_page = model_to_text is None or all(
            model_to_text[i] >= 0 for i in range(start, end) if not model_text[i].isspace()
        )
        if not glued_before and not glued_after and from_page:
            starts.append(start)
    if model_to_text is not None and once:  # a cell written again is one occurrence on the page: its first
        seen: set[int] = set()
        starts = [s for s in starts if not (model_to_text[s] in seen or seen.add(model_to_text[s]))]
    return starts


def _row_of(rows: list[tuple[int, int, int]], start: int, end: int) -> tuple[int, int, int] | None:
    """The innermost table row holding ``[start, end)``, or None."""
    holding = [row for row in rows if row[1] <= start and end <= row[2]]
    return min(holding, key=lambda row: row[2] - row[1]) if holding else None


def _question_table(rows, occurrences: list[list[int]], lengths: list[int]) -> int | None:
    """The table whose rows hold the most of the page's answer values (each value counted once)."""
    votes: Counter = Counter()
    for starts, length in zip(occurrences, lengths):
        tables = {row[0] for start in starts if (row := _row_of(rows, start, start + length))}
        votes.update(tables)
    return votes.most_common(1)[0][0] if votes else None


_HIGH = {"most", "highest", "largest", "greatest", "biggest", "top", "best", "maximum", "longest", "oldest", "latest"}
_LOW = {"least", "lowest", "smallest", "fewest", "worst", "minimum", "shortest", "youngest", "earliest"}
_RANKS_ROWS = _HIGH | _LOW | {"first", "last", "fastest", "slowest"}  # a question with one of these ranks rows
_WORD = re.compile(r"\w+")


def _words(text: str) -> set[str]:
    words = {word.lower() for word in _WORD.findall(text)}
    return words | ({"highest"} if words & _HIGH else set()) | ({"lowest"} if words & _LOW else set())


def _in_ranked_unit(document, value: str, table: int | None, question: str) -> int | None:
    """The start of ``value`` in the part of a ranked unit of ``table`` that shares the most words with
    ``question`` (its column's header, "highest" or "lowest", "first" or "last"), or None where none shares one."""
    units = [(start, end) for number, start, end in document.ranked_units if number == table]
    if not units:
        return None
    asked = _words(question)
    text = document.model_text
    best, best_shared = None, 0
    for start in value_occurrences(text, value, document.model_to_text, once=False):
        unit = next(((a, b) for a, b in units if a <= start and start + len(value) <= b), None)
        if unit is None:
            continue
        part_start = text.rfind(";", unit[0], start) + 1 or unit[0]  # the unit's part that names this value
        part_end = text.find(";", start, unit[1])
        shared = len(asked & _words(text[part_start : part_end if part_end >= 0 else unit[1]]))
        if shared > best_shared:
            best, best_shared = start, shared
    return best


def page_article(
    page: dict, document=None, table_form: str | None = None, prefer_ranked: bool = False
) -> tuple[dict | None, TableQuestionCounts]:
    """One page as a SQuAD article over its cleaned model text, with the questions that keep a unique span;
    ``prefer_ranked`` answers a question that ranks rows from a ranked unit where one names its value."""
    counts = TableQuestionCounts(pages=1, questions=len(page["questions"]))
    document = document if document is not None else clean_page(page, table_form)
    text, rows = document.model_text, document.table_rows
    single = [q for q in page["questions"] if len(q["answers"]) == 1]
    counts.one_value = len(single)
    occurrences = [value_occurrences(text, q["answers"][0], document.model_to_text) for q in single]
    table = _question_table(rows, occurrences, [len(q["answers"][0].strip()) for q in single])
    qas = []
    for question, starts in zip(single, occurrences):
        value = question["answers"][0].strip()
        if not starts:
            continue
        counts.in_model_text += 1
        in_table = [s for s in starts if (row := _row_of(rows, s, s + len(value))) and row[0] == table]
        if len(starts) == 1:
            counts.once_in_page += 1
            start = starts[0]
        elif len(in_table) == 1:
            counts.once_in_table += 1
            start = in_table[0]
        else:
            counts.ambiguous += 1
            continue
        if _NUMBER.fullmatch(value) and _COMPUTED.search(question["question"]):
            counts.computed += 1
            continue
        row = _row_of(rows, start, start + len(value))
        if prefer_ranked and row and _words(question["question"]) & _RANKS_ROWS:
            ranked = _in_ranked_unit(document, value, row[0], question["question"])
            if ranked is not None:
                counts.from_ranked_unit += 1
                start = ranked
        counts.kept += 1
        counts.kept_in_question_table += bool(row and row[0] == table)
        qas.append(
            {
                "id": question["id"],
                "question": question["question"],
                "answers": [{"text": value, "answer_start": start}],
                "table_row": [row[1], row[2]] if row else None,
            }
        )
    if not qas:
        return None, counts
    return {"title": page["title"], "paragraphs": [{"context": text, "qas": qas}]}, counts


def table_question_articles(
    pages: list[dict], table_form: str | None = None, prefer_ranked: bool = False
) -> tuple[list[dict], TableQuestionCounts]:
    """Every page with kept questions as a SQuAD article, and the counts of each step over all pages."""
    articles, total = [], TableQuestionCounts()
    for page in pages:
        article, counts = page_article(page, table_form=table_form, prefer_ranked=prefer_ranked)
        total.add(counts)
        if article is not None:
            articles.append(article)
    return articles, total


def split_table_pages(pages: list[dict], dev_fraction: float) -> tuple[list[dict], list[dict]]:
    """(train, dev) pages by title, with the stable hash of every other dev split."""
    train = [page for page in pages if not is_dev_title(page["title"], dev_fraction)]
    dev = [page for page in pages if is_dev_title(page["title"], dev_fraction)]
    return train, dev


def load_table_articles(
    data_dir: str | Path, dev_fraction: float, split: str, table_form: str | None = None
) -> tuple[list[dict], TableQuestionCounts]:
    """The ``split`` ("train" or "dev") pages of ``data_dir``'s table file as SQuAD articles, with the counts."""
    pages = read_table_pages(Path(data_dir) / TABLE_PAGES_FILE)
    train, dev = split_table_pages(pages, dev_fraction)
    return table_question_articles(train if split == "train" else dev, table_form, prefer_ranked=split == "train")
