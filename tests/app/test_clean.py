"""Cleaning real-looking pages: boilerplate out, structure and tables in, every token linked to the shown text."""

from pathlib import Path

import pytest

from littlebird.documents.clean import clean_document
from littlebird.documents.decode import RawDocument
from littlebird.documents.errors import DocumentError
from littlebird.documents.upload import read_pasted_text, read_upload
from littlebird.vocabulary import TAG_TOKENS
from tests.support.qa import assert_linked, encode_document, qa_tokenizer

PAGES = Path(__file__).parents[1] / "fixtures" / "pages"
FIXTURES = ["ko_wiki_sejong.html", "en_wiki_baikal.html", "boilerplate_news.html", "cp949_jeju.html"]


@pytest.fixture(scope="module")
def documents():
    return {name: clean_document(read_upload(PAGES / name)) for name in FIXTURES}


def assert_tokens_round_trip(document):
    """Each token's span in the shown text is the token's own text from the page, whitespace aside: a token of
    inserted text alone (a tag, a table's header before a cell, a row's separators) has none."""
    tokenizer = qa_tokenizer()
    encoding = tokenizer(document.model_text, add_special_tokens=False, return_offsets_mapping=True)
    spans = encode_document(document, tokenizer).spans
    assert len(spans) == len(encoding["input_ids"])
    for (a, b), (start, end), token_id in zip(encoding["offset_mapping"], spans, encoding["input_ids"]):
        piece = document.model_text[a:b].strip()
        if piece in TAG_TOKENS:
            assert (start, end) == (-1, -1)
            continue
        from_page = "".join(document.model_text[i] for i in range(a, b) if document.model_to_text[i] >= 0)
        if not from_page.strip():
            assert (start, end) == (-1, -1), (piece, token_id)
            continue
        shown = document.text[start:end]
        assert "".join(shown.split()) == "".join(from_page.split()), (piece, shown, token_id)


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_pages_link_every_token(documents, name):
    document = documents[name]
    assert_linked(document)
    assert_tokens_round_trip(document)


def test_korean_page(documents):
    document = documents["ko_wiki_sejong.html"]
    assert document.language == "ko" and document.title == "세종 (조선)"
    assert document.model_text.startswith("<h1> 세종 (조선)")
    for kept in ("훈민정음은 1443년에 완성되었고", "측우기 | 강우량 측정 기구 | 1441년", "• 왕비: 소헌왕후 심씨"):
        assert kept in document.text
    for dropped in ("최근 바뀜", "wgPageName", "font-family", "개인정보처리방침", "기부해 주세요", "beacon"):
        assert dropped not in document.text


def test_table_rows_read_as_sentences_of_their_cells_after_their_headers(documents):
    # A question about a cell needs the cell's text next to its row's and its column's headers in the model text,
    # and the table's name (its caption, the heading above it, or an infobox's title row) before each row.
    document = documents["ko_wiki_sejong.html"]
    assert (
        "<p> 조선의 제4대 국왕, 재위: 1418년 9월 9일 ~ 1450년 3월 30일. <p> 조선의 제4대 국왕, 전임자: 태종."
        in document.model_text
    )
    assert (
        "<p> 세종 시대의 주요 발명품 <p> 이름; 종류; 제작 연도; 관련 인물. "
        "<p> 세종 시대의 주요 발명품, 이름: 자격루; 종류: 물시계; 제작 연도: 1434년; 관련 인물: 장영실."
    ) in document.model_text
    english = documents["en_wiki_baikal.html"]
    assert "<p> Lake Baikal, Max. depth: 1,642 m (5,387 ft)." in english.model_text
    assert "Selenga | 992 km | about 50% | Selenga Delta, east shore" in english.text
    assert "<table>" not in english.model_text and "<td>" not in english.model_text


def test_the_tag_form_of_tables_is_still_there_to_measure():
    document = clean_document(read_upload(PAGES / "ko_wiki_sejong.html"), table_form="tags")
    assert "<tr> <th> 재위 <td> 1418년 9월 9일 ~ 1450년 3월 30일" in document.model_text
    assert "<tr> <th> 이름 <th> 종류 <th> 제작 연도 <th> 관련 인물" in document.model_text
    assert_linked(document)
    assert_tokens_round_trip(document)


