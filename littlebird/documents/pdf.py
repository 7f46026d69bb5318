"""PDF bytes -> RawDocument: paragraphs and headings in reading order, each piece of text with its page.

PDFium (through pypdfium2, in a child process under a memory and time limit: :mod:`littlebird.documents.pdf_text`)
gives each page's text lines with their font size and place. Here they become a document a reader would
recognise: lines that repeat at the top or bottom of most pages (running heads, footers, page numbers) go,
lines join into paragraphs (a hyphen that only split a word at a line's end goes too), a paragraph cut by a
page break continues on the next page, and lines set larger than the body text, or named by the PDF's
outline, become headings. A page without a text layer (a scan) is rendered by PDFium in another child process
(:mod:`littlebird.documents.pdf_render`, at most :data:`RENDER_DPI` and
:data:`~littlebird.documents.ocr.MAX_OCR_PIXELS`) and read by OCR (:mod:`littlebird.documents.ocr`); the pages with
text keep it as it is. :func:`littlebird.documents.clean.clean_document` writes the blocks with the offsets where
each page starts in the shown text (``Document.page_starts``).
"""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from littlebird.documents import formats
from littlebird.documents.child import run_bounded
from littlebird.documents.decode import RawDocument, TextBlock
from littlebird.documents.errors import DocumentError
from littlebird.documents.ocr import (
    MAX_OCR_PIXELS,
    MAX_SCAN_PAGES,
    OCR_SECONDS,
    Picture,
    ScannedPage,
    read_pictures,
    tesseract_command,
)

MAX_PDF_PAGES = 2000
PDF_SECONDS = 20.0  # reading the text layer; a page of text takes a few milliseconds
PDF_MEMORY_BYTES = 1_500_000_000  # the reader's address space: PDFium inflates streams without a bound of its own
RENDER_DPI = 300  # a scanned page is rendered for OCR at this resolution, or lower where it is large
_WORKER = Path(__file__).with_name("pdf_text.py")
_RENDERER = Path(__file__).with_name("pdf_render.py")

_PAGE_NUMBER = re.compile(
    r"^[\s\-–—(\[]*((page|p\.|페이지)\s*)?\d{1,4}(\s*(/|of|쪽|페이지)\s*\d{0,4})?[\s\-–—)\]쪽]*$", re.IGNORECASE
)
_SENTENCE_END = re.compile(r"[.!?。:;\"'”’)\]]$|[다요함음됨임]\.?$")
_SOFT_HYPHENS = ("\xad", "\x02")  # PDFium marks a hyphen it knows split a word with \x02


@dataclass
class Line:
    """One text line of a page as :mod:`littlebird.documents.pdf_text` reports it (places in points, y upwards)."""

    text: str
    size: float | None
    top: float | None
    bottom: float | None
    left: float | None
    right: float | None
    page: int  # from 1
    cells: list[list] | None = None  # a table row's cells: [start, end, left, right] of each in ``text``


def read_pdf_lines(
    data: bytes, *, max_pages: int = MAX_PDF_PAGES, seconds: float = PDF_SECONDS, memory_bytes: int = PDF_MEMORY_BYTES
) -> dict:
    """Run :mod:`littlebird.documents.pdf_text` on ``data`` in a child process, bounded in memory and time.

    Returns its JSON object; raises DocumentError, in words for the user, for a PDF that takes longer than
    ``seconds``, needs more than ``memory_bytes``, or crashes PDFium.
    """
    try:
        done = run_bounded(
            [sys.executable, str(_WORKER), str(max_pages)],
            data,
            seconds=seconds,
            memory_bytes=memory_bytes,
            environment={"PYTHONIOENCODING": "utf-8"},
        )
    except subprocess.TimeoutExpired:
        raise DocumentError(
            f"Reading this PDF's text took longer than {seconds:g} seconds, the most this app spends "
            "on it. Please upload the pages you need as a smaller PDF."
        ) from None
    if done.returncode != 0:
        if b"MemoryError" in done.stderr or done.returncode < 0:
            raise DocumentError(
                f"Reading this PDF needs more than {memory_bytes / 1e9:g} GB of memory (its compressed "
                "parts inflate to far more than the file), so it was not read. Please upload the "
                "pages you need as a smaller PDF."
            )
        raise DocumentError(
            "This PDF could not be read: it is damaged. Please save or export it again and upload that."
        )
    return json.loads(done.stdout.decode("utf-8"))


