"""RawDocument -> Document: the text shown to the user and the text fed to the model, linked.

Appendix A.2 (KorQuAD 2.0): headers, footers, navigation, scripts and styles are removed, and
key HTML elements become tag tokens the model knows (``littlebird.vocabulary.TAG_TOKENS``).
Both texts are written side by side, so every character of the model text that came from the
document knows its index in the shown text; inserted tag tokens and separators map to -1. A
token's span in the shown text is then exact, in any language.
"""

import bisect
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import trafilatura
from lxml import etree
from lxml import html as lxml_html

from littlebird.documents.decode import PageImage, RawDocument, TextBlock, WordBox
from littlebird.documents.errors import DocumentError
from littlebird.language import detect_language
from littlebird.table_text import (
    DEFAULT_TABLE_FORM,
    Piece,
    Slot,
    TableCell,
    check_table_form,
    glue_needed,
    plain,
    table_plan,
)
from littlebird.vocabulary import neutralize_special_strings

_WORD = re.compile(r"\S+")

# Element names of trafilatura's XML and of plain HTML (for the fallback walk), by role.
_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6", "head", "title"}
_PARAGRAPHS = {
    "p",
    "quote",
    "blockquote",
    "code",
    "pre",
    "div",
    "section",
    "article",
    "main",
    "body",
    "dd",
    "dt",
    "figure",
    "figcaption",
    "caption",
    "address",
    "center",
}
_LISTS = {"list", "ul", "ol", "dl"}
_ITEMS = {"item", "li"}
_ROWS = {"row", "tr"}
_CELLS = {"cell", "td", "th"}
_BREAKS = {"lb", "br"}
# Where a Word file's pages begin, as the Word reader (littlebird/documents/word.py) marks them in its HTML: a
# private-use character, honoured only in a Word file, so that no web page's text can move a page.
PAGE_MARK = "\ue000"
_BLOCKS = _HEADINGS | _PARAGRAPHS | _LISTS | _ITEMS | _ROWS | _CELLS | {"table", "tbody", "thead", "tfoot"}
_SKIPPED = {
    "script",
    "style",
    "noscript",
    "template",
    "svg",
    "nav",
    "header",
    "footer",
    "aside",
    "form",
    "button",
    "input",
    "select",
    "textarea",
    "iframe",
    "object",
    "embed",
    "menu",
    "graphic",
    "img",
}
_MARKDOWN_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_MARKDOWN_ITEM = re.compile(r"^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$")
_MARKDOWN_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")


@dataclass(eq=False)  # identity equality: comparing the character maps elementwise is never meant
class Document:
    """A cleaned document, ready for questions.

    ``model_to_text[i]`` is the index in ``text`` of ``model_text[i]``, or -1 where the model
    text has a tag token or separator that is not in the shown text. ``table_rows`` holds, for every
    row of every table, ``(table, start, end)``: the table's number in document order and the row's
    range in the model text, from its ``<tr>`` or ``<p>`` token to the end of its last cell; ``ranked_units``
    the same for a table's ranked units (:mod:`littlebird.table_text`), which ``table_rows`` holds too.
    ``page_starts[k]`` is where page k + 1 of a PDF, or of a Word file that records its page breaks, starts in
    ``text`` (empty for documents without pages). A document read by OCR (a scan, an image) keeps each word OCR
    read as ``(start, end, box)``: its range in ``text`` and its box on its page, and ``page_images[k]``, page
    k + 1's image where OCR read it (:func:`littlebird.documents.page_image.answer_crop` shows an answer on it).
    """

    text: str
    model_text: str
    model_to_text: np.ndarray
    language: str
    title: str | None
    clean_seconds: float
    source: str = ""
    fetch_seconds: float = 0.0
    encoding: str = ""
    is_html: bool = False
    warnings: list[str] = field(default_factory=list)
    table_rows: list[tuple[int, int, int]] = field(default_factory=list)
    ranked_units: list[tuple[int, int, int]] = field(default_factory=list)
    page_starts: list[int] = field(default_factory=list)
    word_boxes: list[tuple[int, int, WordBox]] = field(default_factory=list)
    page_images: tuple[PageImage | None, ...] = ()

    def page_of(self, index: int) -> int | None:
        """The page (from 1) that character ``index`` of ``text`` is on; None for a document without pages."""
        return page_at(self.page_starts, index)


