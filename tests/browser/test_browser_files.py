"""PDF, Word, Hangul and scanned files end to end in headless Chromium, with the shipped checkpoint: the example PDF
from the menu, a Korean PDF and a Word file uploaded, each answer highlighted with its page on the answer card and
the page breaks marked in the document; a Korean `.hwpx` answered from its table; a scanned PDF answered, with the
answer boxed in orange on a crop of its page in the answer card; a blank scanned PDF refused with its sentence
while the app goes on answering."""

from __future__ import annotations

import atexit
import base64
import io
import shutil
from pathlib import Path

import pytest
from PIL import Image

from littlebird.app import ui
from littlebird.app.examples import find_example
from littlebird.documents.page_image import ANSWER_COLOUR
from tests.app.test_file_answers import FERRIES_KO, HARBOUR
from tests.browser.test_browser import shown_document, wait_for_new_answer
from tests.support.files import blank_scan_pdf, branch_fact, report_pdf, scan
from tests.support.ui import CHROMIUM, free_port

CHECKPOINT = str(Path(__file__).resolve().parents[2] / "assets" / "littlebird-qa")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium (apt-get install -y chromium)"
    ),
]
needs_tesseract = pytest.mark.skipif(
    shutil.which("tesseract") is None,
    reason="reading a scan needs Tesseract OCR (apt-get install tesseract-ocr tesseract-ocr-kor)",
)


@pytest.fixture(scope="module")
def app_url() -> str:
    """The app with the shipped checkpoint, served on loopback for this module."""
    demo = ui.build_demo(CHECKPOINT)
    demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True, ssr_mode=False)
    atexit.register(demo.close)
    return demo.local_url


@pytest.fixture
def page(browser, app_url):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(app_url, wait_until="load")
    page.locator("#lb-question textarea").wait_for(state="visible", timeout=30_000)
    yield page
    page.close()


def wait_for_upload(page, name: str) -> None:
    """Wait until the upload box holds the file ``name`` (it shows the name's stem and suffix apart)."""
    page.wait_for_function(
        "stem => (document.querySelector('#lb-upload')?.textContent ?? '').includes(stem)",
        arg=Path(name).stem,
        timeout=30_000,
    )


def upload_and_ask(page, path: Path, question: str) -> None:
    """Upload ``path`` in the Upload tab, type ``question``, press Enter and wait for the new answer."""
    page.get_by_role("tab", name="Upload").click()
    clear = page.locator("#lb-upload button[aria-label=Clear]")
    if clear.count():  # the file asked about before
        clear.first.click()
    page.locator("#lb-upload input[type=file]").set_input_files(str(path))
    wait_for_upload(page, path.name)
    box = page.locator("#lb-question textarea")
    box.fill(question)
    before = shown_document(page)
    box.press("Enter")
    wait_for_new_answer(page, before)


def assert_answer_on_page(page, answer: str, page_number: int | None, n_pages: int | None) -> None:
    assert page.locator("#lb-answer-card .lb-answer").inner_text().strip() == answer
    assert "".join(page.locator("#lb-document mark.lb-best").all_inner_texts()) == answer
    if n_pages is None:
        assert page.locator("#lb-answer-card .lb-page-ref").count() == 0
        assert page.locator("#lb-document .lb-page").count() == 0
        return
    assert page.locator("#lb-answer-card .lb-page-ref").inner_text() == f"page {page_number} of {n_pages}"
    assert page.locator("#lb-document .lb-page").count() == n_pages
    # the answer sits after its page's mark and before the next one
    after_marks = page.evaluate("""() => {
        const best = document.querySelector('#lb-document mark.lb-best');
        const marks = [...document.querySelectorAll('#lb-document .lb-page')];
        return marks.filter(m => m.compareDocumentPosition(best) & Node.DOCUMENT_POSITION_FOLLOWING)
                    .map(m => Number(m.dataset.page));
    }""")
    assert max(after_marks) == page_number
    badge = page.evaluate(
        """() => getComputedStyle(document.querySelector('#lb-document .lb-page'), '::before').content"""
    )
    assert badge.startswith('"page ')  # the style sheet draws the page number; the text holds none


