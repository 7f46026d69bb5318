"""Scans and images read by OCR (Tesseract): a scanned English report answered with the answer's page, a Korean
image of a paragraph answered, every page of a TIFF, JPEG and WebP images, a PDF with text-layer and scanned
pages, the answer shown boxed on a crop of its page and in the answer card; and every kind of bad image or scan
refused with a sentence within 10 seconds, a missing Tesseract with the sentence that says what to install. Each
file is made here, from text we have (``scripts/make_example_scan.py``)."""

from __future__ import annotations

import base64
import io
import json
import re
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path

import pytest
from PIL import Image

from littlebird.app.payloads import answer_card
from littlebird.cli import main
from littlebird.documents import formats
from littlebird.documents.clean import clean_document
from littlebird.documents.errors import DocumentError
from littlebird.documents.image import read_image
from littlebird.documents.ocr import INSTALL_COMMAND, MAX_SCAN_PAGES, TESSERACT_VARIABLE, tesseract_command
from littlebird.documents.page_image import ANSWER_COLOUR, answer_crop
from littlebird.documents.pdf import read_pdf
from littlebird.documents.sources import read_document
from littlebird.documents.upload import read_pasted_text, read_upload
from tests.app.test_ui_handlers import make_result
from tests.support.files import blank_page, blank_scan_pdf, branch_fact, lines_pdf, png_declaring, scan

CHECKPOINT = str(Path(__file__).resolve().parents[2] / "assets" / "littlebird-qa")
REFUSAL_SECONDS = 10  # each bad file is refused within this


def _tesseract_missing() -> str | None:
    try:
        tesseract_command()
    except DocumentError as error:
        return str(error)
    return None


needs_tesseract = pytest.mark.skipif(
    _tesseract_missing() is not None, reason=f"needs Tesseract OCR with its Korean data ({INSTALL_COMMAND})"
)

KEEPER = "The lighthouse keeper rang the bell at noon every day."


def encoded(image: Image.Image, format: str, **options) -> bytes:
    out = io.BytesIO()
    image.save(out, format, **options)
    return out.getvalue()


def refusal(read, *args, **kwargs) -> str:
    """The sentence ``read(*args, **kwargs)`` refuses with; the test fails if it reads the file instead, or is
    still at it after :data:`REFUSAL_SECONDS`."""
    pool = ThreadPoolExecutor(1)
    try:
        future = pool.submit(read, *args, **kwargs)
        try:
            future.result(timeout=REFUSAL_SECONDS)
        except DocumentError as error:
            assert str(error).endswith("."), str(error)
            return str(error)
        except FutureTimeout:
            pytest.fail(f"{read.__name__} was still reading after {REFUSAL_SECONDS} s")
        pytest.fail(f"{read.__name__} read the file instead of refusing it")
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


@pytest.fixture(scope="module")
def english_scan(tmp_path_factory):
    """The first four pages of the example report, scanned at 200 dpi: a PDF of page images and no text."""
    path = tmp_path_factory.mktemp("scans") / "report-scan.pdf"
    path.write_bytes(scan.report_scan("en", pages=4)[0])
    return path


@needs_tesseract
def test_ask_answers_from_a_scanned_english_pdf_with_the_answers_page(english_scan, capsys):
    fact = branch_fact("en", 1)  # section 2, page 4
    assert (
        main(
            [
                "ask",
                str(english_scan),
                f"Which architect designed the building of the {fact['branch']} Library?",
                "--model",
                CHECKPOINT,
                "--json",
            ]
        )
        == 0
    )
    payload = json.loads(capsys.readouterr().out)
    assert payload["answer"] == fact["architect"]
    assert payload["page"] == 4 and payload["n_pages"] == 4


@needs_tesseract
def test_ask_answers_from_a_korean_image_of_a_paragraph(tmp_path, capsys):
    fact = branch_fact("ko", 1)
    paragraph = (
        f"{fact['branch']} 도서관은 {fact['opened']}년에 문을 열었다. 도서관 건물은 건축가 {fact['architect']}이 "
        "설계하였으며, 열람실에는 거리를 향한 높은 창을 내어 독자들이 한 해의 대부분을 햇빛 아래에서 책을 읽을 수 "
        "있게 하였다. 그 뒤로 건물은 두 차례 증축되었으나 처음 지은 정면과 돌계단은 그대로 남아 있다."
    )
    path = tmp_path / "paragraph.png"
    scan.text_image([paragraph], font=scan.HANGUL_FONT, size=36).save(path)
    assert (
        main(["ask", str(path), f"{fact['branch']} 도서관은 몇 년에 문을 열었는가?", "--model", CHECKPOINT, "--json"])
        == 0
    )
    payload = json.loads(capsys.readouterr().out)
    # Tesseract's Korean data often reads a word's syllables apart ("1878 년"), so the answer is compared without them.
    assert "".join(payload["answer"].split()) == f"{fact['opened']}년"
    assert payload["page"] == 1 and payload["n_pages"] == 1


