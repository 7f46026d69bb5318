"""PDF pages -> grey images for OCR: the part of reading a scanned PDF that runs PDFium's renderer.

Like :mod:`littlebird.documents.pdf_text` it runs in a child process, under a memory and a time limit, and imports
nothing of ``littlebird``::

    python littlebird/documents/pdf_render.py FOLDER MAX_PIXELS DPI PAGE [PAGE ...] < file.pdf

Each PAGE (numbered from 1) is written as ``FOLDER/page-PAGE.png``, in grey, at DPI dots per inch or at the
resolution that gives it MAX_PIXELS pixels where that is lower (a page declared a metre wide stays bounded).
Standard output is one JSON object, ``{"dpi": {"PAGE": dots per inch used, ...}}``; a page PDFium cannot render
is left out, and a file it cannot open gives ``{"error": "damaged"}``.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pypdfium2 as pdfium


def render(data: bytes, folder: Path, numbers: list[int], *, max_pixels: int, dpi: int) -> dict:
    """Render pages ``numbers`` of the PDF ``data`` into ``folder``; the JSON object the module's docstring gives."""
    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError:
        return {"error": "damaged"}
    used = {}
    try:
        for number in numbers:
            try:
                page = pdf[number - 1]
            except (pdfium.PdfiumError, IndexError):
                continue
            try:
                width, height = page.get_size()  # points, 72 to the inch
                scale = dpi / 72
                if width * height * scale * scale > max_pixels:
                    scale = math.sqrt(max_pixels / (width * height))
                image = page.render(scale=scale, grayscale=True).to_pil()
                image.save(folder / f"page-{number}.png", compress_level=1)
                used[str(number)] = round(scale * 72)
            except (pdfium.PdfiumError, ValueError, ZeroDivisionError):
                continue
            finally:
                page.close()
    finally:
        pdf.close()
    return {"dpi": used}


def main() -> None:
    """Read a PDF from standard input; render the pages named on the command line; write the JSON object."""
    folder, max_pixels, dpi, *numbers = sys.argv[1:]
    data = sys.stdin.buffer.read()
    result = render(data, Path(folder), [int(number) for number in numbers], max_pixels=int(max_pixels), dpi=int(dpi))
    sys.stdout.write(json.dumps(result))


if __name__ == "__main__":
    main()
