"""Every limit on what reading a document may cost is guarded: each guard goes just past its limit and expects the
refusal, so that raising or removing the limit turns it red. The guards state the limits as the docs give them
(``LIMITS``), not by the code's constants, which would move with the limit they guard.
``test_every_limit_has_a_guard`` finds the limits in ``littlebird/documents/`` by their names, so a new limit without
a guard fails too; ``scripts/break_limits.py`` raises each limit in a clean clone and checks that its guard fails."""

from __future__ import annotations

import ast
import contextlib
import http.server
import io
import os
import re
import shutil
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from littlebird.documents import fetch, hwpx, image, limits, ocr, pdf, word
from littlebird.documents.decode import RawDocument
from littlebird.documents.errors import DocumentError
from littlebird.documents.upload import read_upload

DOCUMENTS = Path(__file__).resolve().parents[2] / "littlebird" / "documents"
# A limit's name: a most or least (MAX_..., MIN_...), or a bound in seconds, bytes, pages, pixels or characters.
LIMIT_NAME = re.compile(r"^(DEFAULT_)?(MAX|MIN)_[A-Z0-9_]+$|^[A-Z][A-Z0-9_]*_(SECONDS|BYTES|PAGES|PIXELS|CHARACTERS)$")
# Names that match but bound no request: how a page is read, not how much.
NOT_LIMITS = {
    "littlebird.documents.clean.LAYOUT_CELL_CHARACTERS": "a cell this long lays a page out: a reading rule",
    "littlebird.documents.pdf.MIN_TABLE_LINES": "the fewest lines that make a table: a reading rule",
    "littlebird.documents.hwpx.MAX_HEADING_CHARACTERS": "a longer paragraph is no heading: a reading rule",
}


def limits_in_code() -> set[str]:
    """``module.NAME`` of every module-level number in littlebird/documents/ whose name says it is a limit."""
    found = set()
    for path in sorted(DOCUMENTS.glob("*.py")):
        module = f"littlebird.documents.{path.stem}"
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, ast.AnnAssign)
                else []
            )
            for target in targets:
                if isinstance(target, ast.Name) and LIMIT_NAME.match(target.id):
                    found.add(f"{module}.{target.id}")
    return found - set(NOT_LIMITS)


# The limits as docs/architecture.md states them; each guard reads its limit from here.
LIMITS = {
    "littlebird.documents.fetch.MAX_REDIRECTS": 5,
    "littlebird.documents.fetch.FETCH_SECONDS": 10,
    "littlebird.documents.limits.DEFAULT_MAX_CHARACTERS": 1_000_000,
    "littlebird.documents.limits.MAX_HTML_CHARACTERS": 5_000_000,
    "littlebird.documents.limits.DEFAULT_QUESTION_SECONDS": 20,
    "littlebird.documents.formats.MAX_TEXT_BYTES": 5_000_000,
    "littlebird.documents.formats.MAX_FILE_BYTES": 50_000_000,
    "littlebird.documents.pdf.MAX_PDF_PAGES": 2000,
    "littlebird.documents.pdf.PDF_SECONDS": 20,
    "littlebird.documents.pdf.PDF_MEMORY_BYTES": 1_500_000_000,
    "littlebird.documents.archive.MAX_UNZIPPED_BYTES": 200_000_000,
    "littlebird.documents.hwpx.MAX_XML_BYTES": 50_000_000,
    "littlebird.documents.hwpx.MAX_PARAGRAPHS": 50_000,
    "littlebird.documents.ocr.MAX_SCAN_PAGES": 50,
    "littlebird.documents.ocr.OCR_SECONDS": 180,
    "littlebird.documents.ocr.OCR_MEMORY_BYTES": 1_500_000_000,
    "littlebird.documents.ocr.MAX_OCR_PIXELS": 12_000_000,
    "littlebird.documents.image.MAX_IMAGE_PIXELS": 50_000_000,
}


def limit(name: str) -> int:
    return LIMITS[f"littlebird.documents.{name}"]