@needs_tesseract
def test_the_answer_is_shown_boxed_on_a_crop_of_its_page(english_scan):
    document = read_document("upload", upload=str(english_scan))
    assert len(document.page_images) == 4 and all(document.page_images)
    architect = branch_fact("en", 1)["architect"]
    start = document.text.index(architect)
    assert document.page_of(start) == 4
    words = [(s, e, box) for s, e, box in document.word_boxes if start <= s < start + len(architect)]
    assert [document.text[s:e] for s, e, _ in words] == [box.text for _, _, box in words]
    assert " ".join(box.text for _, _, box in words).startswith(architect)
    assert {box.page for _, _, box in words} == {4}
    crop = Image.open(io.BytesIO(answer_crop(document, start, start + len(architect))))
    page = Image.open(io.BytesIO(document.page_images[3].png))
    assert crop.width == page.width and 0 < crop.height < page.height / 2  # the page's width, a few lines of it
    colours = crop.convert("RGB").getcolors(maxcolors=1 << 16)
    assert dict((colour, count) for count, colour in colours).get(ANSWER_COLOUR, 0) > 100  # the box is drawn
    assert answer_crop(clean_document(read_pasted_text("The bell rang at noon.")), 4, 8) is None  # no page image


@needs_tesseract
def test_the_answer_card_shows_a_scans_answer_boxed_and_nothing_for_a_text(tmp_path):
    path = tmp_path / "keeper.png"
    scan.text_image([KEEPER], size=40, width=1400).save(path)
    scanned = read_document("upload", upload=str(path))
    start = scanned.text.index("noon")
    card = answer_card(make_result([(start, start + 4)], scanned.text), scanned)
    figure = re.search(
        r'<figure class="lb-scan"><img src="data:image/png;base64,([A-Za-z0-9+/=]+)" '
        r'alt="The answer on page 1 of the scan, boxed"><figcaption>page 1</figcaption></figure>',
        card,
    )
    assert figure is not None, card[:500]
    assert base64.b64decode(figure[1]) == answer_crop(scanned, start, start + 4)
    # "No answer found": the best guess stays in the table and the document, not on the scan
    guessed = answer_card(make_result([(start, start + 4)], scanned.text, no_answer=True), scanned)
    assert "No answer found." in guessed and "<img" not in guessed
    text = clean_document(read_pasted_text(KEEPER))
    start = text.text.index("noon")
    plain = answer_card(make_result([(start, start + 4)], text.text), text)
    assert "noon" in plain and "<img" not in plain and "lb-scan" not in plain


@needs_tesseract
@pytest.mark.parametrize("format", ["JPEG", "WebP", "TIFF"])
def test_jpeg_webp_and_every_page_of_a_tiff_are_read(format, tmp_path):
    first = scan.text_image([KEEPER], size=40, width=1400)
    second = scan.text_image(["The ferry to the island leaves at seven in the morning."], size=40, width=1400)
    options = {"save_all": True, "append_images": [second], "compression": "tiff_deflate"} if format == "TIFF" else {}
    data = encoded(first if format == "TIFF" else first.convert("RGB"), format.upper(), **options)
    name = f"page.{formats.by_first_bytes(data).suffixes[0].lstrip('.')}"
    assert formats.by_first_bytes(data).label == format
    document = clean_document(read_upload(data, filename=name))
    assert "lighthouse keeper rang the bell at noon" in document.text
    if format == "TIFF":
        assert len(document.page_starts) == 2
        assert document.page_of(document.text.index("ferry to the island")) == 2


@needs_tesseract
def test_a_pdf_keeps_its_text_layer_and_reads_its_scanned_page(tmp_path):
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(lines_pdf([["The quay opens at nine every morning."]]))
    pdf.import_pages(pdfium.PdfDocument(scan.image_pdf([scan.text_image([KEEPER], size=40, width=1400)], dpi=150)))
    out = io.BytesIO()
    pdf.save(out)
    document = clean_document(read_upload(out.getvalue(), filename="mixed.pdf"))
    assert document.text.startswith("The quay opens at nine every morning.")  # the text layer, as it is
    assert document.page_of(document.text.index("lighthouse keeper")) == 2
    assert document.page_images[0] is None and document.page_images[1] is not None
    assert {box.page for _, _, box in document.word_boxes} == {2}


# --- refused ---------------------------------------------------------------------------------------------------


