"""Page-shaped documents: training articles and pages rendered the way the app's cleaner reads a web page.

A real web page, once :mod:`littlebird.documents.clean` has read it, is more than prose: an infobox becomes
``Key | Value`` lines, tables rows of ``|``-separated cells, lists ``• item`` lines, and headings and
navigation crumbs stand between the paragraphs; some sources carry tokenized text ("Rowling 's",
"April 25 , 2018"). This module renders SQuAD articles (English) and groups of passages (Korean) in that
shape, keeping every answer's offsets exact:

- paragraphs of short sentences become a table (one row a sentence, cut into ``Key | Value`` at its first
  comma or copula, or after a Korean topic particle) or a list (one item a sentence);
- generic section headings stand between paragraphs, a Korean page's passages each under their title;
- a distractor infobox (fact rows of another article of the same split) and navigation lines (a
  breadcrumb, a list of other articles' titles, a categories line) stand among the blocks;
- in a share of pages, punctuation is tokenized as in treebank-style sources.

A page is a list of :class:`Block`. :meth:`Page.model_text` is what the cleaner feeds the model from the
page's HTML (:meth:`Page.html`): tag tokens and words, ``<h1> title <table> <tr> <td> Key <td> Value <p> ...``;
:meth:`Page.shown_text` is what the app shows of it (``Key | Value`` lines, ``• item`` lines), which is
also what a pasted copy of the page holds. The tests hold the renderer to both: ``clean_document`` of
:meth:`Page.html` gives exactly these two texts. A cut never falls inside an answer, so every answer
lies whole in one cell, item or paragraph, and only its whitespace and (tokenized pages) the spaces
before its punctuation may differ from the source's.
"""

from __future__ import annotations

import html
import random
import re
from dataclasses import dataclass, field
from typing import Sequence

from ..table_text import DEFAULT_TABLE_FORM, TableCell, glue_needed, table_plan
from ..vocabulary import neutralize_special_strings

# How often each shape is drawn (per eligible paragraph, per page): a page keeps most of its prose.
TABLE_SHARE = 0.15  # a paragraph of short sentences as a table of fact rows
LIST_SHARE = 0.15  # ... or as a list, one item a sentence
HEADING_RATE = 0.3  # a generic section heading before a paragraph (not the first)
INFOBOX_RATE = 0.6  # a page with a distractor infobox from another article
MAX_NAVIGATION_LINES = 3  # 0..this many navigation blocks a page
TEXT_SHARE = 0.5  # pages given as the app shows them (``Key | Value`` lines) rather than as the model's text
TOKENIZED_SHARE = 0.25  # pages whose punctuation is tokenized ("Rowling 's", "April 25 , 2018")

MAX_FACT_SENTENCES = 10  # a table or list holds at most this many sentences ...
MAX_FACT_CHARACTERS = 220  # ... of at most this many characters each
INFOBOX_ROWS = (2, 7)

HEADINGS = {
    "en": (
        "History",
        "Overview",
        "Background",
        "Description",
        "Early years",
        "Later years",
        "Legacy",
        "Geography",
        "Culture",
        "Reception",
        "Details",
        "Notes",
    ),
    "ko": ("개요", "역사", "배경", "특징", "생애", "평가", "지리", "문화", "구성", "활동", "영향", "기타"),
}
HOME = {"en": "Main page", "ko": "대문"}
CATEGORIES = {"en": "Categories:", "ko": "분류:"}

_SENTENCE_END = re.compile(r"[.!?][\"')\]]*(?= )")  # on whitespace-collapsed text
_ENGLISH_KEY = re.compile(r", | (?=(?:is|was|are|were|has|had) )")
_KOREAN_KEY = re.compile(r"(?<=[가-힣][은는]) |, ")
_KEY_WINDOW = 60  # a key cut lies within a sentence's first characters (a key is short)
# Tokenized punctuation: a space before ) 's n't and a , ; : ! ? . that ends a word ("300,000" stays), after (.
_TOKENIZE = re.compile(r"(?<=[^\s(])(?=[,;:!?.](?: |$)|\)|'s\b|n't\b)|(?<=\()(?=[^\s)])")
_WHITESPACE = re.compile(r"\s+")