def page_at(page_starts: Sequence[int], index: int) -> int | None:
    """The page (from 1) that character ``index`` is on, given where each page starts; None without pages."""
    if not page_starts:
        return None
    return max(1, bisect.bisect_right(page_starts, index))


class _Writer:
    """Writes the shown text and the model text together, keeping the character map.

    HTML builds the shown text as it goes (``inline``, ``shown_only``); plain text starts from a
    fixed shown text and copies ranges of it into the model text (``mapped``).
    """

    def __init__(self, shown: str = "", page_mark: str | None = None):
        self.source = shown  # the fixed shown text of plain documents
        self.page_mark = page_mark  # a character the source puts where a page begins (a Word file's)
        self.page_pending = False
        self.page_breaks: list[int] = []  # where each marked page begins in the shown text
        self.shown: list[str] = [shown] if shown else []
        self.shown_len = len(shown)
        self.trailing_newlines = 0
        self.model: list[str] = []
        self.map: list[int] = []
        self.pending_space = False  # the document had whitespace between the last word and the next
        self.block_has_text = False
        self.last_word_end = -1
        self.tables = 0
        self.table_rows: list[tuple[int, int, int]] = []  # (table, model start, model end)
        self.ranked_units: list[tuple[int, int, int]] = []  # the same, of the table_rows that are ranked units

    def _model_only(self, piece: str) -> None:
        self.model.append(piece)
        self.map.extend([-1] * len(piece))

    def _model_separator(self) -> None:
        if self.model and not self.model[-1].endswith(" "):
            self._model_only(" ")

    def add_unit(self, role: str, unit: tuple[int, int, int]) -> None:
        """Record a table's unit ``(table, model start, model end)``: every one a row, a ranked one a ranked unit."""
        self.table_rows.append(unit)
        if role == "ranked":
            self.ranked_units.append(unit)

    def tag(self, token: str) -> None:
        """Start an element: a tag token in the model text, nothing in the shown text."""
        self._model_separator()
        self._model_only(token)
        self.block_has_text = False
        self.pending_space = False

    def label(self, piece: str) -> None:
        """Model-only text after a space (a table's header before its cell): maps to -1, like a tag token."""
        self._model_separator()
        self._model_only(piece)
        self.block_has_text = False
        self.pending_space = False

    def glue(self, piece: str) -> None:
        """Model-only punctuation right after the last character (a row's separators and full stop), where it
        does not repeat what is there."""
        last = self.model[-1][-1:] if self.model else ""
        if glue_needed(piece, last):
            self._model_only(piece)

    def mark(self) -> tuple[int, int]:
        """Where the model text stands now, for :meth:`replay`."""
        return len(self.model), len(self.map)

    def replay(self, start: tuple[int, int], end: tuple[int, int]) -> None:
        """Write again the model text written between two marks, mapped to the same shown characters (a cell
        that a rowspan carries into the rows below it)."""
        self._model_separator()
        self.model.extend(self.model[start[0] : end[0]])
        self.map.extend(self.map[start[1] : end[1]])

    def shown_only(self, piece: str) -> None:
        """Layout for the reader (line breaks, bullets, cell separators) that the model never sees."""
        self.shown.append(piece)
        self.shown_len += len(piece)
        body = piece.rstrip("\n")
        self.trailing_newlines = (self.trailing_newlines if not body else 0) + len(piece) - len(body)

    def ensure_break(self, newlines: int) -> None:
        """End the shown text with at least ``newlines`` line breaks (none at the very start)."""
        if self.shown_len and self.trailing_newlines < newlines:
            self.shown_only("\n" * (newlines - self.trailing_newlines))
        self.pending_space = False
        self.block_has_text = False

    def inline(self, fragment: str | None) -> None:
        """Add running text of the current element, collapsing whitespace as a browser does. A page mark in it
        is no text: the next word starts a page."""
        if not fragment:
            return
        if self.page_mark and self.page_mark in fragment:
            for number, piece in enumerate(fragment.split(self.page_mark)):
                self.page_pending = self.page_pending or number > 0
                self.inline(piece)
            return
        for match in re.finditer(r"(\s+)|(\S+)", fragment):
            if match.group(1):
                self.pending_space = self.block_has_text
                continue
            if self.pending_space and self.trailing_newlines == 0:
                self._shared(" ")
            elif self.pending_space or self.trailing_newlines or not self.block_has_text:
                self._model_separator()  # a line break or a new block: words must not run together
            self.pending_space = False
            if self.page_pending:
                self.page_breaks.append(self.shown_len)
                self.page_pending = False
            self._shared(match.group(2))
            self.block_has_text = True

    def _shared(self, piece: str) -> None:
        self.model.append(piece)
        self.map.extend(range(self.shown_len, self.shown_len + len(piece)))
        self.shown.append(piece)
        self.shown_len += len(piece)
        self.trailing_newlines = 0

    def mapped(self, start: int, end: int) -> None:
        """Copy the words of the fixed shown text in [start, end) into the model text.

        Whitespace between words becomes one space that maps to the first whitespace character,
        also across lines of one paragraph.
        """
        for match in _WORD.finditer(self.source, start, end):
            if self.block_has_text:
                self.model.append(" ")
                self.map.append(self.last_word_end)
            else:
                self._model_separator()
            self.model.append(match.group())
            self.map.extend(range(match.start(), match.end()))
            self.last_word_end = match.end()
            self.block_has_text = True

    def finish(self) -> tuple[str, str, np.ndarray]:
        text = "".join(self.shown)
        if not self.source:
            text = text.rstrip("\n")  # layout breaks after the last block; never mapped characters
        model_text = neutralize_special_strings("".join(self.model), self.map)
        return text, model_text, np.asarray(self.map, dtype=np.int64)


