"""PDF, Word and Hangul files for the tests, made on the fly: the example report in English and Korean
(``scripts/make_example_pdf.py``) and its scan (``scripts/make_example_scan.py``), laid-out lines, tables, a blank
scan, a locked file, and bombs."""

from __future__ import annotations

import functools
import importlib.util
import io
import os
import struct
import zipfile
import zlib
from datetime import datetime, timezone
from pathlib import Path

from fpdf import FPDF

_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "make_example_pdf.py"
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


def table_pdf(title: str, before: str, rows: list[tuple[str, ...]], after: str = "") -> bytes:
    """A one-page PDF: a heading ``title`` set larger, the paragraph ``before``, a table of ``rows`` drawn with
    ruled cells as fpdf2 draws them (each cell its own text, so PDFium joins a row's cells with spaces into one
    line), and the paragraph ``after``."""
    from fpdf.fonts import FontFace

    pdf = _pdf()
    pdf.add_page()
    pdf.set_font("body", size=16)
    pdf.multi_cell(0, 9, title, new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("body", size=11)
    pdf.multi_cell(0, 6, before, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(4)
    with pdf.table(headings_style=FontFace()) as table:
        for cells in rows:
            row = table.row()
            for cell in cells:
                row.cell(cell)
    if after:
        pdf.ln(4)
        pdf.multi_cell(0, 6, after, new_x="LMARGIN", new_y="NEXT")
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
    return pdf_from_objects(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
            b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
        ]
    )


def page_count_bomb(pages: int = 1_000_000, kids: int = 100_000) -> bytes:
    """A PDF whose page tree claims ``pages`` pages, listing one page object ``kids`` times."""
    return pdf_from_objects(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [" + b" ".join([b"3 0 R"] * kids) + b"] /Count %d >>" % pages,
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>",
        ]
    )


