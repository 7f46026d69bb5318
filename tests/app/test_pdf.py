"""PDF files in: the text layer in reading order as paragraphs and headings, without running heads and page
numbers, with its page map exact; and every kind of bad PDF refused with a sentence, in bounded time and memory."""

from __future__ import annotations

import re
import time

import pytest

from littlebird.documents.clean import clean_document
from littlebird.documents.errors import DocumentError
from littlebird.documents.fetch import fetch_document
from littlebird.documents.pdf import MAX_PDF_PAGES
from littlebird.documents.sources import read_document
from littlebird.documents.upload import read_upload
from tests.app.test_clean import assert_tokens_round_trip
from tests.support.files import (
    branch_fact,
    inflation_bomb,
    lines_pdf,
    locked_pdf,
    page_count_bomb,
    report,
    report_pdf,
    table_pdf,
)
from tests.support.qa import assert_linked
from tests.support.ui import serve_directory

BAD_INPUT_SECONDS = 10  # each bad file is refused within this, the app still serving


@pytest.fixture(scope="module")
def reports():
    return {
        language: clean_document(read_upload(report_pdf(language), filename=f"report-{language}.pdf"))
        for language in ("en", "ko")
    }


@pytest.mark.parametrize("language", ["en", "ko"])
def test_report_reads_as_headings_and_paragraphs_with_its_pages(reports, language):
    document = reports[language]
    title, head, sections = report.library_report(language)
    assert len(document.page_starts) == 32 and document.title == title
    assert head not in document.text  # the running head of every page
    assert not re.search(r"^- \d+ -$", document.text, re.MULTILINE)  # the page numbers
    for heading, paragraphs in sections:
        assert f"\n\n{heading}\n\n" in document.text or document.text.startswith(heading)
        assert f"<h2> {heading} <p>" in document.model_text
        for paragraph in paragraphs:  # each paragraph is one line of the shown text, as written
            assert f"\n{paragraph}\n" in document.text + "\n"
    for index in (0, 13, 29):  # branch N's section is page N + 3
        fact = branch_fact(language, index)
        page = index + 3
        start = document.text.index(fact["architect"])
        assert document.page_of(start) == page
        assert document.page_of(document.page_starts[page - 1]) == page
        assert document.text[document.page_starts[page - 1] :].startswith(f"{index + 1}. ")


@pytest.mark.parametrize("language", ["en", "ko"])
def test_every_model_token_links_to_the_shown_text(reports, language):
    assert_linked(reports[language])
    assert_tokens_round_trip(reports[language])


HARBOURS = [
    ("Harbour", "Opened", "Berths", "Depth at low tide"),
    ("Riverton", "1871", "14", "6.5 metres"),
    ("Saltmarsh", "1902", "", "4 metres"),  # an empty cell
    ("Gull Point", "1930", "6", "3.2 metres"),
]


@pytest.mark.parametrize("table_form", ["named-rows", "tags", "ranked-rows"])
def test_a_table_in_a_pdf_reads_row_by_row_as_a_web_page_table_does(table_form):
    """PDFium gives each row of a table as one line of its cells; their places on the page part the cells again,
    so each row reaches the model as its cells after their headers, named by the heading above the table."""
    raw = read_upload(
        table_pdf(
            "Harbours of the coast", "Four harbours serve the coast.", HARBOURS, "Each harbour keeps a lifeboat."
        ),
        filename="harbours.pdf",
    )
    assert [block.kind for block in raw.blocks] == ["<h2>", "<p>", "<table>", "<p>"]  # one heading size: <h2>
    assert raw.blocks[2].rows == tuple(HARBOURS)
    document = clean_document(raw, table_form=table_form)
    assert "\n\nHarbour | Opened | Berths | Depth at low tide\nRiverton | 1871 | 14 | 6.5 metres\n" in document.text
    assert "Saltmarsh | 1902 | 4 metres\n" in document.text
    if table_form == "named-rows":
        assert (
            "<p> Harbours of the coast, Harbour: Saltmarsh; Opened: 1902; Depth at low tide: 4 metres. <p> "
            in document.model_text
        )
    elif table_form == "tags":
        assert "<table> <tr> <td> Harbour <td> Opened" in document.model_text
    if table_form == "ranked-rows":  # the cells written again from the rows, the shown text as before
        assert document.model_text.endswith(
            "<p> Harbours of the coast, first: Riverton; last: Gull Point. <p> Harbours of the coast, highest, most "
            "Opened: Gull Point, 1930; lowest, least Opened: Riverton, 1871. <p> Harbours of the coast, highest, "
            "most Depth at low tide: Riverton, 6.5 metres; lowest, least Depth at low tide: Gull Point, 3.2 metres. "
            "<p> Each harbour keeps a lifeboat."
        )
    assert len(document.table_rows) == (7 if table_form == "ranked-rows" else 4)
    assert len(document.ranked_units) == (3 if table_form == "ranked-rows" else 0)
    assert_linked(document)
    assert document.model_text.endswith("<p> Each harbour keeps a lifeboat.")