# --- the guards, one or more per limit ------------------------------------------------------------


class _Redirects(http.server.BaseHTTPRequestHandler):
    """/hops/N redirects to /hops/N-1; /hops/0 is a page."""

    def do_GET(self):  # noqa: N802 (the standard library's name)
        hops = int(self.path.rsplit("/", 1)[-1])
        if hops:
            self.send_response(302)
            self.send_header("Location", f"/hops/{hops - 1}")
            self.end_headers()
            return
        body = b"<html><body><p>The lighthouse was first lit in 1843.</p></body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def redirecting_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Redirects)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_redirects_are_followed_up_to_the_limit_and_no_further():
    with redirecting_server() as base:
        assert "1843" in fetch.fetch_document(f"{base}/hops/{limit('fetch.MAX_REDIRECTS')}", allow_local=True).text
        with pytest.raises(DocumentError, match=f"redirected more than {limit('fetch.MAX_REDIRECTS')} times"):
            fetch.fetch_document(f"{base}/hops/{limit('fetch.MAX_REDIRECTS') + 1}", allow_local=True)


def test_a_fetch_stops_at_its_time_limit():
    """A server that never answers: the fetch gives up after its time limit, with the limit in its sentence."""
    import socket

    listener = socket.create_server(("127.0.0.1", 0))
    try:
        with pytest.raises(DocumentError, match=f"did not load within {limit('fetch.FETCH_SECONDS')} seconds"):
            fetch.fetch_document(f"http://127.0.0.1:{listener.getsockname()[1]}/", allow_local=True)
    finally:
        listener.close()


def test_plain_text_is_read_up_to_its_character_limit_and_no_further():
    default = limits.Limits.from_environment({})
    text = "a" * limit("limits.DEFAULT_MAX_CHARACTERS")
    limits.check_characters(RawDocument(text, False, "pasted text", "str"), default)
    with pytest.raises(DocumentError, match=f"at most {limit('limits.DEFAULT_MAX_CHARACTERS'):,} characters"):
        limits.check_characters(RawDocument(text + "a", False, "pasted text", "str"), default)


def test_html_is_read_up_to_its_character_limit_and_no_further():
    default = limits.Limits.from_environment({})
    html = "<p>" + "a" * (limit("limits.MAX_HTML_CHARACTERS") - 3)
    limits.check_characters(RawDocument(html, True, "page.html", "utf-8"), default)
    with pytest.raises(DocumentError, match=f"at most {limit('limits.MAX_HTML_CHARACTERS'):,} characters of HTML"):
        limits.check_characters(RawDocument(html + "a", True, "page.html", "utf-8"), default)


def test_a_question_starts_no_window_after_its_time_limit(monkeypatch):
    """Each pass of the model takes (on a clock that a hook moves on) just over the default budget: a question about
    a long document reads the one window that always runs, where with no limit it reads more."""
    from littlebird.app.asking import answer_document
    from tests.support.ui import TEST_MODEL, long_document, tiny_loaded_model

    loaded = tiny_loaded_model()
    offset = [0.0]
    real = time.monotonic
    monkeypatch.setattr(time, "monotonic", lambda: real() + offset[0])

    def model_pass(module, inputs, outputs):
        offset[0] += 1.05 * limit("limits.DEFAULT_QUESTION_SECONDS")

    def windows_read(seconds: str) -> int:
        monkeypatch.setenv("LITTLEBIRD_QUESTION_SECONDS", seconds)
        hook = loaded.model.register_forward_hook(model_pass)
        try:
            return answer_document(long_document(24_000), "Where was Jikji printed?", checkpoint=TEST_MODEL)[
                "n_windows"
            ]
        finally:
            hook.remove()

    assert windows_read("none") > 1
    assert windows_read("") == 1


def test_a_text_file_is_read_up_to_its_byte_limit_and_no_further():
    text = b"a" * (limit("formats.MAX_TEXT_BYTES") - 1) + b"\n"
    assert len(read_upload(text, filename="notes.txt").text) == limit("formats.MAX_TEXT_BYTES")
    with pytest.raises(DocumentError, match=f"larger than {limit('formats.MAX_TEXT_BYTES') / 1e6:g} MB"):
        read_upload(text + b"a", filename="notes.txt")