def test_structure_tokens(documents):
    english = documents["en_wiki_baikal.html"]
    for token in set(TAG_TOKENS) - {"<table>", "<tr>", "<td>", "<th>"}:  # tables are rows of sentences
        assert token in english.model_text
    assert "<h2> Geography <p> Baikal is 636 kilometres long" in english.model_text


def test_boilerplate_is_removed(documents):
    document = documents["boilerplate_news.html"]
    assert document.title == "Harbour town opens its new tidal library"
    assert "The library cost 4.2 million pounds" in document.text
    assert "Saturday | 10:00 | 17:00" in document.text
    for dropped in (
        "We use cookies",
        "Most read",
        "Doctors hate",
        "Related stories",
        "All rights reserved",
        "gtag",
        "Advertisement",
        "Share on Facebook",
        "Sign in",
    ):
        assert dropped not in document.text, dropped


def test_cp949_page(documents):
    document = documents["cp949_jeju.html"]
    assert document.language == "ko" and "똠방각하 기념 돌담길" in document.text
    assert "<p> 구분: 최고봉; 내용: 한라산 (해발 1,947 미터)." in document.model_text
    assert "openPopup" not in document.text


def test_plain_text_keeps_the_file_as_shown_text():
    text = "# 제목\n\n첫 문단은\n두 줄이다.\n\n- 하나\n- 둘\n\n| 이름 | 값 |\n|---|---|\n| 높이 | 1,947 m |\n"
    document = clean_document(read_pasted_text(text))
    assert document.text == text
    assert (
        document.model_text
        == "<h1> 제목 <p> 첫 문단은 두 줄이다. <ul> <li> 하나 <li> 둘 <p> 이름; 값. <p> 제목, 이름: 높이; 값: 1,947 m."
    )
    assert_linked(document)
    assert_tokens_round_trip(document)


def test_literal_tag_strings_in_text_do_not_become_tag_tokens():
    document = clean_document(read_pasted_text("Write <p> for a paragraph and [QUESTION] for the question.\n"))
    ids = qa_tokenizer()(document.model_text, add_special_tokens=False)["input_ids"]
    special = set(qa_tokenizer().convert_tokens_to_ids(["<p>", "[QUESTION]"]))
    assert [i for i in ids if i in special] == qa_tokenizer().convert_tokens_to_ids(["<p>"])  # only the inserted one
    assert_linked(document)
    html = clean_document(read_pasted_text("<p>The tag &lt;td&gt; makes a cell.</p><p>Second paragraph here.</p>"))
    assert "<td> makes" in html.text and html.model_text.count("<td>") == 0


def test_html_fragments_and_whitespace():
    document = clean_document(read_pasted_text("<p>Hello   <b>bold</b>\n world!</p><ul><li>one</li><li>two</li></ul>"))
    assert document.text == "Hello bold world!\n\n• one\n• two"
    assert document.model_text == "<p> Hello bold world! <ul> <li> one <li> two"
    assert_linked(document)


def test_empty_and_script_only_documents_are_refused():
    for raw in (
        RawDocument("<html><head><script>var a = 1;</script></head><body>  </body></html>", True, "x", "utf-8"),
        RawDocument("<nav><ul><li></li></ul></nav>", True, "x", "utf-8"),
        RawDocument("\n\n   \n", False, "x", "utf-8"),
    ):
        with pytest.raises(DocumentError, match="No readable text"):
            clean_document(raw)


def test_unknown_language_is_kept_with_a_warning():
    document = clean_document(read_pasted_text("Озеро Байкал — самое глубокое озеро на планете."))
    assert document.language == "unknown" and document.warnings
    assert "Байкал" in document.text


def test_two_megabyte_page_is_cleaned_whole():
    paragraph = "<p>" + "The lake is deep and the water is clear. " * 24 + "</p>\n"
    page = "<html><body><h1>Big</h1>" + paragraph * 2100 + "<p>The last sentence names Olkhon Island.</p></body></html>"
    assert len(page) > 2_000_000
    document = clean_document(RawDocument(page, True, "big.html", "utf-8"))
    assert document.text.rstrip().endswith("The last sentence names Olkhon Island.")
