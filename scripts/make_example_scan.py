"""Scans made from text we have: pages of a PDF rendered to grey images and saved as a PDF of images only (as a
scanner makes), and paragraphs set in an image, for the OCR tests and ``benchmarks/bench_ocr.py``.

    python scripts/make_example_scan.py --pages 10 --output /tmp/scan-en.pdf          # the example report's
    python scripts/make_example_scan.py --language ko --pages 4 --output /tmp/scan-ko.pdf

Since the text is known (the PDF's text layer, the paragraphs given), what OCR reads can be checked against it.
Needs Pillow, pypdfium2 and fpdf2 (the ``test`` extra), and DejaVu and Nanum fonts (Debian's fonts-dejavu-core and
fonts-nanum).
"""

from __future__ import annotations

import argparse
import importlib.util
import io
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

LATIN_FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
HANGUL_FONT = "/usr/share/fonts/truetype/nanum/NanumGothic.ttf"
SCAN_DPI = 200  # what an office scanner's default gives


def rendered_pages(pdf: bytes, *, dpi: int = SCAN_DPI, pages: int | None = None) -> list[Image.Image]:
    """The first ``pages`` pages (default all) of the PDF ``pdf`` as grey images at ``dpi``."""
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(pdf)
    try:
        count = len(document) if pages is None else min(pages, len(document))
        return [document[index].render(scale=dpi / 72, grayscale=True).to_pil() for index in range(count)]
    finally:
        document.close()


def page_texts(pdf: bytes, *, pages: int | None = None) -> list[str]:
    """The text layer of the first ``pages`` pages (default all) of ``pdf``: what a scan of them shows."""
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(pdf)
    try:
        count = len(document) if pages is None else min(pages, len(document))
        return [document[index].get_textpage().get_text_range().replace("\ufffe", "") for index in range(count)]
    finally:
        document.close()


def image_pdf(images: list[Image.Image], *, dpi: int = SCAN_DPI) -> bytes:
    """A PDF whose pages are ``images`` and nothing else, each page the image's size at ``dpi``."""
    out = io.BytesIO()
    images[0].save(out, "PDF", save_all=True, append_images=images[1:], resolution=dpi)
    return out.getvalue()


def text_image(
    paragraphs: list[str], *, font: str = LATIN_FONT, size: int = 32, width: int = 1600, margin: int | None = None
) -> Image.Image:
    """``paragraphs`` set in black on a white image ``width`` pixels wide, in ``font`` at ``size`` pixels, the
    lines broken between words, a blank line's space between paragraphs."""
    face = ImageFont.truetype(font, size)
    margin = size * 3 if margin is None else margin
    lines: list[str | None] = []  # None: the space between paragraphs
    measure = ImageDraw.Draw(Image.new("L", (1, 1)))
    for paragraph in paragraphs:
        line = ""
        for word in paragraph.split():
            longer = f"{line} {word}".strip()
            if line and measure.textlength(longer, font=face) > width - 2 * margin:
                lines.append(line)
                line = word
            else:
                line = longer
        lines += [line, None]
    pitch = int(size * 1.5)
    image = Image.new("L", (width, 2 * margin + pitch * len(lines)), 255)
    draw = ImageDraw.Draw(image)
    for row, line in enumerate(lines):
        if line:
            draw.text((margin, margin + row * pitch), line, font=face, fill=0)
    return image


def _report_module():
    spec = importlib.util.spec_from_file_location("make_example_pdf", Path(__file__).with_name("make_example_pdf.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def report_scan(language: str = "en", *, pages: int | None = None, dpi: int = SCAN_DPI) -> tuple[bytes, list[str]]:
    """A scan of the first ``pages`` pages of the example report (``scripts/make_example_pdf.py``) in ``language``,
    and each page's text as the report has it."""
    report = _report_module()
    title, head, sections = report.library_report(language)
    pdf = report.report_pdf(title, sections, running_head=head)
    return image_pdf(rendered_pages(pdf, dpi=dpi, pages=pages), dpi=dpi), page_texts(pdf, pages=pages)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--language", choices=("en", "ko"), default="en")
    parser.add_argument("--pages", type=int, default=10, help="the report's first pages to scan")
    parser.add_argument("--dpi", type=int, default=SCAN_DPI)
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args()
    scan, _ = report_scan(args.language, pages=args.pages, dpi=args.dpi)
    args.output.write_bytes(scan)
    print(f"wrote {args.output} ({args.output.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