def test_a_file_one_byte_over_its_byte_limit_is_refused_unread(monkeypatch):
    read = []
    monkeypatch.setattr(pdf, "read_pdf_lines", lambda *args, **kwargs: read.append(args))
    with pytest.raises(DocumentError, match=f"larger than {limit('formats.MAX_FILE_BYTES') / 1e6:g} MB"):
        read_upload(b"%PDF-1.7\n" + bytes(limit("formats.MAX_FILE_BYTES")), filename="scan.pdf")
    assert read == []


def test_a_pdf_one_page_over_the_page_limit_is_refused():
    from tests.support.files import page_count_bomb

    pages = limit("pdf.MAX_PDF_PAGES")
    with pytest.raises(DocumentError, match=f"{pages + 1:,} pages; this app reads at most {pages:,}"):
        read_upload(page_count_bomb(pages=pages + 1, kids=1), filename="long.pdf")


def test_reading_a_pdf_stops_at_its_time_limit(monkeypatch, tmp_path):
    """A reader that never finishes (standing in for PDFium on a pathological file) is stopped at the limit."""
    stuck = tmp_path / "stuck.py"
    stuck.write_text("import time\ntime.sleep(3600)\n", encoding="utf-8")
    monkeypatch.setattr(pdf, "_WORKER", stuck)
    with pytest.raises(DocumentError, match=f"longer than {limit('pdf.PDF_SECONDS')} seconds"):
        pdf.read_pdf(b"%PDF-1.7\n", source="stuck.pdf")


def test_reading_a_pdf_stops_at_its_memory_limit(monkeypatch, tmp_path):
    """A reader that asks for more memory than the limit (as PDFium inflating a bomb does) is refused."""
    greedy = tmp_path / "greedy.py"
    greedy.write_text(f"block = bytearray({limit('pdf.PDF_MEMORY_BYTES')})\n", encoding="utf-8")
    monkeypatch.setattr(pdf, "_WORKER", greedy)
    with pytest.raises(DocumentError, match=f"more than {limit('pdf.PDF_MEMORY_BYTES') / 1e9:g} GB of memory"):
        pdf.read_pdf(b"%PDF-1.7\n", source="bomb.pdf")