# --- HTML ----------------------------------------------------------------------------------------


def _local_name(element) -> str:
    tag = element.tag
    if not isinstance(tag, str):  # comments and processing instructions
        return ""
    return tag.rsplit("}", 1)[-1].lower()


def _heading_token(element, name: str) -> str:
    level = element.get("rend", "h2") if name == "head" else name
    return "<h1>" if level in ("h1", "title") else "<h2>"


class _HtmlWalker:
    """Walks trafilatura's XML (or a cleaned HTML tree) into a _Writer, tables in ``table_form``
    (:mod:`littlebird.table_text`)."""

    def __init__(self, writer: _Writer, table_form: str = DEFAULT_TABLE_FORM):
        self.w = writer
        self.list_depth = 0
        self.table_form = check_table_form(table_form)
        self.in_row = False  # inside a table row written as one unit: its blocks and lists flow inline
        self.last_heading = ""  # names the next table without a caption

    def walk(self, element) -> None:
        name = _local_name(element)
        if not name or name in _SKIPPED:
            return
        if name in _BREAKS:
            self.w.shown_only("\n")
            self.w.pending_space = self.w.block_has_text
            return
        if self.in_row and name in _HEADINGS | _PARAGRAPHS:
            self.w.ensure_break(1)  # a line of its own on the page, the row's words going on for the model
            self._children(element)
        elif name in _HEADINGS:
            self.w.ensure_break(2)
            self._block(element, _heading_token(element, name))
            self.w.ensure_break(1)
            self.last_heading = plain("".join(element.itertext()))
        elif name == "table":
            self._table(element)
        elif name in _LISTS:
            self._list(element, name)
        elif name in _PARAGRAPHS:
            self.w.ensure_break(2)
            self._block(element, "<p>" if self._has_direct_text(element) else None)
            self.w.ensure_break(2)
        else:  # inline formatting, links, spans: their text flows into the enclosing block
            self._children(element)

    @staticmethod
    def _has_direct_text(element) -> bool:
        """A container such as <div> gets a <p> only if it holds text itself or in inline children, not just blocks."""
        if _shows_text(element.text):
            return True
        for child in element:
            if _shows_text(child.tail):
                return True
            name = _local_name(child)
            if name and name not in _BLOCKS and name not in _SKIPPED and _HtmlWalker._has_direct_text(child):
                return True  # text inside a link or <b>, not inside a nested block
        return False

    def _block(self, element, token: str | None) -> None:
        if token:
            self.w.tag(token)
        self._children(element)

    def _children(self, element) -> None:
        self.w.inline(element.text)
        for child in element:
            self.walk(child)
            self.w.inline(child.tail)

    def _list(self, element, name: str) -> None:
        ordered = name == "ol" or element.get("rend") == "ol"
        if not self.in_row:
            self.w.tag("<ol>" if ordered else "<ul>")
        self.list_depth += 1
        number = 0
        for child in element:
            if _local_name(child) in _ITEMS:
                number += 1
                self.w.ensure_break(1)
                self.w.shown_only("  " * (self.list_depth - 1) + (f"{number}. " if ordered else "• "))
                if self.in_row:  # a list inside a cell: its items one after another, apart by commas
                    if number > 1:
                        self.w.glue(",")
                    self._children(child)
                else:
                    self._block(child, "<li>")
            else:
                self.walk(child)
        self.list_depth -= 1
        self.w.ensure_break(1)

    def _table(self, element) -> None:
        self.w.ensure_break(2)
        caption = ""
        for child in element:
            if _local_name(child) == "caption":  # the table's title, which questions name
                self._block(child, "<p>")
                self.w.ensure_break(1)
                caption = caption or plain("".join(child.itertext()))
        rows = [row for row in element.iter() if _local_name(row) in _ROWS and _nearest_table(row) is element]
        if self.table_form == "tags":
            self._tag_rows(rows)
        elif self.in_row or _is_layout_table(element, rows):
            self._layout_cells(rows)
        else:
            self._unit_rows(rows, caption or self.last_heading)
        self.w.ensure_break(2)

    def _tag_rows(self, rows) -> None:
        """The table as tag tokens between its cells: ``<table> <tr> <th> ... <td> ...``."""
        self.w.tag("<table>")
        table = self.w.tables
        self.w.tables += 1
        for row in rows:
            cells = [cell for cell in row if _local_name(cell) in _CELLS]
            if not any("".join(cell.itertext()).strip() for cell in cells):
                continue  # empty layout rows carry nothing a question could ask about
            self.w.ensure_break(1)
            self.w.tag("<tr>")
            row_start = len(self.w.map) - len("<tr>")
            first = True
            for cell in cells:
                is_head = _local_name(cell) == "th" or cell.get("role") == "head"
                if not "".join(cell.itertext()).strip():
                    continue
                if not first:
                    self.w.shown_only(" | ")
                first = False
                self._block(cell, "<th>" if is_head else "<td>")
            self.w.table_rows.append((table, row_start, len(self.w.map)))

    def _layout_cells(self, rows) -> None:
        """A table that lays a page out (or one inside a row): its cells as the blocks they hold."""
        for row in rows:
            for cell in row:
                if _local_name(cell) in _CELLS:
                    self.w.ensure_break(2)
                    self._block(cell, "<p>" if self._has_direct_text(cell) and not self.in_row else None)
                    self.w.ensure_break(2)

    def _unit_rows(self, rows, name: str) -> None:
        """Each data row as one unit of :func:`littlebird.table_text.table_plan`, its cells written where they
        stand on the page (a rowspan's repeats mapped to the cell above)."""
        cells = [[_table_cell(cell) for cell in row if _local_name(cell) in _CELLS] for row in rows]
        table = self.w.tables
        self.w.tables += 1
        written: dict[int, tuple[tuple[int, int], tuple[int, int]]] = {}  # id(cell) -> its model text's marks
        for role, pieces in table_plan(cells, self.table_form, name):
            if not pieces:
                continue
            self.w.ensure_break(1)
            row_start = None
            shown_cells = [0]
            for piece in pieces:
                self._piece(piece, written, shown_cells)
                if row_start is None:  # a row opens with its tag token (<p> or <tr>)
                    row_start = len(self.w.map) - len(piece.text)
            self.w.add_unit(role, (table, row_start, len(self.w.map)))

    def _piece(self, piece: Piece, written: dict, shown_cells: list[int]) -> None:
        if piece.kind == "tag":
            self.w.tag(piece.text)
        elif piece.kind == "label":
            self.w.label(piece.text)
        elif piece.kind == "glue":
            self.w.glue(piece.text)
        else:
            slot = piece.slot
            key = id(slot.cell)
            if not slot.first and key in written:
                self.w.replay(*written[key])
                return
            if shown_cells[0]:
                self.w.shown_only(" | ")
            shown_cells[0] += 1
            self.w._model_separator()
            self.w.block_has_text = False
            start = self.w.mark()
            self.in_row = self.table_form != "header-tags"
            try:
                self._children(slot.cell.content)
            finally:
                self.in_row = False
            written[key] = (start, self.w.mark())