def zip_bomb(parts: dict[str, str]) -> bytes:
    """An office file's ZIP archive: ``parts`` (a "mimetype" stored, as an OpenDocument or Hangul file has it),
    and a part that inflates to 10 MB more than the app unzips, from about 200 KB."""
    from littlebird.documents.archive import MAX_UNZIPPED_BYTES

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in parts.items():
            archive.writestr(name, content, compress_type=zipfile.ZIP_STORED if name == "mimetype" else None)
        with archive.open("media/huge.bin", "w", force_zip64=True) as huge:
            block = b"\0" * (1 << 20)
            for _ in range(MAX_UNZIPPED_BYTES // len(block) + 10):
                huge.write(block)
    return buffer.getvalue()


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


_HWPX_NAMESPACES = {
    "hp": "http://www.hancom.co.kr/hwpml/2011/paragraph",
    "hs": "http://www.hancom.co.kr/hwpml/2011/section",
    "hh": "http://www.hancom.co.kr/hwpml/2011/head",
    "hc": "http://www.hancom.co.kr/hwpml/2011/core",
}
_BODY_HEIGHT, _TITLE_HEIGHT, _BIG_HEIGHT = 1000, 2000, 1400  # character sizes in 1/100 pt
# Paragraph styles as Hangul's new documents have them (바탕글, 개요 1, 개요 2) and a title style of the user's.
_HWPX_STYLES = [
    ("0", "바탕글", "Normal", "0", "0"),
    ("1", "개요 1", "Outline 1", "1", "0"),
    ("2", "개요 2", "Outline 2", "2", "0"),
    ("3", "제목", "Title", "0", "1"),
]


def hangul_file(title: str, blocks: list, *, sections: list[list] | None = None, encrypted: bool = False) -> bytes:
    """A .hwpx as Hangul writes one: ``title`` in a 제목 (Title) style, then each block: ("h1" | "h2", text) in
    개요 1 / 개요 2, ("p", text), ("big", text) for a paragraph set 40% larger than the body (a heading by size, as
    most Hangul documents make them), ("table", rows) whose cells are text or (text, colspan, rowspan), ("page",
    None) to put the next paragraph on a new page (pageBreak="1"), or ("rendered page", text) for a paragraph that
    Hangul's last layout put at the top of a page (its line's place on the page back at 0). ``sections`` are more
    sections after the first. ``encrypted`` writes the package as Hangul saves one with a password: the manifest
    names each part's encryption, and the parts are ciphertext."""
    from xml.sax.saxutils import escape, quoteattr

    ns = " ".join(f"xmlns:{prefix}={quoteattr(uri)}" for prefix, uri in _HWPX_NAMESPACES.items())
    top = [0]

    def paragraph(
        runs: str, *, style: str = "0", shape: str = "0", page_break: bool = False, at_top: bool = False
    ) -> str:
        top[0] = 0 if at_top or page_break else top[0] + 1600
        return (
            f'<hp:p id="0" paraPrIDRef="{shape}" styleIDRef="{style}" pageBreak="{int(page_break)}" '
            f'columnBreak="0" merged="0">{runs}<hp:linesegarray><hp:lineseg textpos="0" vertpos="{top[0]}" '
            'vertsize="1000" textheight="1000" baseline="850" spacing="600" horzpos="0" horzsize="42520" '
            'flags="393216"/></hp:linesegarray></hp:p>'
        )

    def run(text: str, size: str = "0") -> str:
        return f'<hp:run charPrIDRef="{size}"><hp:t>{escape(text)}</hp:t></hp:run>'

    def table(rows: list) -> str:
        cells_xml, width = [], max(sum(cell[1] if isinstance(cell, tuple) else 1 for cell in row) for row in rows)
        taken: set[tuple[int, int]] = set()
        for row_number, row in enumerate(rows):
            column, cells = 0, []
            for cell in row:
                text, colspan, rowspan = cell if isinstance(cell, tuple) else (cell, 1, 1)
                while (row_number, column) in taken:
                    column += 1
                taken |= {(row_number + r, column + c) for r in range(rowspan) for c in range(colspan)}
                cells.append(
                    f'<hp:tc name="" header="{int(row_number == 0)}" hasMargin="0" protect="0" editable="0" '
                    f'dirty="0" borderFillIDRef="1"><hp:subList id="" textDirection="HORIZONTAL" '
                    f'lineWrap="BREAK" vertAlign="CENTER">{paragraph(run(text))}</hp:subList>'
                    f'<hp:cellAddr colAddr="{column}" rowAddr="{row_number}"/>'
                    f'<hp:cellSpan colSpan="{colspan}" rowSpan="{rowspan}"/>'
                    '<hp:cellSz width="8000" height="1000"/></hp:tc>'
                )
                column += colspan
            cells_xml.append("<hp:tr>" + "".join(cells) + "</hp:tr>")
        return (
            f'<hp:run charPrIDRef="0"><hp:tbl id="1" rowCnt="{len(rows)}" colCnt="{width}" cellSpacing="0" '
            'borderFillIDRef="1" repeatHeader="1"><hp:sz width="40000" height="10000" protect="0"/>'
            + "".join(cells_xml)
            + "</hp:tbl><hp:t/></hp:run>"
        )

    def section(number: int, items: list) -> bytes:
        top[0] = -1600
        body, page_break = [], False
        for kind, content in items:
            if kind == "page":
                page_break = True
                continue
            if kind in ("h1", "h2"):
                body.append(paragraph(run(content), style=kind[1], shape=kind[1], page_break=page_break))
            elif kind == "title":
                body.append(paragraph(run(content, "1"), style="3", page_break=page_break))
            elif kind == "big":
                body.append(paragraph(run(content, "2"), page_break=page_break))
            elif kind == "table":
                body.append(paragraph(table(content), page_break=page_break))
            else:
                body.append(paragraph(run(content), page_break=page_break, at_top=kind == "rendered page"))
            page_break = False
        return f'<?xml version="1.0" encoding="UTF-8" standalone="yes" ?><hs:sec {ns}>{"".join(body)}</hs:sec>'.encode()

    def shape(id_: str, level: int | None) -> str:
        kind = "OUTLINE" if level is not None else "NONE"
        return (
            f'<hh:paraPr id="{id_}" tabPrIDRef="0" condense="0">'
            '<hh:align horizontal="JUSTIFY" vertical="BASELINE"/>'
            f'<hh:heading type="{kind}" idRef="0" level="{level or 0}"/></hh:paraPr>'
        )

    header = (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes" ?><hh:head {ns} version="1.4" secCnt="1">'
        '<hh:beginNum page="1" footnote="1" endnote="1" pic="1" tbl="1" equation="1"/><hh:refList>'
        '<hh:charProperties itemCnt="3">'
        + "".join(
            f'<hh:charPr id="{id_}" height="{height}" textColor="#000000" shadeColor="none"/>'
            for id_, height in (("0", _BODY_HEIGHT), ("1", _TITLE_HEIGHT), ("2", _BIG_HEIGHT))
        )
        + '</hh:charProperties><hh:paraProperties itemCnt="3">'
        + shape("0", None)
        + shape("1", 0)
        + shape("2", 1)
        + '</hh:paraProperties><hh:styles itemCnt="4">'
        + "".join(
            f'<hh:style id="{id_}" type="PARA" name="{name}" engName="{english}" paraPrIDRef="{para}" '
            f'charPrIDRef="{char}" nextStyleIDRef="0" langID="1042" lockForm="0"/>'
            for id_, name, english, para, char in _HWPX_STYLES
        )
        + "</hh:styles></hh:refList></hh:head>"
    ).encode()
    parts = {"Contents/header.xml": header, "Contents/section0.xml": section(0, [("title", title), *blocks])}
    for number, items in enumerate(sections or [], start=1):
        parts[f"Contents/section{number}.xml"] = section(number, items)
    items = "".join(f'<opf:item id="{Path(name).stem}" href="{name}" media-type="application/xml"/>' for name in parts)
    spine = "".join(f'<opf:itemref idref="{Path(name).stem}" linear="yes"/>' for name in parts)
    parts["Contents/content.hpf"] = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes" ?><opf:package xmlns:opf="http://www.idpf.org/2007/opf/"'
        f' version="" unique-identifier="" id=""><opf:metadata><opf:title>{escape(title)}</opf:title>'
        f"<opf:language>ko</opf:language></opf:metadata><opf:manifest>{items}</opf:manifest>"
        f"<opf:spine>{spine}</opf:spine></opf:package>"
    ).encode()
    entries = ""
    if encrypted:  # as Hangul writes it: AES-256-CBC, the key from the password by PBKDF2; here random bytes
        for name in [name for name in parts if name.startswith("Contents/")]:
            entries += (
                f'<odf:file-entry full-path="{name}" media-type="application/xml" size="{len(parts[name])}">'
                '<odf:encryption-data checksum-type="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0'
                '#sha256-1k" checksum=""><odf:algorithm algorithm-name="http://www.w3.org/2001/04/xmlenc'
                '#aes256-cbc" initialisation-vector=""/></odf:encryption-data></odf:file-entry>'
            )
            parts[name] = os.urandom(len(parts[name]) // 16 * 16 + 16)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("mimetype", "application/hwp+zip", compress_type=zipfile.ZIP_STORED)  # first, stored
        archive.writestr(
            "version.xml",
            '<?xml version="1.0" encoding="UTF-8" standalone="yes" ?><hv:HCFVersion '
            'xmlns:hv="http://www.hancom.co.kr/hwpml/2011/version" tagetApplication="WORDPROCESSOR" '
            'major="5" minor="1" micro="1" buildNumber="0" xmlVersion="1.4" application="Hancom Office '
            'Hangul"/>',
        )
        archive.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0" encoding="UTF-8" standalone="yes" ?>'
            '<ocf:container xmlns:ocf="urn:oasis:names:tc:opendocument:xmlns:container"><ocf:rootfiles>'
            '<ocf:rootfile full-path="Contents/content.hpf" media-type="application/hwpml-package+xml"/>'
            "</ocf:rootfiles></ocf:container>",
        )
        archive.writestr(
            "META-INF/manifest.xml",
            '<?xml version="1.0" encoding="UTF-8" standalone="yes" ?>'
            '<odf:manifest xmlns:odf="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0">'
            f"{entries}</odf:manifest>",
        )
        for name, content in parts.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def png_declaring(width: int, height: int) -> bytes:
    """A small PNG file whose header declares a grey image of ``width`` x ``height`` pixels."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00" * 4096))
        + chunk(b"IEND", b"")
    )


def hangul_section(paragraphs: str) -> bytes:
    """A .hwpx whose one section holds ``paragraphs`` (hp:p elements) and nothing else."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("mimetype", "application/hwp+zip", compress_type=zipfile.ZIP_STORED)
        archive.writestr(
            "Contents/section0.xml",
            '<hs:sec xmlns:hs="http://www.hancom.co.kr/hwpml/2011/section" '
            f'xmlns:hp="http://www.hancom.co.kr/hwpml/2011/paragraph">{paragraphs}</hs:sec>',
        )
    return buffer.getvalue()