def test_spaced_words_make_a_table_only_in_aligned_columns():
    """Two lines of words set far apart are too few to tell a table, and lines whose groups of words do not stand
    in the same columns are prose."""
    two = table_pdf("Tides", "High and low water at Riverton.", [("High water", "06:12"), ("Low water", "12:30")])
    assert "<table>" not in [block.kind for block in read_upload(two, filename="tides.pdf").blocks]
    gap = " " * 30
    ragged = lines_pdf(
        [
            [
                f"Riverton{gap}harbour{gap}opened",
                f"in 1871 and has fourteen berths{gap[:10]}for boats",
                f"Saltmarsh{gap}harbour{gap}opened",
            ]
        ]
    )
    assert "<table>" not in [block.kind for block in read_upload(ragged, filename="ragged.pdf").blocks]


def test_lines_join_into_paragraphs_across_hyphens_and_page_breaks():
    data = lines_pdf(
        [
            [
                "Harbour Notes",
                "",
                "The harbour master keeps a record of inter-",
                "national ships and of the tides; the",
                "record is read aloud at the town meeting. A chapter of it",
                "deals with storms and the",
            ],
            [
                "winter of the great flood, when the quay",
                "was lost.",
                "",
                "A new paragraph starts here.",
                "",
                "The last paragraph.",
            ],
        ]
    )
    document = clean_document(read_upload(data, filename="notes.pdf"))
    paragraphs = document.text.split("\n\n")
    assert paragraphs[1] == (
        "The harbour master keeps a record of international ships and of the tides; the record is "
        "read aloud at the town meeting. A chapter of it deals with storms and the winter of the "
        "great flood, when the quay was lost."
    )
    assert paragraphs[2:] == ["A new paragraph starts here.", "The last paragraph."]
    assert document.page_of(document.text.index("winter of the great")) == 2
    assert document.page_of(document.text.index("and the winter") + 3) == 1
    assert_linked(document)


def test_a_line_that_recurs_on_one_line_pages_is_text_not_furniture():
    data = lines_pdf([[f"Plate {number}: the harbour at dawn, seen from the lighthouse."] for number in range(1, 7)])
    document = clean_document(read_upload(data, filename="plates.pdf"))
    assert document.text.split("\n\n") == [
        f"Plate {number}: the harbour at dawn, seen from the lighthouse." for number in range(1, 7)
    ]


def test_a_page_without_text_starts_where_the_next_one_does():
    data = lines_pdf([[], ["The quay opens at nine."], [], ["The quay closes at six."]])
    document = clean_document(read_upload(data, filename="hours.pdf"))
    closes = document.text.index("The quay closes")
    assert document.page_starts == [0, 0, closes, closes]
    assert document.page_of(0) == 2 and document.page_of(closes) == 4 and document.page_of(closes - 1) == 2


def test_the_outline_names_headings_set_in_the_body_size():
    data = lines_pdf(
        [
            ["Harbour rules", "", "Ships keep to the marked channel at all times."],
            ["Fees", "", "Each ship pays a fee for every night at the quay."],
        ],
        outline=("Harbour rules", "Fees"),
    )
    document = clean_document(read_upload(data, filename="rules.pdf"))
    assert document.model_text == (
        "<h2> Harbour rules <p> Ships keep to the marked channel at all times. "
        "<h2> Fees <p> Each ship pays a fee for every night at the quay."
    )
    assert document.text.split("\n\n") == [
        "Harbour rules",
        "Ships keep to the marked channel at all times.",
        "Fees",
        "Each ship pays a fee for every night at the quay.",
    ]
    assert document.page_of(document.text.index("Fees")) == 2