def _table_cell(element) -> TableCell:
    def span(name: str) -> int:
        value = (element.get(name) or element.get(name[3:]) or "1").strip()  # trafilatura's XML says "span"
        return int(value) if value.isdigit() and 0 < int(value) <= 1000 else 1

    return TableCell(
        element,
        "".join(element.itertext()),
        _local_name(element) == "th" or element.get("role") == "head",
        span("colspan"),
        span("rowspan"),
    )


LAYOUT_CELL_CHARACTERS = 500  # a cell holding more text than this lays a page out: no data table has one


def _is_layout_table(element, rows) -> bool:
    """A table that lays a page out rather than holding data: marked so, a cell with a page's worth of text, or
    a row or two around another table. (A data table with a table in a cell, as an infobox with its kit, is
    data: the inner table's words flow into its row.)"""
    if (element.get("role") or "").lower() in ("presentation", "none"):
        return True
    cells = [cell for row in rows for cell in row if _local_name(cell) in _CELLS]
    if any(len("".join(cell.itertext()).strip()) > LAYOUT_CELL_CHARACTERS for cell in cells):
        return True
    nested = any(_local_name(inner) == "table" for cell in cells for inner in cell.iter() if inner is not cell)
    return nested and len(rows) <= 2


def _shows_text(fragment: str | None) -> bool:
    """Whether ``fragment`` holds a character to show (a page mark is none)."""
    return bool(fragment) and bool(fragment.replace(PAGE_MARK, "").strip())


