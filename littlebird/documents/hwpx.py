"""Hangul (.hwpx) bytes -> RawDocument: the document's own XML (OWPML, KS X 6101) read with lxml and written as
plain HTML, which then goes through the same cleaner as a Word file's.

A .hwpx is a ZIP archive: ``Contents/header.xml`` holds the styles, ``Contents/section0.xml``, ``section1.xml``,
... the text, each a list of paragraphs (``hp:p``) whose runs (``hp:run``) hold text (``hp:t``), tables
(``hp:tbl``, each cell with its spans) and shapes with text boxes. Headings are the paragraphs in an outline or
title style (개요 1 / Outline 1 ..., 제목 / Title), and, since most Hangul documents set their headings by size
alone, the short ones set 15% or more larger than the body text, as in a PDF. Pages: each section starts one,
and so does a paragraph the author put on a new page (``pageBreak="1"``); between them, Hangul records where
its last layout began each page, as the line whose place on the page (``hp:lineseg vertpos``) goes back to the
top. Each becomes PAGE_MARK, which the cleaner reads as the start of a page.
"""

from __future__ import annotations

import functools
import re
import zipfile
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from lxml import etree
from lxml import html as lxml_html

from littlebird.documents.archive import ARCHIVE_ERRORS, open_archive
from littlebird.documents.clean import PAGE_MARK
from littlebird.documents.decode import RawDocument
from littlebird.documents.errors import DocumentError
from littlebird.documents.limits import MAX_HTML_CHARACTERS

MAX_XML_BYTES = 50_000_000  # the sections' XML, all together: about 30 KB a page, so some 1,500 pages
MAX_PARAGRAPHS = 50_000  # cells' and text boxes' too: some 45 a page, so 1,100 pages; each takes tens of µs
HEADING_SCALE = 1.15  # a short paragraph set this much larger than the body text is a heading (as in a PDF)
MAX_HEADING_CHARACTERS = 150  # a longer paragraph is never a heading, whatever its style or size
_SECTION = re.compile(r"Contents/section(\d+)\.xml")
_HEADING_STYLE = re.compile(r"(?:개요|outline|heading|제목)\s*(\d)", re.IGNORECASE)
_TITLE_STYLE = re.compile(r"(?:제목|title)", re.IGNORECASE)
_SUBTITLE_STYLE = re.compile(r"(?:부제목|subtitle)", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?。]\s*$")
# Parts of a paragraph that take room in its text as Hangul counts it (``hp:lineseg textpos``): a character is 1,
# a control or an object placed in the text (a table, a shape, a section's settings) 8, and so is a tab.
_OBJECT_WIDTH = 8
_INLINE_TEXT = {
    "tab": ("\t", _OBJECT_WIDTH),
    "lineBreak": ("\n", 1),
    "fwSpace": (" ", 1),
    "nbSpace": (" ", 1),
    "hyphen": ("-", 1),
}
# Run children whose text is not the body's: headers, footers, notes, memos and fields' settings live in hp:ctrl.
_NOT_BODY = {"ctrl", "secPr", "equation", "script"}
_SHAPE_TEXT = {"drawText", "caption"}  # a text box in a shape, a picture's or a shape's caption
_SAFE_XML = {
    "resolve_entities": False,
    "no_network": True,
    "huge_tree": False,
    "remove_comments": True,
    "remove_pis": True,
}


def _damaged(source: str) -> str:
    return f"{source} is not a Hangul document, or it is damaged"


