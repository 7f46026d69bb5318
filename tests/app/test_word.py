"""Word (.docx) files in: headings, lists and tables arrive as the same tag tokens as a web page's, every block
kept; locked, old-format, damaged and bomb files are refused with a sentence."""

from __future__ import annotations

import time

import pytest

from littlebird.documents.clean import clean_document
from littlebird.documents.errors import DocumentError
from littlebird.documents.fetch import fetch_document
from littlebird.documents.upload import read_upload
from tests.app.test_clean import assert_tokens_round_trip
from tests.support.files import word_file, zip_bomb
from tests.support.qa import assert_linked
from tests.support.ui import serve_directory

FLEET = word_file(
    "Fleet report of the harbour office",
    [
        ("h1", "Ships"),
        ("p", "The harbour office keeps a list of the ships registered in the port, with their captains."),
        (
            "table",
            [
                ("Ship", "Captain", "Tonnage"),
                ("Northern Star", "Ada Lindqvist", "12,400"),
                ("Sea Lark", "Tomas Berg", "8,150"),
            ],
        ),
        ("h2", "Duties"),
        ("li", "Inspect the quay every morning."),
        ("li", "Record the tides."),
    ],
)


def test_headings_lists_and_tables_reach_the_model_and_nothing_is_dropped():
    document = clean_document(read_upload(FLEET, filename="fleet.docx"))
    assert document.text.split("\n") == [
        "Fleet report of the harbour office",
        "",
        "Ships",
        "",
        "The harbour office keeps a list of the ships registered in the port, with their captains.",
        "",
        "Ship | Captain | Tonnage",
        "Northern Star | Ada Lindqvist | 12,400",
        "Sea Lark | Tomas Berg | 8,150",
        "",
        "Duties",
        "• Inspect the quay every morning.",
        "• Record the tides.",
    ]
    assert "<h1> Fleet report of the harbour office <h1> Ships <p>" in document.model_text
    # Word marks no header row: the first row of short labels above two more names the columns.
    assert "<p> Ship; Captain; Tonnage. <p> Ships, Ship: Northern Star;" in document.model_text
    assert "<p> Ships, Ship: Sea Lark; Captain: Tomas Berg; Tonnage: 8,150." in document.model_text
    assert "<h2> Duties <ul> <li> Inspect the quay" in document.model_text
    assert [table for table, _, _ in document.table_rows] == [0, 0, 0]
    assert not document.page_starts
    assert_linked(document)
    assert_tokens_round_trip(document)


def test_a_word_files_pages_come_from_its_page_breaks_and_words_last_layout():
    data = word_file(
        "Harbour",
        [
            ("p", "Page one tells of the harbour."),
            ("page", None),  # a break the author typed
            ("p", "Page two tells of the quays."),
            ("rendered page", "Page three tells of the ships."),  # where Word's last layout began a page
            ("table", [("Ship", "Captain"), ("Sea Lark", "Tomas Berg")]),
        ],
    )
    document = clean_document(read_upload(data, filename="harbour.docx"))
    assert [document.text[start:].split("\n")[0] for start in document.page_starts] == [
        "Harbour",
        "Page two tells of the quays.",
        "Page three tells of the ships.",
    ]
    assert document.page_of(document.text.index("Tomas Berg")) == 3
    assert document.page_of(document.text.index("quays")) == 2
    assert "\ue000" not in document.text and "\ue000" not in document.model_text
    assert "<p> Page one tells of the harbour. <p> Page two" in document.model_text  # no empty block for a break
    assert_linked(document)
    assert_tokens_round_trip(document)


def test_a_private_use_character_in_a_web_page_is_text_not_a_page():
    from littlebird.documents.decode import RawDocument

    page = "<html><body><p>Icons \ue000 stay</p><p>as they are.</p></body></html>"
    document = clean_document(RawDocument(page, True, "page.html", "utf-8"))
    assert not document.page_starts and "\ue000" in document.text


def test_a_word_file_from_a_web_address(tmp_path):
    (tmp_path / "fleet.docx").write_bytes(FLEET)
    with serve_directory(tmp_path) as base:
        document = clean_document(fetch_document(f"{base}/fleet.docx", allow_local=True))
    assert "Northern Star | Ada Lindqvist | 12,400" in document.text


@pytest.mark.parametrize(
    "data, message",
    [
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(512), "protected with a password or saved in the old Word format"),
        (FLEET[: len(FLEET) // 2], "damaged"),
        (b"<html><body><p>A web page saved as .docx</p></body></html>", "not a Word document"),
        (zip_bomb({"word/document.xml": "<w:document/>"}), "unpacks to 210 MB, more than the 200 MB"),
    ],
    ids=["locked-or-doc", "truncated", "not-a-docx", "zip-bomb"],
)
def test_bad_word_files_are_refused_with_a_sentence(data, message):
    start = time.perf_counter()
    with pytest.raises(DocumentError, match=message):
        read_upload(data, filename="bad.docx")
    assert time.perf_counter() - start < 10