def _nearest_table(element):
    parent = element.getparent()
    while parent is not None and _local_name(parent) != "table":
        parent = parent.getparent()
    return parent


# MediaWiki (Wikipedia and its kin) marks its structure well, and trafilatura's heuristics drop most of its
# section headings and some of its body, so such pages are walked directly, after removing what the
# page's own style sheets hide or mark as furniture.
_MEDIAWIKI = re.compile(r"""class\s*=\s*["'][^"']*(?<![\w-])(?:mw-[a-z][\w-]*|wikitable)(?![\w-])""", re.IGNORECASE)
_MEDIAWIKI_FURNITURE_CLASSES = frozenset(
    {
        "toc",
        "toctitle",
        "mw-editsection",
        "editsection",
        "reference",
        "mw-cite-backlink",
        "Z3988",  # contents, edit links, [1]
        "navbox",
        "vertical-navbox",
        "navbar",
        "navbox-styles",
        "sistersitebox",
        "portal",
        "authority-control",
        "metadata",
        "ambox",
        "mbox-small",
        "catlinks",
        "printfooter",
        "mw-jump-link",
        "mw-indicators",
        "persondata",
        "Template-Fact",
        "noexcerpt",
        "mw-empty-elt",
        "sortkey",
        "geo-nondefault",
        "geo-multi-punct",  # hidden by the site's style sheet
    }
)
_MEDIAWIKI_FURNITURE_IDS = frozenset(
    {
        "toc",
        "toctitle",
        "catlinks",
        "jump-to-nav",
        "siteSub",
        "contentSub",
        "mw-navigation",
        "footer",
        "mw-head",
        "mw-panel",
        "p-lang",
        "vector-toc",
    }
)
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
_SITE_SUFFIX = re.compile(r"\s+[-\u2013\u2014|]\s+[^-\u2013\u2014|]+$")  # " - Wikipedia", " - 위키백과, ..."


def _is_furniture(element) -> bool:
    """Hidden by its page, or one of MediaWiki's boxes, bars, markers and tables of contents."""
    if element.get("hidden") is not None or _HIDDEN_STYLE.search(element.get("style") or ""):
        return True
    if element.get("id") in _MEDIAWIKI_FURNITURE_IDS:
        return True
    return not _MEDIAWIKI_FURNITURE_CLASSES.isdisjoint((element.get("class") or "").split())