def test_the_pdf_example_from_the_menu_answers_with_its_page(page):
    example = find_example("en-libraries-report")
    page.locator("#lb-example input").click()
    page.get_by_role("option", name=example.label).click()
    page.locator("#lb-suggestions label").first.wait_for(timeout=10_000)
    wait_for_upload(page, example.path.name)
    before = shown_document(page)
    page.locator("#lb-ask").click()
    wait_for_new_answer(page, before)
    assert_answer_on_page(page, example.questions[0].answer, 14, 32)


def test_an_uploaded_korean_pdf_answers_past_its_tenth_page(page, tmp_path):
    path = tmp_path / "report-ko.pdf"
    path.write_bytes(report_pdf("ko"))
    fact = branch_fact("ko", 15)
    upload_and_ask(page, path, f"{fact['branch']} 도서관은 몇 년에 문을 열었는가?")
    assert_answer_on_page(page, f"{fact['opened']}년", 18, 32)


def test_an_uploaded_word_file_answers_from_its_table(page, tmp_path):
    path = tmp_path / "harbour.docx"
    path.write_bytes(HARBOUR)
    upload_and_ask(page, path, "When did Riverton harbour open?")
    assert_answer_on_page(page, "1871", 2, 2)


def test_an_uploaded_hangul_file_answers_from_its_table(page, tmp_path):
    path = tmp_path / "ferries.hwpx"
    path.write_bytes(FERRIES_KO)
    upload_and_ask(page, path, "동항에서 북항까지 가는 배는 얼마나 걸리는가?")
    assert_answer_on_page(page, "1시간 20분", None, None)
    assert page.locator("#lb-answer-card img").count() == 0  # no scan, no picture


@needs_tesseract
def test_an_uploaded_scan_answers_with_the_answer_boxed_on_its_page(page, tmp_path):
    path = tmp_path / "report-scan.pdf"
    path.write_bytes(scan.report_scan("en", pages=4)[0])
    fact = branch_fact("en", 1)  # section 2, on page 4
    upload_and_ask(page, path, f"Which architect designed the building of the {fact['branch']} Library?")
    assert_answer_on_page(page, fact["architect"], 4, 4)
    figure = page.locator("#lb-answer-card figure.lb-scan")
    image = figure.locator("img")
    assert image.get_attribute("alt") == "The answer on page 4 of the scan, boxed"
    assert figure.locator("figcaption").inner_text() == "page 4"
    shown = image.evaluate("""img => ({loaded: img.complete && img.naturalWidth > 0,
                                       width: img.getBoundingClientRect().width,
                                       card: img.closest('.lb-card').getBoundingClientRect().width})""")
    assert shown["loaded"] and 0 < shown["width"] <= shown["card"]  # drawn, and no wider than the card
    source = image.get_attribute("src")
    assert source.startswith("data:image/png;base64,")
    crop = Image.open(io.BytesIO(base64.b64decode(source.split(",", 1)[1]))).convert("RGB")
    colours = {colour: count for count, colour in crop.getcolors(maxcolors=1 << 16)}
    assert colours.get(ANSWER_COLOUR, 0) > 100  # the orange box round the answer


@needs_tesseract
def test_a_blank_scan_is_refused_and_the_app_answers_the_next_file(page, tmp_path):
    scan = tmp_path / "scan.pdf"
    scan.write_bytes(blank_scan_pdf())
    page.get_by_role("tab", name="Upload").click()
    page.locator("#lb-upload input[type=file]").set_input_files(str(scan))
    wait_for_upload(page, scan.name)
    page.locator("#lb-question textarea").fill("What is on the first page?")
    page.locator("#lb-question textarea").press("Enter")
    page.get_by_text("No text was found in this PDF").first.wait_for(timeout=60_000)
    report = tmp_path / "report-en.pdf"
    report.write_bytes(report_pdf("en"))
    fact = branch_fact("en", 20)
    upload_and_ask(page, report, f"Which architect designed the building of the {fact['branch']} Library?")
    assert_answer_on_page(page, fact["architect"], 23, 32)
