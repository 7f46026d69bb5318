"""The cleaner on what real sites serve: Wikipedia as it rendered for WikiTableQuestions, today's Wikipedia
markup in both languages, and a blog. Each page keeps its title, headings, paragraphs, list items and table
rows, and loses its furniture, with every model token still linked to the shown text."""

import gzip
import json
import re
from functools import cache
from pathlib import Path

import pytest

from littlebird.documents.clean import clean_document
from littlebird.documents.decode import RawDocument
from littlebird.documents.upload import read_upload
from tests.app.test_clean import assert_tokens_round_trip
from tests.support.qa import assert_linked

PAGES = Path(__file__).parents[1] / "fixtures" / "pages"
WTQ_PAGES = Path(__file__).parents[3] / "shared" / "data" / "qa" / "wtq-train-pages.jsonl.gz"
_TAG = re.compile(r"<(h1|h2|p|table|tr|td|th|ul|ol|li)> ")


@cache
def wtq_page(title: str) -> dict:
    """One page of the shared WikiTableQuestions training pages, by title."""
    if not WTQ_PAGES.exists():
        pytest.skip(f"the shared data is not beside this checkout ({WTQ_PAGES})")
    with gzip.open(WTQ_PAGES, "rt", encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if row["title"] == title:
                return row
    raise LookupError(title)


def clean_wtq_page(title: str):
    """A WikiTableQuestions page cleaned as a browser would get it: the rendered body with its <title>."""
    row = wtq_page(title)
    html = f"<html><head><title>{row['title']} - Wikipedia</title></head><body>{row['html']}</body></html>"
    return clean_document(RawDocument(html, True, f"{title}.html", "utf-8"))


def headings(document) -> list[str]:
    """The texts after each <h1>/<h2> token of the model text, in order."""
    return [piece.split("<", 1)[0].strip() for piece in re.split(r"<h[12]> ", document.model_text)[1:]]


def assert_no_furniture(document) -> None:
    """No reference markers, edit links, table of contents or navbox bars in either text."""
    for text in (document.text, document.model_text):
        assert not re.search(r"\[\d{1,3}\]", text), re.search(r".{40}\[\d{1,3}\].{20}", text)
        assert "[edit]" not in text and "v t e" not in text and "v · t · e" not in text
    assert "Contents" not in headings(document)


def test_a_wikipedia_article_keeps_every_section_heading_and_its_title_not_the_contents():
    document = clean_wtq_page("Renaissance (band)")
    assert document.title == "Renaissance (band)"
    assert headings(document) == [
        "Renaissance (band)",
        "Original incarnation (1969–70)",
        "Transition (1970–71)",
        "Second Incarnation (1971–80)",
        "Later days",
        "Personnel",
        "Members",
        "Lineups",
        "Timeline",
        "Discography",
        "Studio albums",
        "Live albums",
        "Other releases",
        "Singles",
        "UK",
        "US",
        "Japan only",
        "West Germany only",
        "Michael Dunford's Renaissance",
        "Annie Haslam's Renaissance",
        "Renaissant",
        "Major television appearances",
        "Illusion",
        "Renaissance Illusion",
        "Covers of Renaissance songs",
        "Notes",
        "References",
        "External links",
    ]
    assert_no_furniture(document)


def test_a_wikipedia_article_keeps_its_infobox_paragraphs_and_table_rows_apart():
    document = clean_wtq_page("Renaissance (band)")
    model = document.model_text
    assert "<p> Renaissance, Origin: London, England, UK." in model
    # Lines of one infobox cell (<br>) stay separate words, in the model text and the shown text.
    assert "<p> Renaissance, Years active: 1969–1987 1998–2002 2009–present." in model
    assert "1969–1987\n1998–2002" in document.text
    # Two header rows: "UK" under "Chart-Positions" names its column.
    assert "<h2> Studio albums <p> Year; Title; Chart-Positions; Comments. <p> UK; US; NL." in model
    assert "<p> Studio albums, Year: 1973; Title: Ashes Are Burning; UK: –; US: 171; NL: –." in model
    assert "1973 | Ashes Are Burning | – | 171 | –" in document.text
    assert (
        "<p> In January 1969, former Yardbirds members Keith Relf and Jim McCarty organised a new group devoted "
        "to experimentation between rock, folk, and classical forms."
    ) in model


def test_a_list_page_without_sections_keeps_its_whole_table():
    # trafilatura kept only the alphabet bar of this page: 253 KB of HTML, one long table.
    document = clean_wtq_page("List of places in New York: C")
    assert "Cooper | 1 | New York County | 10003" in document.text
    assert (
        "<p> Name of place: Co-op City; Counties: 1; Principal county: Bronx County; Lower zip code: 10475."
        in document.model_text
    )
    assert document.text.count("\n") > 700  # one line a table row
    assert_no_furniture(document)


def test_sort_keys_and_hidden_spans_are_not_read():
    # Wikipedia's style sheet hides <span class="sortkey">Bruce, Bob</span> before the shown "Bob Bruce".
    document = clean_wtq_page("List of Houston Astros Opening Day starting pitchers")
    assert "1965 | Bob Bruce | L | 0–2 | Philadelphia Phillies" in document.text
    assert "Bruce, Bob" not in document.text


@pytest.mark.parametrize("title", ["Renaissance (band)", "List of places in New York: C"])
def test_wikipedia_pages_link_every_token(title):
    document = clean_wtq_page(title)
    assert_linked(document)
    assert_tokens_round_trip(document)


@pytest.fixture(scope="module")
def fixtures():
    names = [
        "en_wiki_vector2022_lighthouse.html",
        "ko_wiki_vector2022_cheomseongdae.html",
        "blog_wordpress_kimchi.html",
    ]
    return {name: clean_document(read_upload(PAGES / name)) for name in names}


def test_todays_english_wikipedia_markup(fixtures):
    document = fixtures["en_wiki_vector2022_lighthouse.html"]
    assert document.title == "Eddystone Lighthouse"
    assert headings(document) == [
        "Eddystone Lighthouse",
        "Winstanley's lighthouse",
        "Smeaton's Tower",
        "Dismantling",
        "Keepers",
        "References",
    ]
    model = document.model_text
    assert "<p> Eddystone Lighthouse, Coordinates: 50°10′48″N 04°15′54″W. <p>" in model  # no hidden decimal form
    assert "<p> Lighthouses on the Eddystone Rocks <p> Tower; Engineer; First lit; Fate." in model
    assert (
        "<p> Lighthouses on the Eddystone Rocks, Tower: Third; Engineer: John Smeaton; First lit: 1759; "
        "Fate: Moved to Plymouth Hoe in 1882."
    ) in model
    assert "<p> Winstanley's lighthouse, from a print of 1699 <p> The first lighthouse" in model
    assert "<ul> <li> The light was automated in 1982. <li> A helipad" in model
    assert "south of Rame Head in Cornwall, England. The current structure is the fourth" in document.text
    for dropped in (
        "Jump to content",
        "Main menu",
        "move to sidebar",
        "Search Wikipedia",
        "Create account",
        "(Top)",
        "From Wikipedia, the free encyclopedia",
        "Lighthouse in the English Channel",
        "citation needed",
        "edit",
        "Bishop Rock",
        "Lighthouses in England",
        "Retrieved from",
        "Categories",
        "last edited",
        "Privacy policy",
        "24 languages",
        "View history",
        "^",
    ):
        assert dropped not in document.text, dropped
    assert_no_furniture(document)
    assert_linked(document)
    assert_tokens_round_trip(document)


def test_todays_korean_wikipedia_markup(fixtures):
    document = fixtures["ko_wiki_vector2022_cheomseongdae.html"]
    assert document.title == "첨성대" and document.language == "ko"
    assert headings(document) == ["첨성대", "구조", "역사", "각주"]
    model = document.model_text
    assert "<p> 경주 첨성대, 소재지: 경상북도 경주시 인왕동 839-1." in model
    assert "<p> 첨성대의 규모 <p> 부분; 크기. <p> 첨성대의 규모, 부분: 밑지름; 크기: 4.93 m." in model
    assert "<li> 1962년: 국보 지정 <li> 2016년: 경주 지진 뒤 정밀 점검" in model
    assert "신라 시대의 천문 관측대이다. 현존하는" in document.text
    for dropped in (
        "본문으로 이동",
        "주 메뉴",
        "목차",
        "처음 위치",
        "편집",
        "위키백과 검색",
        "최근 바뀜",
        "숭례문",
        "대한민국의 국보",
        "원본 주소",
        "분류",
        "개인정보처리방침",
        "마지막으로 편집",
        "↑",
    ):
        assert dropped not in document.text, dropped
    assert_no_furniture(document)
    assert_linked(document)
    assert_tokens_round_trip(document)


def test_a_blog_keeps_its_post_and_loses_its_furniture(fixtures):
    document = fixtures["blog_wordpress_kimchi.html"]
    assert document.title == "How to make cabbage kimchi at home"
    assert headings(document) == [
        "How to make cabbage kimchi at home",
        "Ingredients",
        "Method",
        "Salting the cabbage",
        "The paste",
        "How long to ferment",
    ]
    model = document.model_text
    assert "<li> 120 g coarse sea salt <li> 3 tablespoons gochugaru" in model
    assert "<p> How long to ferment, Where: Fridge; Temperature: 4 °C; Time: 2 to 3 weeks." in model
    for dropped in (
        "Skip to content",
        "Recipes from a tiny flat",
        "Share on",
        "Leave a Reply",
        "fizzy",
        "Recent Posts",
        "Subscribe",
        "Proudly powered",
        "Doenjang",
    ):
        assert dropped not in document.text, dropped
    assert_linked(document)
    assert_tokens_round_trip(document)


@pytest.mark.parametrize(
    "html, model",
    [
        (
            "<div>Eliminated: Josie</div><div>Original Airdate: May 14, 2008</div>",
            "Eliminated: Josie <p> Original Airdate: May 14, 2008",
        ),
        ("<p>first line<br>second line</p>", "<p> first line second line"),
        ("<table><tr><td>Year<br>1998</td><td>2004</td></tr></table>", "<p> Year 1998: 2004."),
    ],
)
def test_neighbouring_blocks_and_lines_never_run_together(html, model):
    page = f"<html><head><title>T</title></head><body><div class='mw-parser-output'>{html}</div></body></html>"
    document = clean_document(RawDocument(page, True, "page.html", "utf-8"))
    assert model in document.model_text
    assert_linked(document)
    words = set(_TAG.sub("", document.model_text).split())
    assert {"JosieOriginal", "linesecond", "19982004", "Year1998"}.isdisjoint(words)
