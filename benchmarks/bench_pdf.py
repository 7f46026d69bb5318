"""Reading a PDF's text layer: PDFium (pypdfium2, what the app uses) against pypdf, per page, in English and Korean.

    python benchmarks/bench_pdf.py --repeats 3

Each document is the example report (``scripts/make_example_pdf.py``, 32 pages) in that language. Rows: the
bare text of every page with pypdfium2 and with pypdf, in this process, and the app's whole path
(``littlebird.documents.pdf.read_pdf``: a child process under its limits, lines with their places, paragraphs,
headings, running heads dropped). "paragraphs whole" counts the report's paragraphs found in the text as
written once the extractor's line breaks are read as spaces (PDFium marks a hyphen it joined with U+FFFE, which
is dropped): a check that the words and their order came through. Needs pypdf (``pip install pypdf``), which the
app does not.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import re
import statistics
import time
from pathlib import Path

_SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "make_example_pdf.py"


def _report_module():
    spec = importlib.util.spec_from_file_location("make_example_pdf", _SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pdfium_text(data: bytes) -> list[str]:
    """Every page's text with pypdfium2."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(data)
    try:
        pages = []
        for page in pdf:
            textpage = page.get_textpage()
            pages.append(textpage.get_text_range())
            textpage.close()
            page.close()
        return pages
    finally:
        pdf.close()


def pypdf_text(data: bytes) -> list[str]:
    """Every page's text with pypdf."""
    from pypdf import PdfReader

    return [page.extract_text() for page in PdfReader(io.BytesIO(data)).pages]


def app_text(data: bytes) -> list[str]:
    """The app's cleaned text (one string: its pages are offsets into it)."""
    from littlebird.documents.clean import clean_document
    from littlebird.documents.pdf import read_pdf

    return [clean_document(read_pdf(data, source="report.pdf")).text]


def paragraphs_whole(pages: list[str], paragraphs: list[str]) -> int:
    """How many of ``paragraphs`` appear whole in the text, its line breaks read as spaces."""
    flat = " ".join(re.sub(r"\s+", " ", page.replace("\ufffe", "")) for page in pages)
    return sum(paragraph in flat for paragraph in paragraphs)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per row; the median is shown")
    args = parser.parse_args(argv)
    report = _report_module()
    readers = {
        "pypdfium2 (PDFium), text only": pdfium_text,
        "pypdf, text only": pypdf_text,
        "the app: pypdfium2 in a child process, paragraphs and page map": app_text,
    }
    print("| document | reader | ms/page | vs pypdfium2 | paragraphs whole |")
    print("|---|---|---:|---:|---:|")
    for language in ("en", "ko"):
        title, head, sections = report.library_report(language)
        data = report.report_pdf(title, sections, running_head=head)
        paragraphs = [p for _, body in sections for p in body]
        n_pages = len(pdfium_text(data))
        baseline = None
        for name, reader in readers.items():
            reader(data)  # a first call loads the library
            times, pages = [], None
            for _ in range(args.repeats):
                start = time.perf_counter()
                pages = reader(data)
                times.append(time.perf_counter() - start)
            per_page = 1000 * statistics.median(times) / n_pages
            baseline = baseline or per_page
            document = f"{'English' if language == 'en' else 'Korean'}, {n_pages} pages"
            print(
                f"| {document} | {name} | {per_page:.2f} | {per_page / baseline:.2f}x | "
                f"{paragraphs_whole(pages, paragraphs)} of {len(paragraphs)} |"
            )


if __name__ == "__main__":
    main()