@dataclass
class Cell:
    """A run of text with the answers inside it: ``(question index, start, end)`` in ``text``."""

    text: str
    answers: list[tuple[int, int, int]] = field(default_factory=list)


@dataclass
class Block:
    """One block of a page: ``h1``, ``h2``, ``p`` (one row of one cell), ``table`` (rows of cells) or ``ul``
    (rows of one cell, the items)."""

    kind: str
    rows: list[list[Cell]]

    @classmethod
    def single(cls, kind: str, text: str) -> "Block":
        return cls(kind, [[Cell(text)]])


# --------------------------------------------------------------------------- editing text, answers kept
def _edit(cell: Cell, edits: Sequence[tuple[int, int, str]]) -> Cell:
    """``cell`` with ``edits`` (sorted, disjoint ``(start, end, replacement)``) applied, answers moved.

    An edit at or before an answer's start shifts it; one inside an answer stretches it. Callers never
    edit across an answer's edge (answers are stripped first, and insertions are zero-width).
    """
    pieces, last, text = [], 0, cell.text
    for start, end, replacement in edits:
        pieces += [text[last:start], replacement]
        last = end

    def moved(position: int, is_end: bool) -> int:
        shift = 0
        for start, end, replacement in edits:
            if end < position or (end == position and not (is_end and start == end)):
                shift += len(replacement) - (end - start)
        return position + shift

    answers = [(q, moved(s, False), moved(e, True)) for q, s, e in cell.answers]
    return Cell("".join(pieces) + text[last:], answers)


def _collapse_whitespace(cell: Cell) -> Cell:
    """Whitespace runs as one space, none at the ends (as a browser and the cleaner show text); answers
    lose their own outer whitespace first, so no run crosses an answer's edge."""
    text = cell.text
    answers = []
    for q, s, e in cell.answers:
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        answers.append((q, s, e))
    edits = []
    for match in _WHITESPACE.finditer(text):
        at_edge = match.start() == 0 or match.end() == len(text)
        edits.append((match.start(), match.end(), "" if at_edge else " "))
    return _edit(Cell(neutralize_special_strings(text), answers), edits)


def tokenize_punctuation(cell: Cell) -> Cell:
    """Treebank-style spacing: "Rowling's book (1997), April 25, 2018." -> "Rowling 's book ( 1997 ) , April
    25 , 2018 ."; answers keep their words."""
    return _edit(cell, [(m.start(), m.start(), " ") for m in _TOKENIZE.finditer(cell.text)])


def _cut(cell: Cell, cuts: Sequence[tuple[int, int]]) -> list[Cell]:
    """``cell`` split at ``cuts`` (``(start, end)`` spans dropped between the pieces); never inside an answer."""
    pieces, last = [], 0
    for start, end in list(cuts) + [(len(cell.text), len(cell.text))]:
        text = cell.text[last:start]
        first = last + len(text) - len(text.lstrip())  # a piece loses the spaces at its edges (answers have none)
        answers = [(q, s - first, e - first) for q, s, e in cell.answers if last <= s and e <= start]
        pieces.append(Cell(text.strip(), answers))
        last = end
    return [piece for piece in pieces if piece.text]


def _inside_an_answer(cell: Cell, start: int, end: int) -> bool:
    """Whether dropping ``[start, end)`` (or cutting at ``start``) would break an answer."""
    return any(s < max(end, start + 1) and start < e for _, s, e in cell.answers)


