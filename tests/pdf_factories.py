"""PDF and Word files for the tests, made on the fly: the example report in English and Korean
(``scripts/make_example_pdf.py``) and its scan (``scripts/make_example_scan.py``), laid-out lines, a blank scan, a
locked file, and bombs."""

from __future__ import annotations

import functools
import importlib.util
import io
import zlib
from datetime import datetime, timezone
from pathlib import Path

from fpdf import FPDF

_SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "make_example_pdf.py"
_spec = importlib.util.spec_from_file_location("make_example_pdf", _SCRIPT)
report = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(report)
_scan_spec = importlib.util.spec_from_file_location("make_example_scan", _SCRIPT.with_name("make_example_scan.py"))
scan = importlib.util.module_from_spec(_scan_spec)  # scans made from text we have (scripts/make_example_scan.py)
_scan_spec.loader.exec_module(scan)


@functools.lru_cache(maxsize=2)
def report_pdf(language: str) -> bytes:
    """The 32-page libraries report (the shipped example, for "en") as PDF bytes."""
    title, head, sections = report.library_report(language)
    return report.report_pdf(title, sections, running_head=head)


def branch_fact(language: str, index: int) -> dict:
    """The facts of branch ``index`` (from 0) of the report: its section starts page ``index + 3``."""
    return report.library_facts(language)[index]


def _pdf() -> FPDF:
    pdf = FPDF(format="A4")
    pdf.add_font("body", "", report.FONT)
    pdf.set_creation_date(datetime(2026, 1, 1, tzinfo=timezone.utc))
    return pdf


def lines_pdf(pages: list[list[str]], *, size: float = 11, outline: tuple[str, ...] = ()) -> bytes:
    """A PDF that sets each page's lines exactly as given, one under the other, all in one size; "" leaves a blank
    line (a paragraph break, as a reader sees one). The lines in ``outline`` are also entries of the PDF's outline."""
    pdf = _pdf()
    pdf.set_auto_page_break(False)
    for lines in pages:
        pdf.add_page()
        pdf.set_font("body", size=size)
        for line in lines:
            if line in outline:
                pdf.start_section(line)
            pdf.cell(0, size * 0.55, line, new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def blank_page(seed: int = 0):
    """A blank page as a scanner sees one at 200 dpi: white A4 with a few grey specks of dust."""
    import random

    from PIL import Image, ImageDraw

    image = Image.new("L", (1654, 2339), 255)
    draw, chance = ImageDraw.Draw(image), random.Random(seed)
    for _ in range(40):
        x, y, size = chance.randrange(1600), chance.randrange(2300), chance.randrange(1, 4)
        draw.ellipse((x, y, x + size, y + size), fill=chance.randrange(90, 200))
    return image


def blank_scan_pdf(pages: int = 1) -> bytes:
    """A PDF of page images and no text layer, as a scanner makes, of blank pages."""
    return scan.image_pdf([blank_page(number) for number in range(pages)])


def locked_pdf() -> bytes:
    """A PDF that opens only with the password "secret"."""
    pdf = _pdf()
    pdf.set_encryption(owner_password="owner", user_password="secret")
    pdf.add_page()
    pdf.set_font("body", size=11)
    pdf.cell(0, 6, "The harbor opens at nine.")
    return bytes(pdf.output())


def pdf_from_objects(objects: list[bytes]) -> bytes:
    """A PDF file of ``objects`` (numbered from 1, the first the catalog) with its cross-reference table."""
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    table = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, table)
    return bytes(out)


def inflation_bomb(megabytes: int = 2000) -> bytes:
    """A one-page PDF whose content stream is about 1/1000 of ``megabytes`` on disk and ``megabytes`` inflated."""
    compressor, block = zlib.compressobj(9), b" " * (1 << 20)
    stream = b"".join(compressor.compress(block) for _ in range(megabytes)) + compressor.flush()
    return pdf_from_objects([
        b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
    ])


def page_count_bomb(pages: int = 1_000_000, kids: int = 100_000) -> bytes:
    """A PDF whose page tree claims ``pages`` pages, listing one page object ``kids`` times."""
    return pdf_from_objects([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + b" ".join([b"3 0 R"] * kids) + b"] /Count %d >>" % pages,
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>",
    ])


def word_file(title: str, blocks: list) -> bytes:
    """A .docx: ``title`` in Word's Title style, then each block: ("h1" | "h2" | "p" | "li", text),
    ("table", rows) with the first row as the header, ("page", None) for a page break the author types, or
    ("rendered page", text) for a paragraph that Word's last layout put at the top of a page (the mark Word
    writes when it saves)."""
    import docx

    document = docx.Document()
    document.add_heading(title, 0)
    for kind, content in blocks:
        if kind in ("h1", "h2"):
            document.add_heading(content, int(kind[1]))
        elif kind == "li":
            document.add_paragraph(content, style="List Bullet")
        elif kind == "page":
            document.add_page_break()
        elif kind == "rendered page":
            from docx.oxml import OxmlElement

            paragraph = document.add_paragraph()
            paragraph.add_run()._r.append(OxmlElement("w:lastRenderedPageBreak"))
            paragraph.add_run(content)
        elif kind == "table":
            from docx.oxml import OxmlElement

            table = document.add_table(rows=0, cols=len(content[0]))
            for number, row in enumerate(content):
                added = table.add_row()
                for cell, text in zip(added.cells, row):
                    cell.text = text
                if number == 0:  # Word's "repeat as header row", which marks a table's head
                    added._tr.get_or_add_trPr().append(OxmlElement("w:tblHeader"))
        else:
            document.add_paragraph(content)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()
