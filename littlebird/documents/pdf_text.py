"""PDF bytes -> the text lines of each page, with their font size and place: the part of reading a PDF that runs PDFium.

It runs in a child process (``python littlebird/documents/pdf_text.py < file.pdf``, started by
:mod:`littlebird.documents.pdf`) under a memory and a time limit, because PDFium inflates compressed streams without
bound: a 1 MB file can ask for gigabytes. So this file imports nothing of ``littlebird`` (whose package import loads
torch), reads the PDF from standard input and writes one JSON object to standard output:

``{"pages": [[line, ...], ...], "heights": [[bottom, top], ...], "outline": [[level, title, page], ...],
"title": str | null}`` where a line is ``[text, font size, top, bottom, left, right]`` (points, y growing upwards;
sizes and places are null when PDFium's text and its characters do not line up), followed, for a line whose words
stand apart in two or more groups (a table's row: PDFium joins its cells with one space), by
``[[start, end, left, right], ...]``, each group's characters in the text and its extent; ``heights`` gives each
page's extent (its media box), or the object is ``{"error": "password" | "damaged" | "pages", "pages": N}``.
"""

from __future__ import annotations

import json
import re
import sys

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_raw

_LINE = re.compile(r"[^\r\n]+")
_CELL_GAP = 1.0  # white space between two words, in font sizes, that parts a table's cells: a word space is ~0.3
_SPREAD = 0.6  # a line at least this many font sizes wide per character is looked at for cells


def _line_geometry(textpage, first: int, last: int) -> tuple[float, float, float, float, float]:
    """Font size (the middle of three samples), top, bottom, left and right of the characters first..last."""
    middle = (first + last) // 2
    sizes = sorted(pdfium_raw.FPDFText_GetFontSize(textpage, i) for i in (first, middle, last))
    left, bottom_first, _, top_first = textpage.get_charbox(first)
    _, bottom_last, right, top_last = textpage.get_charbox(last)
    return (
        round(sizes[1], 2),
        round(max(top_first, top_last), 2),
        round(min(bottom_first, bottom_last), 2),
        round(left, 2),
        round(right, 2),
    )


def cell_groups(textpage, text: str, first: int, size: float) -> list[list] | None:
    """The groups of words of the line ``text`` (its first character is the page's character ``first``) that
    white space of at least ``_CELL_GAP`` font sizes parts: ``[[start, end, left, right], ...]``, or None for a
    line of one group."""
    groups, start = [], 0
    for space in re.finditer(r" +", text):
        before, after = first + space.start() - 1, first + space.end()
        left_box, right_box = textpage.get_charbox(before), textpage.get_charbox(after)
        if right_box[0] - left_box[2] >= _CELL_GAP * size:
            groups.append([start, space.start()])
            start = space.end()
    if not groups:
        return None
    groups.append([start, len(text)])
    return [
        [a, b, round(textpage.get_charbox(first + a)[0], 2), round(textpage.get_charbox(first + b - 1)[2], 2)]
        for a, b in groups
    ]


def page_lines(page) -> list[list]:
    """The page's text lines in PDFium's reading order, each ``[text, size, top, bottom, left, right]``."""
    textpage = page.get_textpage()
    try:
        count = textpage.count_chars()
        text = textpage.get_text_range() if count > 0 else ""
        # One character of the text per PDFium character, unless characters outside the BMP took two.
        aligned = len(text) == count
        lines = []
        for match in _LINE.finditer(text):
            piece, start = match.group(), match.start()
            stripped = piece.strip()
            if not stripped:
                continue
            if aligned:
                first = start + (len(piece) - len(piece.lstrip()))
                last = start + len(piece.rstrip()) - 1
                geometry = _line_geometry(textpage, first, last)
                size, left, right = geometry[0], geometry[3], geometry[4]
                # A line of prose takes about half its font size per character; only a wider one can hold cells apart.
                spread = size and " " in stripped and right - left >= _SPREAD * size * len(stripped)
                groups = cell_groups(textpage, stripped, first, size) if spread else None
                lines.append([stripped, *geometry] + ([groups] if groups else []))
            else:
                lines.append([stripped, None, None, None, None, None])
        return lines
    finally:
        textpage.close()


def extract(data: bytes, *, max_pages: int) -> dict:
    """The JSON object described in the module's docstring for the PDF ``data``, reading at most ``max_pages``."""
    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as error:
        return {
            "error": "password" if "password" in str(error).lower() or "security" in str(error).lower() else "damaged"
        }
    try:
        n_pages = len(pdf)
        if n_pages > max_pages:
            return {"error": "pages", "pages": n_pages}
        pages, heights = [], []
        for index in range(n_pages):
            try:
                page = pdf[index]
            except pdfium.PdfiumError:
                pages.append([])  # a page PDFium cannot load: its text is lost, the others are read
                heights.append(None)
                continue
            try:
                pages.append(page_lines(page))
                _, bottom, _, top = page.get_mediabox()
                heights.append([round(bottom, 2), round(top, 2)])
            finally:
                page.close()
        outline = []
        for bookmark in pdf.get_toc(max_depth=4):
            destination = bookmark.get_dest()
            page_index = destination.get_index() if destination is not None else None
            if page_index is not None and bookmark.get_title():
                outline.append([bookmark.level, bookmark.get_title(), page_index + 1])
        title = (pdf.get_metadata_dict(skip_empty=True) or {}).get("Title")
        return {"pages": pages, "heights": heights, "outline": outline, "title": title}
    finally:
        pdf.close()


def main() -> None:
    """Read a PDF from standard input; write :func:`extract`'s JSON to standard output."""
    max_pages = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    data = sys.stdin.buffer.read()
    sys.stdout.write(json.dumps(extract(data, max_pages=max_pages), ensure_ascii=False))


if __name__ == "__main__":
    main()