def sentences(cell: Cell) -> list[Cell]:
    """``cell``'s sentences (on whitespace-collapsed text), never cut inside an answer."""
    cuts = [
        (m.end(), m.end() + 1)
        for m in _SENTENCE_END.finditer(cell.text)
        if not _inside_an_answer(cell, m.end(), m.end() + 1)
    ]
    return _cut(cell, cuts)


def fact_row(sentence: Cell, language: str) -> list[Cell]:
    """A sentence as a table row: ``Key | Value`` at its first comma or copula (English) or after its topic
    particle (Korean), within its first characters and outside any answer; else one cell."""
    pattern = _KOREAN_KEY if language == "ko" else _ENGLISH_KEY
    for match in pattern.finditer(sentence.text, 1, _KEY_WINDOW):
        if not _inside_an_answer(sentence, match.start(), match.end()):
            return _cut(sentence, [(match.start(), match.end())])
    return [sentence]


def _is_fact_list(parts: list[Cell]) -> bool:
    return 2 <= len(parts) <= MAX_FACT_SENTENCES and all(len(p.text) <= MAX_FACT_CHARACTERS for p in parts)


def paragraph_block(cell: Cell, language: str, rng: random.Random) -> Block:
    """A paragraph as prose, or (where its sentences are short facts) as a table of fact rows or a list."""
    parts = sentences(cell)
    draw = rng.random()
    if _is_fact_list(parts) and draw < TABLE_SHARE:
        return Block("table", [fact_row(part, language) for part in parts])
    if _is_fact_list(parts) and draw < TABLE_SHARE + LIST_SHARE:
        return Block("ul", [[part] for part in parts])
    return Block("p", [[cell]])


# --------------------------------------------------------------------------- distractors
def _display_title(title: str) -> str:
    return title.replace("_", " ").strip() or "-"


def infobox(article: dict, language: str, rng: random.Random) -> Block | None:
    """Fact rows of one of ``article``'s paragraphs (its questions dropped), or None if it has too few."""
    paragraph = rng.choice(article["paragraphs"])
    parts = sentences(_collapse_whitespace(Cell(paragraph["context"])))
    parts = [part for part in parts if len(part.text) <= MAX_FACT_CHARACTERS]
    if len(parts) < INFOBOX_ROWS[0]:
        return None
    rows = [fact_row(part, language) for part in parts[: rng.randint(*INFOBOX_ROWS)]]
    return Block("table", [[Cell(_display_title(article["title"]))]] + rows)


def navigation(titles: Sequence[str], language: str, rng: random.Random) -> Block:
    """A navigation block of other articles' titles: a breadcrumb, a list of links or a categories line."""
    chosen = rng.sample(list(titles), min(len(titles), rng.randint(2, 5)))
    shape = rng.randrange(3)
    if shape == 0:
        return Block.single("p", " › ".join([HOME[language], *chosen[:3]]))
    if shape == 1:
        return Block("ul", [[Cell(title)] for title in chosen])
    return Block.single("p", f"{CATEGORIES[language]} " + " | ".join(chosen))