def _lines(extracted: dict) -> list[list[Line]]:
    """The pages' lines; where PDFium joined a word split by a hyphen at a line's end (marking the hyphen
    U+FFFE), the word is whole again."""
    pages = []
    for number, page in enumerate(extracted["pages"], start=1):
        lines = []
        for text, *places in page:
            cells = places[5] if len(places) > 5 else None
            if cells and "\ufffe" in text:  # the offsets count the mark: this line is prose, not a row
                cells = None
            lines.append(Line(text.replace("\ufffe", ""), *places[:5], page=number, cells=cells))
        pages.append(lines)
    return pages


MIN_TABLE_LINES = 3  # a header and two rows, or three rows: two lines of spaced words are too few to tell a table


def _row_columns(line: Line, columns: list[tuple[float, float]]) -> list[int] | None:
    """The column (an index of ``columns``, each a [left, right] extent) each of ``line``'s cells stands in, or
    None when the line does not fit them: a cell outside them, or two cells in one."""
    placed = []
    for _, _, left, right in line.cells:
        middle = (left + right) / 2
        inside = [k for k, (a, b) in enumerate(columns) if a - line.size <= middle <= b + line.size]
        overlapping = inside or [k for k, (a, b) in enumerate(columns) if left < b and right > a]
        if len(overlapping) != 1 or overlapping[0] in placed:
            return None
        placed.append(overlapping[0])
    return placed if placed == sorted(placed) else None


def table_runs(lines: list[Line]) -> list[tuple[int, int, list[tuple[float, float]]]]:
    """The tables among ``lines`` (one page's, in reading order): runs of at least MIN_TABLE_LINES consecutive
    lines of one size, each of two or more cells, whose cells stand in the columns of the run's widest line.
    Each run as ``(first, end, columns)``: ``lines[first:end]`` and the columns' extents, left to right."""
    runs, index = [], 0
    while index < len(lines):
        line = lines[index]
        if not line.cells or line.size is None:
            index += 1
            continue
        end = index
        while (
            end < len(lines)
            and lines[end].cells
            and lines[end].size is not None
            and abs(lines[end].size - line.size) <= 0.5
            and lines[end].page == line.page
        ):
            end += 1
        widest = max(lines[index:end], key=lambda candidate: len(candidate.cells))
        columns = [(left, right) for _, _, left, right in widest.cells]
        fits = end
        for position in range(index, end):
            if _row_columns(lines[position], columns) is None:
                fits = position
                break
        if fits - index >= MIN_TABLE_LINES:
            for position in range(index, fits):  # every row's cells widen the columns they stand in
                for column, (_, _, left, right) in zip(_row_columns(lines[position], columns), lines[position].cells):
                    columns[column] = (min(columns[column][0], left), max(columns[column][1], right))
            runs.append((index, fits, columns))
            index = fits
        else:
            index = max(fits, index + 1)
    return runs


def _table_block(lines: list[Line], columns: list[tuple[float, float]]) -> TextBlock:
    """A table's lines as a block: each line a row of one cell per column ("" where it has none)."""
    rows = []
    for line in lines:
        row = [""] * len(columns)
        for column, (start, end, _, _) in zip(_row_columns(line, columns), line.cells):
            row[column] = line.text[start:end]
        rows.append(tuple(row))
    text = "\n".join(" | ".join(cell for cell in row if cell) for row in rows)
    return TextBlock("<table>", ((text, lines[0].page),), rows=tuple(rows))


def _furniture_key(line: Line) -> tuple[str, int | None]:
    """What a running head or footer keeps from page to page: its words with numbers blanked, and its height on
    the page (to 4 points)."""
    return re.sub(r"\d+", "#", " ".join(line.text.lower().split())), None if line.top is None else round(line.top / 4)