def read_hwpx(data: bytes, *, source: str) -> RawDocument:
    """The .hwpx file ``data`` as HTML for :func:`littlebird.documents.clean.clean_document`.

    Raises DocumentError, with a sentence for the user, for a file that is not a Hangul document or is damaged,
    one protected with a password, a zip bomb (:func:`littlebird.documents.archive.open_archive`), one with more
    to read than a document has (:data:`MAX_XML_BYTES` of XML, :data:`MAX_PARAGRAPHS` paragraphs, or
    ``MAX_HTML_CHARACTERS`` characters), and one without text.
    """
    again = "Please save it again in Hangul and upload that."
    archive = open_archive(data, source=source, not_archive=f"{_damaged(source)}: it is not a .hwpx archive. {again}")
    names = archive.namelist()
    if _encrypted(archive, names):
        raise DocumentError(
            f"{source} is protected with a password, so its text cannot be read. Please save it "
            "without a password and upload that."
        )
    numbered = {int(match.group(1)): name for name in names if (match := _SECTION.fullmatch(name))}
    sections = [numbered[number] for number in sorted(numbered)]
    if not sections:
        raise DocumentError(f"{source} is not a Hangul document: it has no Contents/section0.xml. {again}")
    if sum(archive.getinfo(name).file_size for name in sections) > MAX_XML_BYTES:
        raise DocumentError(
            f"{source} holds more than {MAX_XML_BYTES / 1e6:g} MB of text, more than this app reads. "
            "Please upload the part you need."
        )
    try:
        styles = _Styles.read(archive, names)
        writer = _HtmlWriter(styles, source)
        for number, name in enumerate(sections):
            writer.write_section(_top_paragraphs(archive, name), new_page=number > 0)
    except DocumentError:
        raise
    except (etree.XMLSyntaxError, *ARCHIVE_ERRORS):  # a damaged part, or XML that is not well formed
        raise DocumentError(f"{_damaged(source)}: its text cannot be read. {again}") from None
    if not writer.has_text:
        raise DocumentError(
            f"No text was found in {source}: it is empty, or holds only pictures. Please upload a document with text."
        )
    writer.set_headings()
    return RawDocument(
        text=lxml_html.tostring(writer.html, encoding="unicode"),
        is_html=True,
        source=source,
        encoding="hwpx",
        whole=True,
    )


def _top_paragraphs(archive: zipfile.ZipFile, name: str) -> Iterator:
    """A section's own paragraphs (``hp:p`` under ``hs:sec``), each with what it holds, as parsing reaches its end;
    each is freed once read, so a long section never stands whole in memory."""
    with archive.open(name) as stream:
        for _, element in etree.iterparse(stream, events=("end",), tag="{*}p", **_SAFE_XML):
            parent = element.getparent()
            if parent is None or parent.getparent() is not None:  # a cell's or a text box's: read with its own
                continue
            yield element
            element.clear()
            while element.getprevious() is not None:
                del parent[0]


def _encrypted(archive: zipfile.ZipFile, names: list[str]) -> bool:
    """Whether the manifest says parts are encrypted: Hangul saves a document with a password as an OpenDocument
    package does, each encrypted part's entry holding an ``encryption-data`` element."""
    if "META-INF/manifest.xml" not in names:
        return False
    try:
        return b"encryption-data" in archive.read("META-INF/manifest.xml")
    except ARCHIVE_ERRORS:
        return False


def _local(element) -> str:
    """An element's name without its namespace ("p" for hp:p); "" for a comment."""
    tag = element.tag
    return _local_name(tag) if isinstance(tag, str) else ""