# --------------------------------------------------------------------------- the page
@dataclass
class Page:
    """A rendered page: its blocks and the questions its answers belong to (``qas[i]`` for index ``i``)."""

    title: str
    blocks: list[Block]
    qas: list[dict]

    def model_text(self, table_form: str = DEFAULT_TABLE_FORM) -> tuple[str, list[tuple[int, int, int]]]:
        """What the cleaner feeds the model from :meth:`html`, with every answer's ``(question, start, end)``;
        tables in ``table_form`` (:mod:`littlebird.table_text`), as the cleaner writes them."""
        builder = _Builder()
        heading = ""
        for block in self.blocks:
            if block.kind in ("h1", "h2", "p"):
                builder.separate()
                builder.add(f"<{block.kind}> ")
                builder.cell(block.rows[0][0])
                if block.kind != "p":
                    heading = block.rows[0][0].text
                continue
            if block.kind == "table" and table_form != "tags":
                rows = [[TableCell(cell, cell.text) for cell in row] for row in block.rows]
                for _, pieces in table_plan(rows, table_form, heading):
                    for piece in pieces:
                        if piece.kind == "glue":
                            if glue_needed(piece.text, builder.last()):
                                builder.add(piece.text)
                            continue
                        builder.separate()
                        if piece.kind == "cell" and piece.slot.first:
                            builder.cell(piece.slot.cell.content)
                        elif piece.kind == "cell":  # a cell written again (a ranked unit's): its answers stay once
                            builder.add(piece.slot.cell.content.text)
                        else:
                            builder.add(piece.text)
                continue
            builder.separate()
            builder.add("<table>" if block.kind == "table" else "<ul>")
            for row in block.rows:
                if block.kind == "table":
                    builder.add(" <tr>")
                for cell in row:
                    builder.add(" <td> " if block.kind == "table" else " <li> ")
                    builder.cell(cell)
        return builder.finish()

    def shown_text(self) -> tuple[str, list[tuple[int, int, int]]]:
        """What the app shows of :meth:`html`: blocks apart by a blank line (a list after a heading or a list
        by a line break), rows and items on their own lines, cells apart by `` | ``, items after ``• ``."""
        builder = _Builder()
        previous = None
        for block in self.blocks:
            if previous is not None:
                builder.add("\n" if block.kind == "ul" and previous in ("h1", "h2", "ul") else "\n\n")
            previous = block.kind
            for index, row in enumerate(block.rows):
                if index:
                    builder.add("\n")
                if block.kind == "ul":
                    builder.add("• ")
                for position, cell in enumerate(row):
                    if position:
                        builder.add(" | ")
                    builder.cell(cell)
        return builder.finish()

    def html(self) -> str:
        """The page as a web page would carry it, for the cleaner to read."""
        parts = [f"<!DOCTYPE html><html><head><title>{html.escape(self.title)}</title></head><body><main>"]
        for block in self.blocks:
            if block.kind in ("h1", "h2", "p"):
                parts.append(f"<{block.kind}>{html.escape(block.rows[0][0].text)}</{block.kind}>")
            elif block.kind == "table":
                rows = "".join(
                    "<tr>" + "".join(f"<td>{html.escape(c.text)}</td>" for c in row) + "</tr>" for row in block.rows
                )
                parts.append(f"<table>{rows}</table>")
            else:
                parts.append("<ul>" + "".join(f"<li>{html.escape(row[0].text)}</li>" for row in block.rows) + "</ul>")
        parts.append("</main></body></html>")
        return "".join(parts)

    def article(self, as_text: bool, table_form: str = DEFAULT_TABLE_FORM) -> dict:
        """The page as a SQuAD article with one paragraph: the shown text (``as_text``) or the model text."""
        context, answers = self.shown_text() if as_text else self.model_text(table_form)
        found: dict[int, list[dict]] = {}
        for q, start, end in answers:
            found.setdefault(q, []).append({"text": context[start:end], "answer_start": start})
        qas = [{**qa, "answers": found[i]} for i, qa in enumerate(self.qas) if i in found]
        return {"title": self.title, "paragraphs": [{"context": context, "qas": qas}]}


class _Builder:
    """Appends text, keeping each answer's offsets in the whole."""

    def __init__(self):
        self.parts: list[str] = []
        self.length = 0
        self.answers: list[tuple[int, int, int]] = []

    def add(self, text: str) -> None:
        self.parts.append(text)
        self.length += len(text)

    def last(self) -> str:
        """The last character written ("" at the start)."""
        return self.parts[-1][-1:] if self.parts else ""

    def separate(self) -> None:
        """A space before the next word, as the cleaner puts one between blocks and words."""
        if self.length and self.last() != " ":
            self.add(" ")

    def cell(self, cell: Cell) -> None:
        self.answers += [(q, self.length + s, self.length + e) for q, s, e in cell.answers]
        self.add(cell.text)

    def finish(self) -> tuple[str, list[tuple[int, int, int]]]:
        return "".join(self.parts), self.answers