def drop_furniture(
    pages: list[list[Line]], body: float | None, heights: list[list[float] | None] | None = None
) -> list[list[Line]]:
    """Each page without its running heads and footers: a line among the first or last two of a page, in the
    top or bottom tenth of where the document has text and of its page (``heights``: each page's [bottom, top]),
    that recurs, numbers aside, at that height on at least half the pages (three or more), and page numbers
    there. Lines set larger than the body text (``body``, a font size) are headings and stay, and so does a
    page's only line that is not a page number: a one-line page holds text, not furniture."""
    tops = [line.top for lines in pages for line in lines if line.top is not None]
    bottoms = [line.bottom for lines in pages for line in lines if line.bottom is not None]
    margin = (max(tops) - min(bottoms)) / 10 if tops else 0.0

    def in_margin(line: Line) -> bool:
        if line.top is None:
            return True
        extent = heights[line.page - 1] if heights and line.page <= len(heights) else None
        on_page = (
            extent is None
            or line.bottom <= extent[0] + (extent[1] - extent[0]) / 10
            or line.top >= extent[1] - (extent[1] - extent[0]) / 10
        )
        return on_page and (line.top >= max(tops) - margin or line.bottom <= min(bottoms) + margin)

    def edges(lines: list[Line]) -> list[Line]:
        return [
            line
            for line in lines[:2] + lines[-2:]
            if in_margin(line) and not (body and line.size and line.size >= body * 1.15)
        ]

    counts = Counter()
    for lines in pages:
        counts.update({_furniture_key(line) for line in edges(lines)})
    repeated = {key for key, count in counts.items() if count >= 3 and count >= len(pages) / 2}
    kept = []
    for lines in pages:
        numbers = {id(line) for line in edges(lines) if _PAGE_NUMBER.match(line.text)}
        furniture = numbers | {id(line) for line in edges(lines) if _furniture_key(line) in repeated}
        if len(lines) - len(numbers) == 1:
            furniture = numbers
        kept.append([line for line in lines if id(line) not in furniture])
    return kept


def _body_size(lines: list[Line]) -> float | None:
    """The font size most of the text is set in (by characters)."""
    sizes = Counter()
    for line in lines:
        if line.size:
            sizes[line.size] += len(line.text)
    return sizes.most_common(1)[0][0] if sizes else None


def _heading_levels(lines: list[Line], body: float | None, outline: list) -> dict[int, str]:
    """``{id(line): "<h1>" or "<h2>"}`` for the lines that are headings: short lines set at least 15% larger than
    the body, or that the outline names on their page. The largest heading size is h1, the rest h2."""
    titles = {(page, " ".join(title.split()).lower()) for _, title, page in outline}
    headings = {}
    for line in lines:
        larger = body is not None and line.size is not None and line.size >= body * 1.15
        named = (line.page, " ".join(line.text.split()).lower()) in titles
        if (larger and len(line.text) <= 150) or named:
            headings[id(line)] = line.size or 0.0
    sizes = sorted({size for size in headings.values()}, reverse=True)
    top = sizes[0] if len(sizes) > 1 else None
    return {key: "<h1>" if size == top else "<h2>" for key, size in headings.items()}


def _gap(previous: Line, line: Line) -> float | None:
    """The white space between two lines of a page, in points (None across pages or without places)."""
    if previous.page != line.page or previous.bottom is None or line.top is None:
        return None
    return previous.bottom - line.top


def _joins(previous: Line, line: Line, gap: float | None, right_edge: float | None) -> bool:
    """Whether ``line`` continues the paragraph whose last line is ``previous``; ``gap`` is the usual space
    between the lines of a paragraph."""
    if previous.size is None or line.size is None:  # no places: a short line ending a sentence ends a paragraph
        return not (len(previous.text) < 40 and _SENTENCE_END.search(previous.text))
    if abs(previous.size - line.size) > 0.5:
        return False
    if previous.page != line.page:  # a page break cuts a paragraph mid-sentence far more often than at its end
        return not _SENTENCE_END.search(previous.text)
    if gap is not None and _gap(previous, line) > gap + 0.5 * line.size:  # half a blank line or more between
        return False
    if line.left - previous.left > line.size:  # the first line of a paragraph set in
        return False
    short = right_edge is not None and previous.right < right_edge - 3 * previous.size
    return not (short and _SENTENCE_END.search(previous.text))