def test_images_are_told_by_their_first_bytes_and_content_types():
    for name, data in [
        ("png", png_declaring(8, 8)),
        ("jpeg", b"\xff\xd8\xff\xe0\x00\x10JFIF"),
        ("tiff", b"II*\x00\x08\x00"),
        ("tiff", b"MM\x00*\x00\x08"),
        ("webp", b"RIFF\x10\x00\x00\x00WEBPVP8 "),
    ]:
        assert formats.by_first_bytes(data).name == name
    assert formats.by_first_bytes(b"RIFF\x10\x00\x00\x00WAVEfmt ") is None  # a sound, not a picture
    assert formats.by_content_type("image/webp").name == "webp" and formats.by_suffix(".JPG").name == "jpeg"


@needs_tesseract
@pytest.mark.parametrize(
    "width, height, message",
    [
        (60_000, 60_000, "declares 3,600,000,000 pixels; this app reads images of at most 50,000,000 pixels"),
        (8_000, 8_000, "is 8,000 × 8,000 pixels; this app reads images of at most 50,000,000 pixels"),
    ],
    ids=["60000x60000", "8000x8000"],
)
def test_an_image_declaring_too_many_pixels_is_refused_undecoded(width, height, message):
    assert message in refusal(read_upload, png_declaring(width, height), filename="huge.png")


@needs_tesseract
@pytest.mark.parametrize("format", ["PNG", "JPEG"])
def test_a_truncated_image_is_refused(format):
    data = encoded(scan.text_image([KEEPER], size=40, width=1400), format)
    assert "damaged or incomplete" in refusal(read_upload, data[: len(data) // 2], filename=f"cut.{format.lower()}")


@needs_tesseract
def test_a_blank_scanned_page_is_refused_with_no_text_found():
    assert "No text was found in this image" in refusal(read_upload, encoded(blank_page(), "PNG"), filename="blank.png")
    assert "No text was found in this PDF" in refusal(read_upload, blank_scan_pdf(), filename="blank.pdf")


@needs_tesseract
def test_a_thousand_page_scan_is_refused_by_the_page_limit():
    pages = [Image.new("L", (85, 120), 255)] * 1000
    limit = f"at most {MAX_SCAN_PAGES} scanned pages"
    assert limit in refusal(read_upload, scan.image_pdf(pages, dpi=10), filename="scan.pdf")
    tiff = encoded(pages[0], "TIFF", save_all=True, append_images=pages[1:])
    assert "1,000 pages" in (message := refusal(read_upload, tiff, filename="scan.tiff")) and limit in message


@needs_tesseract
def test_ocr_over_its_time_limit_is_refused_saying_how_far_it_got():
    image = encoded(scan.text_image([KEEPER] * 12, size=40, width=1400), "PNG")
    message = refusal(read_image, image, source="slow.png", seconds=0.05)
    assert "took longer than 0.05 seconds" in message and "0 of 1 page had been read" in message
    pdf = scan.image_pdf([scan.text_image([KEEPER] * 12, size=40, width=1400)] * 2, dpi=150)
    assert "took longer than 0.05 seconds" in refusal(read_pdf, pdf, source="slow.pdf", ocr_seconds=0.05)


@pytest.mark.parametrize("program", [None, "#!/bin/sh\nexit 127\n"], ids=["missing", "broken"])
def test_without_tesseract_a_scan_is_refused_saying_what_to_install(program, monkeypatch, tmp_path):
    path = tmp_path / "tesseract"
    if program:
        path.write_text(program)
        path.chmod(0o755)
    monkeypatch.setenv(TESSERACT_VARIABLE, str(path))
    picture = encoded(Image.new("L", (200, 100), 255), "PNG")
    for data, name in [(picture, "page.png"), (scan.image_pdf([Image.new("L", (200, 100), 255)]), "scan.pdf")]:
        message = refusal(read_upload, data, filename=name)
        assert "needs Tesseract OCR, which is not installed here" in message and INSTALL_COMMAND in message
    assert read_upload(lines_pdf([["A text layer needs no OCR."]]), filename="text.pdf").text  # text still read


def test_without_korean_data_a_scan_is_refused_saying_what_to_install(monkeypatch, tmp_path):
    fake = tmp_path / "tesseract"
    fake.write_text("#!/bin/sh\necho 'List of available languages in \"/data/\" (2):'\necho eng\necho osd\n")
    fake.chmod(0o755)
    monkeypatch.setenv(TESSERACT_VARIABLE, str(fake))
    message = refusal(read_upload, encoded(Image.new("L", (200, 100), 255), "PNG"), filename="page.png")
    assert "without its Korean data" in message and "apt-get install tesseract-ocr-kor" in message