def _mediawiki_body(text: str):
    """The article body of a MediaWiki page (whole or ``action=render``) without its furniture, and its title."""
    try:
        root = lxml_html.document_fromstring(text)
    except (etree.ParserError, ValueError):
        return None, None
    heading = root.get_element_by_id("firstHeading", None)
    title = " ".join(heading.text_content().split()) if heading is not None else None
    if not title:
        page_title = " ".join((root.findtext(".//title") or "").split())
        title = _SITE_SUFFIX.sub("", page_title) or None
    body = next(iter(root.find_class("mw-parser-output")), None)
    for content_id in ("mw-content-text", "bodyContent", "mw-content", "content"):  # newest skins first
        if body is None:
            body = root.get_element_by_id(content_id, None)
    if body is None:
        body = root.find(".//body") if root.find(".//body") is not None else root
    for element in list(body.iter()):
        if isinstance(element.tag, str) and _is_furniture(element):
            element.drop_tree()  # keeps the element's tail: the words after a [1] marker stay
    return body, title


def _trafilatura_body(text: str):
    """The main content as trafilatura's XML tree and the page title, or (None, None)."""
    try:
        result = trafilatura.bare_extraction(
            text,
            include_tables=True,
            include_formatting=True,
            include_links=False,
            include_comments=False,
            include_images=False,
            with_metadata=True,
            deduplicate=False,
            favor_recall=True,
        )
    except Exception:  # trafilatura raises assorted errors on broken markup; the fallback handles it
        return None, None
    if result is None or result.body is None or not "".join(result.body.itertext()).strip():
        return None, getattr(result, "title", None)
    return result.body, result.title


_TABLE_TAG = re.compile(r"<table\b", re.IGNORECASE)


def _flattened_tables(text: str, body) -> bool:
    """Whether trafilatura gave a page that holds a table as one paragraph: its fallback for a page whose main
    content it finds too short, which runs every cell into one line and drops the headings; the plain tree of
    :func:`_fallback_body` keeps them."""
    children = [element for element in body if isinstance(element.tag, str)]
    return len(children) == 1 and _local_name(children[0]) == "p" and bool(_TABLE_TAG.search(text))


def _fallback_body(text: str):
    """A plain HTML tree without boilerplate elements, for fragments trafilatura rejects as too short."""
    try:
        root = lxml_html.document_fromstring(text)
    except (etree.ParserError, ValueError):
        return None, None
    title = root.findtext(".//title")
    for head in root.findall(".//head"):
        head.getparent().remove(head)
    return root.find(".//body") if root.find(".//body") is not None else root, (title.strip() if title else None)


def _write_html(text: str, *, whole: bool = False, table_form: str = DEFAULT_TABLE_FORM) -> tuple[_Writer, str | None]:
    if whole:  # HTML that is all content (a Word document's): no page furniture to find, so every block stays
        body, title = None, None
    else:
        body, title = _mediawiki_body(text) if _MEDIAWIKI.search(text) else _trafilatura_body(text)
        if body is not None and _flattened_tables(text, body):
            body = None
    if body is None:
        body, fallback_title = _fallback_body(text)
        title = title or fallback_title
    writer = _Writer(page_mark=PAGE_MARK if whole else None)
    if body is None:
        return writer, title
    walker = _HtmlWalker(writer, table_form)
    first_heading = next((el for el in body.iter() if _local_name(el) in _HEADINGS), None)
    if title and (first_heading is None or "".join(first_heading.itertext()).strip() != title.strip()):
        # The page's title often lives outside the extracted body; questions ask about it too.
        writer.tag("<h1>")
        writer.inline(title)
        writer.ensure_break(2)
    walker.walk(body)
    return writer, title


# --- plain text and Markdown ---------------------------------------------------------------------