def _joined(previous_text: str, text: str) -> str:
    """``text`` as it follows ``previous_text`` in one paragraph: after a space, or glued where a hyphen at the
    line's end only split a word (the hyphen dropped)."""
    if previous_text.endswith(_SOFT_HYPHENS):
        return text
    if re.search(r"[a-z]-$", previous_text) and re.match(r"[a-z]", text):
        return text
    return " " + text


def _strip_soft_hyphen(text: str) -> str:
    return text[:-1] if text.endswith(_SOFT_HYPHENS) or re.search(r"[a-z]-$", text) else text


def blocks_from_pages(extracted: dict) -> tuple[list[TextBlock], int]:
    """The headings and paragraphs of :func:`read_pdf_lines`'s pages, in reading order, and the number of pages."""
    pages = _lines(extracted)
    body = _body_size([line for lines in pages for line in lines])
    pages = drop_furniture(pages, body, extracted.get("heights"))
    tables = {}  # id of a table's first line -> (its lines, its columns)
    for lines in pages:
        for first, end, columns in table_runs(lines):
            tables[id(lines[first])] = (lines[first:end], columns)
    in_table = {id(line) for rows, _ in tables.values() for line in rows}
    every = [line for lines in pages for line in lines]
    headings = {
        key: level
        for key, level in _heading_levels(every, body, extracted.get("outline") or []).items()
        if key not in in_table
    }
    body_lines = [line for line in every if id(line) not in headings and line.size == body]
    gaps = [gap for gap in map(_gap, body_lines, body_lines[1:]) if gap is not None and abs(gap) < 3 * body]
    gap = statistics.median(gaps) if gaps else None
    rights = [line.right for line in body_lines if line.right is not None]
    right_edge = max(rights) if rights else None
    blocks: list[TextBlock] = []
    kind, pieces, previous = None, [], None
    for line in every:
        if id(line) in in_table:
            if id(line) in tables:
                if pieces:
                    blocks.append(TextBlock(kind, tuple(pieces)))
                kind, pieces, previous = None, [], None
                blocks.append(_table_block(*tables[id(line)]))
            continue
        heading = headings.get(id(line))
        if heading is None and kind == "<p>" and previous is not None and _joins(previous, line, gap, right_edge):
            last_text, last_page = pieces[-1]
            separator = _joined(previous.text, line.text)
            if separator == line.text:
                pieces[-1] = (_strip_soft_hyphen(last_text), last_page)
            if line.page == last_page:
                pieces[-1] = (pieces[-1][0] + separator, last_page)
            else:
                pieces.append((separator, line.page))
        else:
            if pieces:
                blocks.append(TextBlock(kind, tuple(pieces)))
            kind, pieces = heading or "<p>", [(line.text, line.page)]
        previous = line
    if pieces:
        blocks.append(TextBlock(kind, tuple(pieces)))
    return blocks, len(pages)