def render_page(
    sections: Sequence[tuple[str | None, list[dict]]],
    title: str,
    *,
    language: str,
    distractors: Sequence[dict],
    rng: random.Random,
    tokenized: bool = False,
) -> Page:
    """One page of ``sections`` (heading or None, SQuAD paragraphs), in order, under ``title``.

    ``distractors`` are other articles of the same split: the infobox and the navigation lines come
    from them, so no answer hides there. ``tokenized`` spaces out the punctuation of the page's own text.
    """
    qas: list[dict] = []
    blocks = [Block.single("h1", _display_title(title))]
    body: list[Block] = []
    for heading, paragraphs in sections:
        if heading is not None:
            body.append(Block.single("h2", _display_title(heading)))
        for index, paragraph in enumerate(paragraphs):
            context = paragraph["context"]
            answers = []
            for qa in paragraph["qas"]:
                for answer in qa["answers"][:1]:  # the first answer, the one training reads (the files have one)
                    answers.append((len(qas), answer["answer_start"], answer["answer_start"] + len(answer["text"])))
                qas.append(qa)
            cell = _collapse_whitespace(Cell(context, answers))
            if tokenized:
                cell = tokenize_punctuation(cell)
            if not cell.text:
                continue
            if index and rng.random() < HEADING_RATE:
                body.append(Block.single("h2", rng.choice(HEADINGS[language])))
            body.append(paragraph_block(cell, language, rng))
    own = {title, *(heading for heading, _ in sections)}
    others = [a for a in distractors if a["title"] not in own and a["paragraphs"]]
    if others and rng.random() < INFOBOX_RATE:
        box = infobox(rng.choice(others), language, rng)
        if box is not None:
            body.insert(rng.randrange(min(2, len(body)) + 1), box)  # near the top, as infoboxes sit
    titles = sorted({_display_title(a["title"]) for a in others})
    if titles:
        for _ in range(rng.randint(0, MAX_NAVIGATION_LINES)):
            body.insert(rng.randrange(len(body) + 1), navigation(titles, language, rng))
    return Page(title=_display_title(title), blocks=blocks + body, qas=qas)


def page_shaped_documents(
    articles: list[dict],
    language: str,
    *,
    distractors: Sequence[dict],
    passages_per_document: int = 12,
    text_share: float = TEXT_SHARE,
    tokenized_share: float = TOKENIZED_SHARE,
    seed: int = 0,
    table_form: str = DEFAULT_TABLE_FORM,
) -> list[dict]:
    """``articles`` as page-shaped SQuAD documents (one paragraph each), every answer at its offsets.

    English articles become one page each; Korean ones, mostly one passage, are grouped
    ``passages_per_document`` at a time in random order, each passage under its title. A share of pages
    (``text_share``) is given as the app shows the page, the rest as the model reads it; a share
    (``tokenized_share``) has tokenized punctuation. ``distractors``: the same split's articles.
    """
    rng = random.Random(f"page-shape-{seed}")
    if language == "ko":
        order = list(range(len(articles)))
        rng.shuffle(order)
        groups = [
            [articles[i] for i in order[start : start + passages_per_document]]
            for start in range(0, len(order), passages_per_document)
        ]
        pages = [
            ([(a["title"], a["paragraphs"]) for a in group], " / ".join(a["title"] for a in group[:3]))
            for group in groups
        ]
    else:
        pages = [([(None, a["paragraphs"])], a["title"]) for a in articles]
    documents = []
    for sections, title in pages:
        as_text, tokenized = rng.random() < text_share, rng.random() < tokenized_share
        page = render_page(sections, title, language=language, distractors=distractors, rng=rng, tokenized=tokenized)
        documents.append(page.article(as_text, table_form))
    return documents