def _write_plain(text: str, table_form: str = DEFAULT_TABLE_FORM) -> _Writer:
    """The shown text is the file itself; the model text marks headings, list items, tables, paragraphs."""
    writer = _Writer(text)
    check_table_form(table_form)
    list_kind = None
    in_table = False
    in_paragraph = False
    table: list[list[TableCell]] = []  # a Markdown table's rows, written when it ends (forms other than tags)
    last_heading = ""
    offset = 0
    lines = text.split("\n")
    for index, line in enumerate(lines):
        start, end = offset, offset + len(line)
        offset = end + 1
        stripped = line.strip()
        is_table_line = stripped.startswith("|") and stripped.endswith("|") and len(stripped) > 1
        if table and not is_table_line:
            _write_plain_table(writer, table, table_form, last_heading)
            table = []
        if not stripped:
            in_paragraph, in_table, list_kind = False, False, None
            continue
        heading = _MARKDOWN_HEADING.match(line)
        item = _MARKDOWN_ITEM.match(line)
        if heading:
            in_paragraph, in_table, list_kind = False, False, None
            writer.tag("<h1>" if len(heading.group(1)) == 1 else "<h2>")
            writer.mapped(start + heading.start(2), start + heading.end(2))
            last_heading = plain(heading.group(2))
        elif is_table_line:
            if _MARKDOWN_TABLE_SEPARATOR.match(stripped):
                continue
            in_paragraph, list_kind = False, None
            next_line = lines[index + 1] if index + 1 < len(lines) else ""
            is_head = bool(_MARKDOWN_TABLE_SEPARATOR.match(next_line.strip()))
            cell_start = start + line.index("|") + 1
            cells = [
                (cell_start + m.start(), cell_start + m.end())
                for m in re.finditer(r"[^|]+", line[line.index("|") + 1 : line.rindex("|")])
            ]
            if table_form != "tags":
                table.append([TableCell((a, b), text[a:b], is_head) for a, b in cells])
                continue
            if not in_table:
                writer.tag("<table>")
                in_table = True
            writer.tag("<tr>")
            for cell in cells:
                writer.tag("<th>" if is_head else "<td>")
                writer.mapped(*cell)
        elif item:
            kind = "<ul>" if item.group(2)[0] in "-*+" else "<ol>"
            if list_kind != kind:
                writer.tag(kind)
                list_kind, in_paragraph, in_table = kind, False, False
            writer.tag("<li>")
            writer.mapped(start + item.start(3), start + item.end(3))
        else:
            if not in_paragraph or in_table or list_kind:
                writer.tag("<p>")
                in_paragraph, in_table, list_kind = True, False, None
            writer.mapped(start, end)
    if table:
        _write_plain_table(writer, table, table_form, last_heading)
    return writer


def _write_plain_table(writer: _Writer, rows: list[list[TableCell]], table_form: str, name: str) -> None:
    """A Markdown table's rows in ``table_form``, each cell's words copied from the file."""
    number = writer.tables
    writer.tables += 1
    for role, pieces in table_plan(rows, table_form, name):
        if not pieces:
            continue
        row_start = len(writer.map) + (1 if writer.model else 0)  # after the space before the row's tag
        for piece in pieces:
            if piece.kind == "tag":
                writer.tag(piece.text)
            elif piece.kind == "label":
                writer.label(piece.text)
            elif piece.kind == "glue":
                writer.glue(piece.text)
            else:
                writer.block_has_text = False
                writer.mapped(*piece.slot.cell.content)
        writer.add_unit(role, (number, row_start, len(writer.map)))


# --- documents with pages (PDF) ----------------------------------------------------------------


def _write_text_table(writer: _Writer, rows: tuple[tuple[str, ...], ...], table_form: str, name: str) -> None:
    """A table whose cells arrive as text (a PDF's): each row on a line of the shown text, its cells apart by
    " | ", and in the model text as ``table_form`` writes it (:func:`littlebird.table_text.table_plan`)."""
    number = writer.tables
    writer.tables += 1
    cells = [[TableCell(text, text) for text in row] for row in rows]
    if table_form == "tags":
        writer.tag("<table>")
        plans = [
            (
                "row",
                [Piece("tag", "<tr>")]
                + [
                    piece
                    for cell in row
                    if cell.text.strip()
                    for piece in (Piece("tag", "<td>"), Piece("cell", slot=Slot(cell, 0, 1, True)))
                ],
            )
            for row in cells
        ]
    else:
        plans = table_plan(cells, table_form, name)
    written: dict[int, tuple[tuple[int, int], tuple[int, int]]] = {}  # id(cell) -> its model text's marks
    for role, pieces in plans:
        if not pieces:
            continue
        writer.ensure_break(1)
        row_start, shown_cells = None, 0
        for piece in pieces:
            if piece.kind == "tag":
                writer.tag(piece.text)
            elif piece.kind == "label":
                writer.label(piece.text)
            elif piece.kind == "glue":
                writer.glue(piece.text)
            elif not piece.slot.first and id(piece.slot.cell) in written:
                writer.replay(*written[id(piece.slot.cell)])
            else:
                if shown_cells:
                    writer.shown_only(" | ")
                shown_cells += 1
                writer._model_separator()
                writer.block_has_text = False
                start = writer.mark()
                writer.inline(piece.slot.cell.content)
                written[id(piece.slot.cell)] = (start, writer.mark())
            if row_start is None:  # a row opens with its tag token (<p> or <tr>)
                row_start = len(writer.map) - len(piece.text)
        writer.add_unit(role, (number, row_start, len(writer.map)))