def test_a_pdf_from_a_web_address_by_its_content_type_or_its_bytes(tmp_path):
    (tmp_path / "report.pdf").write_bytes(report_pdf("en"))
    (tmp_path / "report").write_bytes(report_pdf("en"))  # served as application/octet-stream, no extension
    (tmp_path / "report.html").write_bytes(report_pdf("en"))  # a server that calls it a web page
    with serve_directory(tmp_path) as base:
        for address in (f"{base}/report.pdf", f"{base}/report", f"{base}/report.html"):
            document = clean_document(fetch_document(address, allow_local=True))
            assert len(document.page_starts) == 32 and branch_fact("en", 20)["librarian"] in document.text


def test_an_upload_without_a_name_is_told_by_its_bytes():
    raw = read_upload(report_pdf("ko"))
    assert raw.n_pages == 32 and branch_fact("ko", 5)["architect"] in raw.text


def _refused_in_time(data: bytes, filename: str, message: str) -> None:
    start = time.perf_counter()
    with pytest.raises(DocumentError, match=message):
        read_upload(data, filename=filename)
    assert time.perf_counter() - start < BAD_INPUT_SECONDS


@pytest.mark.parametrize(
    "make, message",
    [
        (locked_pdf, "protected with a password"),
        (lambda: report_pdf("en")[:20_000], "damaged or incomplete|no text layer"),
        (lambda: b"%PDF-1.7\n" + bytes(range(256)) * 40, "damaged or incomplete"),
        (lambda: b"<html><body><p>A web page saved as .pdf</p></body></html>", "is not a PDF"),
        (lambda: page_count_bomb(), f"1,000,000 pages; this app reads at most {MAX_PDF_PAGES:,}"),
        (lambda: inflation_bomb(2000), "needs more than 1.5 GB of memory"),
    ],
    ids=["password", "truncated", "garbage", "not-a-pdf", "page-count-bomb", "inflation-bomb"],
)
def test_bad_pdfs_are_refused_with_a_sentence_in_bounded_time(make, message, tmp_path):
    _refused_in_time(make(), "bad.pdf", message)
    # Nothing is lost: the next document is read as before.
    (tmp_path / "good.pdf").write_bytes(lines_pdf([["The quay opens at nine."]]))
    assert read_document("upload", upload=str(tmp_path / "good.pdf")).text == "The quay opens at nine."


def test_a_truncated_pdf_keeps_what_it_can_read_or_says_it_is_damaged():
    data = report_pdf("en")
    try:
        raw = read_upload(data[: len(data) * 3 // 4], filename="cut.pdf")
    except DocumentError as error:
        assert "damaged or incomplete" in str(error) or "no text layer" in str(error)
    else:
        assert raw.n_pages >= 1 and raw.text.strip()


def test_a_500_page_pdf_is_read_whole_within_the_limits():
    sections = [
        (
            f"Section {number}",
            [
                f"The record of section {number} says that its keeper was called Keeper "
                f"{number:03d}, who served the harbour for many long years."
            ],
        )
        for number in range(1, 501)
    ]
    data = report.report_pdf("Harbour register", sections, running_head="Harbour register")
    start = time.perf_counter()
    document = clean_document(read_upload(data, filename="register.pdf"))
    assert time.perf_counter() - start < BAD_INPUT_SECONDS
    assert len(document.page_starts) == 500
    assert document.page_of(document.text.index("Keeper 420")) == 420


def test_a_pdf_over_the_page_limit_is_refused_with_its_size_and_the_limit(monkeypatch):
    from littlebird.documents import pdf

    data = lines_pdf([[f"Page {number}."] for number in range(1, 13)])
    with pytest.raises(DocumentError, match="This PDF has 12 pages; this app reads at most 10"):
        pdf.read_pdf(data, source="twelve.pdf", max_pages=10)