def read_pdf(
    data: bytes,
    *,
    source: str,
    max_pages: int = MAX_PDF_PAGES,
    seconds: float = PDF_SECONDS,
    memory_bytes: int = PDF_MEMORY_BYTES,
    max_scan_pages: int = MAX_SCAN_PAGES,
    ocr_seconds: float = OCR_SECONDS,
) -> RawDocument:
    """A PDF's text as a RawDocument whose ``blocks`` keep its headings, paragraphs and pages: the text layer's, and
    for the pages without one (scanned), what OCR reads on them, with the words' boxes and the pages' images.

    Raises DocumentError, with a sentence for the user, for a file that is not a PDF, one locked with a
    password, a damaged one, one of more than ``max_pages`` pages or more than ``max_scan_pages`` pages without a
    text layer, one that takes more than ``seconds`` or ``memory_bytes`` to read (``ocr_seconds`` for its scanned
    pages), scanned pages where Tesseract is not installed, and one in which no text is found at all.
    """
    start = time.perf_counter()
    if not data.lstrip()[:1024].startswith(b"%PDF") and b"%PDF-" not in data[:1024]:
        raise DocumentError(
            f"{source} is not a PDF: it does not start as one. If it is another kind of document, "
            f"please give it its own extension ({', '.join(formats.suffixes())})."
        )
    extracted = read_pdf_lines(data, max_pages=max_pages, seconds=seconds, memory_bytes=memory_bytes)
    error = extracted.get("error")
    if error == "password":
        raise DocumentError(
            "This PDF is protected with a password, so its text cannot be read. Please upload a copy "
            "saved without the password."
        )
    if error == "damaged":
        raise DocumentError(
            "This PDF could not be read: it is damaged or incomplete. Please save or export it again and upload that."
        )
    if error == "pages":
        raise DocumentError(
            f"This PDF has {extracted['pages']:,} pages; this app reads at most {max_pages:,}. Please "
            "upload the pages you need as a smaller PDF."
        )
    blocks, n_pages = blocks_from_pages(extracted)
    heights = extracted.get("heights") or [None] * n_pages
    scanned = [
        number
        for number, (lines, height) in enumerate(zip(extracted["pages"], heights), start=1)
        if not lines and height is not None
    ]
    if len(scanned) > max_scan_pages:
        raise DocumentError(
            f"This PDF has {len(scanned):,} pages without a text layer (scanned); this app reads at "
            f"most {max_scan_pages:,} scanned pages per document by OCR. Please upload the pages you "
            "need as a smaller PDF, or a PDF with a text layer."
        )
    pages = _read_scanned_pages(data, scanned, seconds=ocr_seconds, memory_bytes=memory_bytes) if scanned else []
    # Each scanned page's paragraphs go where the page is (a page has a text layer or is scanned, never both).
    blocks = sorted([*blocks, *(block for page in pages for block in page.blocks)], key=lambda b: b.pieces[0][1])
    if not blocks:
        raise DocumentError(
            f"No text was found in this PDF: it has no text layer, and OCR found no text on its "
            f"{n_pages} page{'s' if n_pages != 1 else ''} (blank, or text too small or faint to "
            "read). Please upload a sharper scan, or a PDF with selectable text."
        )
    text = "\n\n".join("".join(piece for piece, _ in block.pieces) for block in blocks)
    page_images = [None] * n_pages
    for page in pages:
        page_images[page.number - 1] = page.image
    return RawDocument(
        text=text,
        is_html=False,
        source=source,
        encoding="pdf",
        fetch_seconds=time.perf_counter() - start,
        blocks=tuple(blocks),
        n_pages=n_pages,
        title=extracted.get("title"),
        boxes=tuple(box for page in pages for box in page.boxes),
        page_images=tuple(page_images) if pages else (),
    )


def _read_scanned_pages(data: bytes, numbers: list[int], *, seconds: float, memory_bytes: int) -> list[ScannedPage]:
    """Pages ``numbers`` of the PDF ``data`` rendered (:mod:`littlebird.documents.pdf_render`) and read by OCR, all
    within ``seconds``."""
    started = time.monotonic()
    tesseract_command()  # before rendering: without it nothing rendered could be read
    with tempfile.TemporaryDirectory(prefix="littlebird-scan-") as folder:
        try:
            done = run_bounded(
                [sys.executable, str(_RENDERER), folder, str(MAX_OCR_PIXELS), str(RENDER_DPI), *map(str, numbers)],
                data,
                seconds=seconds,
                memory_bytes=memory_bytes,
            )
        except subprocess.TimeoutExpired:
            raise DocumentError(
                f"Rendering this PDF's {len(numbers)} scanned pages for OCR took longer than "
                f"{seconds:g} seconds, the most this app spends on them. Please upload fewer pages "
                "at a time, or a PDF with a text layer."
            ) from None
        if done.returncode != 0:
            raise DocumentError(
                f"Rendering this PDF's scanned pages for OCR needs more than {memory_bytes / 1e9:g} GB "
                "of memory, or crashed, so they were not read. Please upload the pages you need as a "
                "smaller PDF."
            )
        rendered = json.loads(done.stdout.decode("utf-8")).get("dpi", {})
        return read_pictures(
            _rendered(Path(folder), numbers, rendered),
            n_pages=len(numbers),
            what="this PDF's scanned pages",
            seconds=seconds,
            started=started,
        )


def _rendered(folder: Path, numbers: list[int], dpi: dict[str, int]):
    """The rendered pages as :class:`~littlebird.documents.ocr.Picture`, each loaded when its turn comes."""
    from PIL import Image

    for number in numbers:
        if str(number) in dpi:
            with Image.open(folder / f"page-{number}.png") as image:
                image.load()
                yield Picture(number, image, dpi[str(number)])