def _declaring_zip(unzipped: int) -> bytes:
    """A .docx whose parts say they unzip to ``unzipped`` bytes in all (the sizes are read, not trusted)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", b"<w:document/>")
        archive.writestr("word/media/picture.bin", b"\0" * (unzipped - len(b"<w:document/>")))
    return buffer.getvalue()


def test_a_word_file_is_unzipped_up_to_its_limit_and_no_further():
    with pytest.raises(DocumentError, match="unpacks to .* MB, more than the"):
        word.read_docx(_declaring_zip(limit("archive.MAX_UNZIPPED_BYTES") + 1), source="bomb.docx")
    with pytest.raises(DocumentError, match="damaged") as within:  # past the size check: mammoth reads it
        word.read_docx(_declaring_zip(limit("archive.MAX_UNZIPPED_BYTES")), source="big.docx")
    assert "unpacks" not in str(within.value)


def test_a_hangul_file_is_read_up_to_its_paragraph_limit_and_no_further():
    from tests.support.files import hangul_section

    paragraph = "<hp:p><hp:run><hp:t>가</hp:t></hp:run></hp:p>"
    paragraphs = limit("hwpx.MAX_PARAGRAPHS")
    assert hwpx.read_hwpx(hangul_section(paragraph * paragraphs), source="many.hwpx").text.count("가") == paragraphs
    with pytest.raises(DocumentError, match=f"more than {paragraphs:,} paragraphs"):
        hwpx.read_hwpx(hangul_section(paragraph * (paragraphs + 1)), source="many.hwpx")


def test_a_hangul_file_is_read_up_to_its_xml_limit_and_no_further():
    from tests.support.files import hangul_section

    def section_of(size: int) -> bytes:  # a .hwpx whose section is ``size`` bytes of XML, most of it comments
        with zipfile.ZipFile(io.BytesIO(hangul_section(""))) as archive:
            left = size - archive.getinfo("Contents/section0.xml").file_size
        comment = "<!--" + "x" * 9993 + "-->"  # 10,000 bytes: lxml keeps no text node over 10 MB
        return hangul_section(comment * (left // len(comment)) + "<!--" + "x" * (left % len(comment) - 7) + "-->")

    with pytest.raises(DocumentError) as within:  # read, and refused only for holding no text
        hwpx.read_hwpx(section_of(limit("hwpx.MAX_XML_BYTES")), source="notes.hwpx")
    assert "No text" in str(within.value)
    with pytest.raises(DocumentError, match=f"more than {limit('hwpx.MAX_XML_BYTES') / 1e6:g} MB of text"):
        hwpx.read_hwpx(section_of(limit("hwpx.MAX_XML_BYTES") + 1), source="notes.hwpx")


needs_tesseract = pytest.mark.skipif(
    not shutil.which(os.environ.get(ocr.TESSERACT_VARIABLE) or "tesseract"), reason="Tesseract OCR is not installed"
)


def _png(width: int, height: int, *, text: bool = False) -> bytes:
    from PIL import Image, ImageDraw

    picture = Image.new("L", (width, height), 255)
    if text:
        ImageDraw.Draw(picture).text((10, 10), "The keeper lit the lamp in 1843.", fill=0)
    out = io.BytesIO()
    picture.save(out, "PNG")
    return out.getvalue()


@needs_tesseract
def test_a_scan_one_page_over_the_page_limit_is_refused():
    from PIL import Image

    pages = [Image.new("L", (85, 120), 255)] * (limit("ocr.MAX_SCAN_PAGES") + 1)
    out = io.BytesIO()
    pages[0].save(out, "TIFF", save_all=True, append_images=pages[1:])
    with pytest.raises(DocumentError, match=f"at most {limit('ocr.MAX_SCAN_PAGES')} scanned pages"):
        read_upload(out.getvalue(), filename="scan.tiff")


@needs_tesseract
def test_ocr_stops_at_its_time_limit(monkeypatch):
    """The clock jumps just past the limit once reading has begun: no page is read, and the sentence says so."""
    real, calls = time.monotonic, [0]

    def clock() -> float:
        calls[0] += 1
        return real() + (0.0 if calls[0] == 1 else 1.01 * limit("ocr.OCR_SECONDS"))

    monkeypatch.setattr(time, "monotonic", clock)
    with pytest.raises(DocumentError, match=f"took longer than {limit('ocr.OCR_SECONDS')} seconds"):
        image.read_image(_png(400, 100, text=True), source="page.png")


@needs_tesseract
def test_ocr_of_a_page_stops_at_its_memory_limit(monkeypatch, tmp_path):
    """A Tesseract that asks for more memory than the limit (standing in for one on a pathological page)."""
    greedy = tmp_path / "tesseract"
    greedy.write_text(
        f"#!{sys.executable}\nimport sys\nif '--list-langs' in sys.argv:\n"
        "    print('List of available languages (2):'); print('eng'); print('kor'); sys.exit()\n"
        f"try:\n    block = bytearray({limit('ocr.OCR_MEMORY_BYTES')})\n"
        "except MemoryError:\n    import os; os.abort()  # as a C++ program ends on std::bad_alloc\n",
        encoding="utf-8",
    )
    greedy.chmod(0o755)
    monkeypatch.setenv(ocr.TESSERACT_VARIABLE, str(greedy))
    with pytest.raises(DocumentError, match=f"more than {limit('ocr.OCR_MEMORY_BYTES') / 1e9:g} GB of memory"):
        image.read_image(_png(400, 100, text=True), source="page.png")


def test_a_picture_over_the_ocr_pixel_limit_is_scaled_down_to_it():
    from PIL import Image

    pixels = limit("ocr.MAX_OCR_PIXELS")
    (width, height), _, _ = ocr._prepare(Image.new("L", (4000, pixels // 4000 + 1), 255))
    assert pixels * 0.99 <= width * height <= pixels
    (width, height), _, _ = ocr._prepare(Image.new("L", (4000, pixels // 4000), 255))
    assert (width, height) == (4000, pixels // 4000)  # at the limit: as it is


@needs_tesseract
def test_an_image_is_decoded_up_to_its_pixel_limit_and_no_further():
    from tests.support.files import png_declaring

    pixels = limit("image.MAX_IMAGE_PIXELS")
    with pytest.raises(DocumentError, match=f"at most {pixels:,} pixels"):
        read_upload(png_declaring(pixels + 1, 1), filename="wide.png")
    with pytest.raises(DocumentError) as within:  # at the limit: decoded, and its short data found damaged
        read_upload(png_declaring(pixels, 1), filename="wide.png")
    assert "pixels" not in str(within.value)


GUARDS = {
    "littlebird.documents.fetch.MAX_REDIRECTS": test_redirects_are_followed_up_to_the_limit_and_no_further,
    "littlebird.documents.fetch.FETCH_SECONDS": test_a_fetch_stops_at_its_time_limit,
    "littlebird.documents.limits.DEFAULT_MAX_CHARACTERS": (
        test_plain_text_is_read_up_to_its_character_limit_and_no_further
    ),
    "littlebird.documents.limits.MAX_HTML_CHARACTERS": test_html_is_read_up_to_its_character_limit_and_no_further,
    "littlebird.documents.limits.DEFAULT_QUESTION_SECONDS": test_a_question_starts_no_window_after_its_time_limit,
    "littlebird.documents.formats.MAX_TEXT_BYTES": test_a_text_file_is_read_up_to_its_byte_limit_and_no_further,
    "littlebird.documents.formats.MAX_FILE_BYTES": test_a_file_one_byte_over_its_byte_limit_is_refused_unread,
    "littlebird.documents.pdf.MAX_PDF_PAGES": test_a_pdf_one_page_over_the_page_limit_is_refused,
    "littlebird.documents.pdf.PDF_SECONDS": test_reading_a_pdf_stops_at_its_time_limit,
    "littlebird.documents.pdf.PDF_MEMORY_BYTES": test_reading_a_pdf_stops_at_its_memory_limit,
    "littlebird.documents.archive.MAX_UNZIPPED_BYTES": test_a_word_file_is_unzipped_up_to_its_limit_and_no_further,
    "littlebird.documents.hwpx.MAX_PARAGRAPHS": test_a_hangul_file_is_read_up_to_its_paragraph_limit_and_no_further,
    "littlebird.documents.hwpx.MAX_XML_BYTES": test_a_hangul_file_is_read_up_to_its_xml_limit_and_no_further,
    "littlebird.documents.ocr.MAX_SCAN_PAGES": test_a_scan_one_page_over_the_page_limit_is_refused,
    "littlebird.documents.ocr.OCR_SECONDS": test_ocr_stops_at_its_time_limit,
    "littlebird.documents.ocr.OCR_MEMORY_BYTES": test_ocr_of_a_page_stops_at_its_memory_limit,
    "littlebird.documents.ocr.MAX_OCR_PIXELS": test_a_picture_over_the_ocr_pixel_limit_is_scaled_down_to_it,
    "littlebird.documents.image.MAX_IMAGE_PIXELS": test_an_image_is_decoded_up_to_its_pixel_limit_and_no_further,
}


def test_every_limit_has_a_guard():
    """A limit added to littlebird/documents/ without a guard here, or a guard whose limit is gone, fails."""
    found = limits_in_code()
    assert found - set(GUARDS) == set(), "limits without a guard in tests/app/test_limits.py"
    assert set(GUARDS) - found == set(), "guards of limits that are no longer in the code"
    assert set(LIMITS) == set(GUARDS)