def _write_blocks(
    blocks: tuple[TextBlock, ...], n_pages: int, table_form: str = DEFAULT_TABLE_FORM
) -> tuple[_Writer, list[int]]:
    """Headings, paragraphs and tables as the HTML walker writes them, and where each of the ``n_pages`` pages
    starts in the shown text (a page without text starts where the next does)."""
    writer = _Writer()
    starts: list[int | None] = [None] * n_pages
    last_heading = ""
    for block in blocks:
        writer.ensure_break(2)
        if block.kind == "<table>":
            page = block.pieces[0][1]
            if starts[page - 1] is None:
                starts[page - 1] = writer.shown_len
            _write_text_table(writer, block.rows, table_form, last_heading)
            continue
        if block.kind != "<p>":
            last_heading = plain("".join(text for text, _ in block.pieces))
        writer.tag(block.kind)
        for text, page in block.pieces:
            if starts[page - 1] is None:
                starts[page - 1] = writer.shown_len + (len(text) - len(text.lstrip()) if writer.block_has_text else 0)
            writer.inline(text)
        if block.kind != "<p>":
            writer.ensure_break(1)
    page_starts, following = [0] * n_pages, None
    for page in range(n_pages - 1, -1, -1):  # from the end: a page without text takes the next page's start
        following = starts[page] if starts[page] is not None else following
        page_starts[page] = following if following is not None else writer.shown_len
    page_starts[0] = 0
    return writer, page_starts


def _located_words(text: str, boxes: tuple[WordBox, ...]) -> list[tuple[int, int, WordBox]]:
    """Each OCR word's range in the shown text, found in order: the writer copies every word as it is and only
    changes the white space between words, so each word is among the next few characters. A word not found
    there (none is expected) is left out rather than searched for further on."""
    located, cursor = [], 0
    for box in boxes:
        start = text.find(box.text, cursor, cursor + len(box.text) + 16)
        if start >= 0:
            cursor = start + len(box.text)
            located.append((start, cursor, box))
    return located


# --- public --------------------------------------------------------------------------------------


def clean_document(raw: RawDocument, *, table_form: str = DEFAULT_TABLE_FORM) -> Document:
    """Clean a fetched, uploaded or pasted document into a Document.

    HTML goes through trafilatura (main content only, tables kept); text and Markdown keep their
    exact characters, with headings, lists, tables and paragraphs marked for the model. Tables reach the
    model in ``table_form`` (:mod:`littlebird.table_text`): by default each row a sentence of its cells after
    their headers. Raises DocumentError when no readable text is left.
    """
    start = time.perf_counter()
    source_text = raw.text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    page_starts: list[int] = []
    if raw.blocks is not None:
        (writer, page_starts), title = _write_blocks(raw.blocks, raw.n_pages, table_form), raw.title
    elif raw.is_html:
        writer, title = _write_html(source_text, whole=raw.whole, table_form=table_form)
        if writer.page_breaks:  # a Word file with page breaks: each page starts where its first word does
            page_starts = [0] + sorted({b for b in writer.page_breaks if b > 0})
    else:
        writer, title = _write_plain(source_text, table_form), None
    text, model_text, model_to_text = writer.finish()
    if not (model_to_text >= 0).any():
        raise DocumentError("No readable text was found in this document. Please try another page or file.")
    language = detect_language(text)
    warnings = []
    if language == "unknown":
        warnings.append("The document's language could not be recognised; the model reads Korean and English best.")
    return Document(
        text=text,
        model_text=model_text,
        model_to_text=model_to_text,
        language=language,
        title=(title.strip() or None) if title else None,
        clean_seconds=time.perf_counter() - start,
        source=raw.source,
        fetch_seconds=raw.fetch_seconds,
        encoding=raw.encoding,
        is_html=raw.is_html,
        warnings=warnings,
        table_rows=writer.table_rows,
        ranked_units=writer.ranked_units,
        page_starts=page_starts,
        word_boxes=_located_words(text, raw.boxes) if raw.boxes else [],
        page_images=raw.page_images,
    )