@functools.lru_cache(maxsize=1024)
def _local_name(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _children(element, name: str) -> list:
    """The children called ``name`` in any namespace (Hangul's own, or another version's)."""
    return list(element.iterchildren("{*}" + name))


def _paragraphs_in(element) -> list:
    """The paragraphs of a cell, a text box or a caption: those of its hp:subList."""
    return [paragraph for inner in _children(element, "subList") or [element] for paragraph in _children(inner, "p")]


@dataclass
class _Styles:
    """What header.xml says of paragraphs: the heading level (1 for 개요 1, ...) of each paragraph shape and
    style that makes one, and each character shape's size."""

    shape_levels: dict[str, int] = field(default_factory=dict)  # paraPr id -> level
    style_levels: dict[str, int] = field(default_factory=dict)  # style id -> level
    sizes: dict[str, int] = field(default_factory=dict)  # charPr id -> height (1/100 pt)

    @classmethod
    def read(cls, archive: zipfile.ZipFile, names: list[str]) -> "_Styles":
        styles = cls()
        if "Contents/header.xml" not in names:
            return styles
        for element in etree.fromstring(archive.read("Contents/header.xml"), etree.XMLParser(**_SAFE_XML)).iter():
            name = _local(element)
            if name == "paraPr":
                # an outline level of 8 to 10 sits in an hp:switch, with a plain level for older readers
                heading = next((node for node in element.iter() if _local(node) == "heading"), None)
                if heading is not None and heading.get("type") == "OUTLINE" and heading.get("level", "").isdigit():
                    styles.shape_levels[element.get("id")] = int(heading.get("level")) + 1
            elif name == "style" and element.get("type", "PARA") == "PARA":
                level = _style_level(element.get("name") or "", element.get("engName") or "")
                if level:
                    styles.style_levels[element.get("id")] = level
            elif name == "charPr" and (element.get("height") or "").isdigit():
                styles.sizes[element.get("id")] = int(element.get("height"))
        return styles

    def level(self, paragraph) -> int | None:
        """The heading level a paragraph's shape or style gives it, or None."""
        return self.shape_levels.get(paragraph.get("paraPrIDRef")) or self.style_levels.get(paragraph.get("styleIDRef"))


def _style_level(*names: str) -> int | None:
    """The heading level a style's Korean or English name gives: 개요 2 / Outline 2 -> 2, 제목 / Title -> 1."""
    for name in names:
        name = name.strip()
        if match := _HEADING_STYLE.fullmatch(name):
            return int(match.group(1))
        if _TITLE_STYLE.fullmatch(name):
            return 1
        if _SUBTITLE_STYLE.fullmatch(name):
            return 2
    return None


def _runs_text(paragraph, styles: _Styles):
    """(text, size) of each run of a paragraph's own text."""
    for run in _children(paragraph, "run"):
        size = styles.sizes.get(run.get("charPrIDRef"))
        for child in _children(run, "t"):
            yield "".join(child.itertext()), size


def _heading_text(text: str) -> bool:
    """Whether a paragraph's text may be a heading: short, and not ending as a sentence does."""
    text = " ".join(text.split())
    return bool(text) and len(text) <= MAX_HEADING_CHARACTERS and not _SENTENCE_END.search(text)


@dataclass
class _Piece:
    """A paragraph's text between its objects (``text``, at ``position`` as Hangul counts), a table, or the
    paragraphs of a text box or caption."""

    position: int
    text: str | None = None
    table: object = None
    paragraphs: list | None = None


@dataclass
class _Block:
    """A paragraph of the body as written, until the body's size is known: its element, the heading level its
    style gives, the size its text is set in (None where a run's is unknown), and whether it may be a heading."""

    element: object
    level: int | None
    size: int | None
    short: bool


class _HtmlWriter:
    """Writes sections into one HTML body: headings and paragraphs, tables with their spans, page marks."""

    def __init__(self, styles: _Styles, source: str):
        self.styles, self.source = styles, source
        self.paragraphs = self.characters = 0  # read so far, against MAX_PARAGRAPHS and MAX_HTML_CHARACTERS
        self.sizes = Counter()  # characters of the body's own text by the size they are set in
        self.blocks: list[_Block] = []
        self.html = etree.Element("html")
        self.body = etree.SubElement(self.html, "body")
        self.has_text = False
        self.last_top: int | None = None  # the last line's place on its page (hp:lineseg vertpos)
        self.columns, self.column = 1, 0

    def write_section(self, paragraphs: Iterable, *, new_page: bool) -> None:
        """A section's own paragraphs; every section after the first starts a page."""
        self.last_top, self.columns, self.column = None, 1, 0
        for number, paragraph in enumerate(paragraphs):
            self._write_paragraph(paragraph, self.body, page_at_start=new_page and number == 0, on_page=True)

    # --- pages ---

    def _page_starts(self, paragraph, page_at_start: bool) -> list[int]:
        """Where in the paragraph (positions as Hangul counts them) a page begins: at 0 for a page break or a new
        section, and wherever a line goes back up the page after the last; in columns, a page begins when the
        last column is full."""
        for child in paragraph.iter():
            if _local(child) == "colPr" and (child.get("colCount") or "").isdigit():
                self.columns = max(1, int(child.get("colCount")))
        starts = [0] if page_at_start or paragraph.get("pageBreak") == "1" else []
        if starts:
            self.column = 0
        lines = [line for array in _children(paragraph, "linesegarray") for line in _children(array, "lineseg")]
        for line in lines:
            top, position = line.get("vertpos", ""), line.get("textpos", "0")
            if not top.lstrip("-").isdigit():
                continue
            if self.last_top is not None and int(top) < self.last_top and not (starts and position == "0"):
                self.column += 1
                if self.column >= self.columns:
                    self.column = 0
                    starts.append(int(position) if position.isdigit() else 0)
            self.last_top = int(top)
        return starts

    # --- paragraphs ---

    def _pieces(self, paragraph) -> list[_Piece]:
        """The paragraph's text, tables and text boxes in order, with their places in its text."""
        pieces: list[_Piece] = []
        position = 0
        for run in _children(paragraph, "run"):
            for child in run:
                name = _local(child)
                if name == "t":
                    position = self._text(child, pieces, position)
                    continue
                if name == "tbl":
                    pieces.append(_Piece(position, table=child))
                elif name not in _NOT_BODY:
                    pieces += [_Piece(position, paragraphs=_paragraphs_in(box)) for box in _boxes(child)]
                position += _OBJECT_WIDTH
        return pieces

    @staticmethod
    def _text(element, pieces: list[_Piece], position: int) -> int:
        parts = [element.text or ""]
        width = len(element.text or "")
        for child in element:
            text, size = _INLINE_TEXT.get(_local(child), ("", 0))
            if not text and _local(child) not in _INLINE_TEXT:
                text = "".join(child.itertext())  # marks (highlights, tracked changes) keep their text
                size = len(text)
            parts += [text, child.tail or ""]
            width += size + len(child.tail or "")
        if pieces and pieces[-1].text is not None:
            pieces[-1].text += "".join(parts)
        else:
            pieces.append(_Piece(position, text="".join(parts)))
        return position + width

    def _write_paragraph(
        self, paragraph, parent, *, page_at_start: bool = False, in_cell: bool = False, on_page: bool = False
    ) -> None:
        """A paragraph into ``parent``: the body (``on_page`` for a section's own paragraphs, whose lines record
        their places on the page; a text box's record theirs in the box), or a cell, whose paragraphs are lines."""
        self.paragraphs += 1
        if self.paragraphs > MAX_PARAGRAPHS:
            raise DocumentError(
                f"{self.source} has more than {MAX_PARAGRAPHS:,} paragraphs, more than this app reads. "
                "Please upload the part you need."
            )
        pieces = self._pieces(paragraph)
        if on_page:
            for start in self._page_starts(paragraph, page_at_start):
                _mark_page(pieces, start)
        block = None
        if not in_cell:
            runs = list(_runs_text(paragraph, self.styles))
            sizes = [size for text, size in runs if text.strip()]
            if on_page:
                for text, size in runs:
                    self.sizes[size] += len(text.strip())
            block = _Block(
                None,
                self.styles.level(paragraph),
                min(sizes) if sizes and None not in sizes else None,
                _heading_text("".join(text for text, _ in runs)),
            )
        for piece in pieces:
            if piece.text is not None:
                element = self._write_text(piece.text, parent, in_cell)
                if block is not None and element is not None:
                    self.blocks.append(_Block(element, block.level, block.size, block.short))
            elif piece.table is not None:
                parent.append(self._table(piece.table))
            else:
                for inner in piece.paragraphs:
                    self._write_paragraph(inner, parent, in_cell=in_cell)

    def set_headings(self) -> None:
        """Make headings of the blocks that are: by their style (h1 to h6), or, since most Hangul documents set
        their headings by size alone, short ones set at least HEADING_SCALE larger than most of the body text (h2,
        and h1 at the largest such size where there are several, as in a PDF)."""
        body = self.sizes.most_common(1)[0][0] if self.sizes else None
        larger = {
            block.size
            for block in self.blocks
            if block.short and body and block.size and block.size >= body * HEADING_SCALE
        }
        top = max(larger) if len(larger) > 1 else None
        for block in self.blocks:
            if block.short and block.level:
                block.element.tag = f"h{min(block.level, 6)}"
            elif block.short and block.size in larger:
                block.element.tag = "h1" if block.size == top else "h2"

    def _write_text(self, text: str, parent, in_cell: bool):
        """Text into a new <p> of ``parent`` (returned), or, in a cell, as its next line; line breaks as <br>."""
        if not text.replace(PAGE_MARK, "").strip():
            if PAGE_MARK not in text:
                return None
        else:
            self.has_text = True
        self.characters += len(text)
        if self.characters > MAX_HTML_CHARACTERS:
            raise DocumentError(
                f"{self.source} holds more than {MAX_HTML_CHARACTERS:,} characters of text, more than "
                "this app reads. Please upload the part you need."
            )
        if in_cell:  # a cell's paragraphs are its lines
            if parent.text or len(parent):
                etree.SubElement(parent, "br")
            block = parent
        else:
            block = etree.SubElement(parent, "p")
        for number, line in enumerate(text.split("\n")):
            if number:
                etree.SubElement(block, "br")
            _append_text(block, line)
        return None if in_cell else block

    def _table(self, table) -> etree._Element:
        """A table as HTML: rows of cells in column order, each with its spans; title cells as <th>."""
        element = etree.Element("table")
        caption = next(iter(_children(table, "caption")), None)
        if caption is not None:
            cell = etree.SubElement(element, "caption")
            for paragraph in _paragraphs_in(caption):
                self._write_paragraph(paragraph, cell, in_cell=True)
        for row in _children(table, "tr"):
            tr = etree.SubElement(element, "tr")
            for cell in sorted(_children(row, "tc"), key=_column):
                td = etree.SubElement(tr, "th" if cell.get("header") == "1" else "td")
                span = next(iter(_children(cell, "cellSpan")), None)
                for name, attribute in (("colSpan", "colspan"), ("rowSpan", "rowspan")):
                    value = span.get(name, "1") if span is not None else "1"
                    if value.isdigit() and int(value) > 1:
                        td.set(attribute, value)
                for paragraph in _paragraphs_in(cell):
                    self._write_paragraph(paragraph, td, in_cell=True)
        return element


def _column(cell) -> int:
    """A cell's column (its hp:cellAddr), for cells a file lists out of order."""
    address = next(iter(_children(cell, "cellAddr")), None)
    value = address.get("colAddr", "") if address is not None else ""
    return int(value) if value.isdigit() else 0


def _boxes(element) -> list:
    """The text boxes and captions in an object placed in a paragraph (a shape, a group of shapes, a picture),
    outermost only; of an hp:switch (one object written for two kinds of reader), its first branch."""
    name = _local(element)
    if name in _SHAPE_TEXT:
        return [element]
    if name in _NOT_BODY or name == "tbl":
        return []
    if name == "switch":
        branches = _children(element, "case") or _children(element, "default")
        return [box for child in branches[:1] for inner in child for box in _boxes(inner)]
    return [box for child in element for box in _boxes(child)]


def _mark_page(pieces: list[_Piece], position: int) -> None:
    """Put PAGE_MARK where a page begins: before the first word at or after ``position`` (a line that begins in a
    word's middle has that word on the page before)."""
    for index, piece in enumerate(pieces):
        if piece.text is None:
            if piece.position >= position:
                pieces.insert(index, _Piece(piece.position, text=PAGE_MARK))
                return
            continue
        offset = max(0, position - piece.position)
        if offset > len(piece.text):
            continue
        text = piece.text
        if 0 < offset < len(text) and not text[offset - 1].isspace() and not text[offset].isspace():
            match = re.compile(r"\s+").search(text, offset)
            offset = match.end() if match else len(text)
        piece.text = text[:offset] + PAGE_MARK + text[offset:]
        return
    pieces.append(_Piece(position, text=PAGE_MARK))


def _append_text(element, text: str) -> None:
    """Add ``text`` at the end of ``element``'s content."""
    if not text:
        return
    if len(element):
        element[-1].tail = (element[-1].tail or "") + text
    else:
        element.text = (element.text or "") + text
