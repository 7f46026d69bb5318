"""Tables as the model reads them: each row a sentence of its cells after their headers, inserted text mapped to
-1, every cell's words mapped to where the page shows them (littlebird/table_text.py through the cleaner)."""

from __future__ import annotations

import pytest

from littlebird.documents.clean import clean_document
from littlebird.documents.decode import RawDocument
from littlebird.table_text import (
    DEFAULT_TABLE_FORM,
    MAX_COLSPAN,
    MAX_RANKED_COLUMNS,
    TABLE_FORMS,
    TableCell,
    cell_number,
    check_table_form,
    grid,
    table_plan,
    width,
)
from tests.app.test_clean import assert_tokens_round_trip
from tests.support.qa import assert_linked

PROSE = "<p>The harbour office keeps this timetable of the island ferries for the summer season.</p>"


def wiki(body: str) -> str:
    """A MediaWiki article body (walked directly, rowspans kept, as Wikipedia pages are read)."""
    return (
        f"<html><head><title>Ferries - Wikipedia</title></head><body><div class='mw-parser-output'>"
        f"{PROSE}{body}</div></body></html>"
    )


def model_text(html: str, form: str = "rows") -> str:
    document = clean_document(RawDocument(html, True, "page.html", "utf-8"), table_form=form)
    assert_linked(document)
    assert_tokens_round_trip(document)
    return document.model_text


def test_each_row_is_a_sentence_of_its_cells_after_their_headers():
    text = model_text(
        wiki(
            "<h2>Timetable</h2><table class='wikitable'>"
            "<tr><th>Line</th><th>From</th><th>Crossing time</th></tr>"
            "<tr><td>A</td><td>Port Elma</td><td>45 minutes</td></tr>"
            "<tr><td>B</td><td>Northhaven</td><td>1 hour 20 minutes</td></tr></table>"
        )
    )
    assert (
        "<h2> Timetable <p> Line; From; Crossing time. <p> Line: A; From: Port Elma; Crossing time: 45 minutes. "
        "<p> Line: B; From: Northhaven; Crossing time: 1 hour 20 minutes."
    ) in text
    for token in ("<table>", "<tr>", "<td>", "<th>"):
        assert token not in text


def test_a_short_page_keeps_its_table_rows_and_headings():
    """trafilatura gives a page whose main content it finds too short as one paragraph, every cell in one run;
    such a page is read from its own tree instead, so its rows reach the model as sentences."""
    page = (
        "<!DOCTYPE html><html><head><title>Island ferries</title></head><body><h2>Ferries</h2>"
        "<p>The ferry company runs three lines.</p><table><caption>Timetable</caption>"
        "<tr><th>Line</th><th>From</th><th>Crossing time</th></tr>"
        "<tr><td>A</td><td>Port Elma</td><td>45 minutes</td></tr>"
        "<tr><td>B</td><td>Northhaven</td><td>1 hour 20 minutes</td></tr></table></body></html>"
    )
    document = clean_document(RawDocument(page, True, "ferries.html", "utf-8"))
    assert_linked(document)
    assert "<h2> Ferries" in document.model_text
    assert "<p> Timetable, Line: B; From: Northhaven; Crossing time: 1 hour 20 minutes." in document.model_text
    assert len(document.table_rows) == 3  # the header row and both lines
    assert "B | Northhaven | 1 hour 20 minutes" in document.text  # the page shows the table as a table


def test_inserted_headers_map_to_no_shown_character_and_cells_to_their_own():
    document = clean_document(
        RawDocument(
            wiki(
                "<table><tr><th>Line</th><th>Time</th><th>Port</th></tr>"
                "<tr><td>B</td><td>07:45</td><td>Elma</td></tr></table>"
            ),
            True,
            "page.html",
            "utf-8",
        )
    )
    row = document.model_text.index("<p> Line: B")
    label = document.model_text.index("Time:", row)
    assert (document.model_to_text[label : label + len("Time:")] == -1).all()
    cell = document.model_text.index("07:45", row)
    shown = document.model_to_text[cell]
    assert document.text[shown : shown + 5] == "07:45"
    assert "B | 07:45 | Elma" in document.text  # the page still shows the table


def test_spanning_headers_rowspans_and_section_rows():
    text = model_text(
        wiki(
            "<table class='wikitable'><tr><th colspan=4>Summer 1981</th></tr>"
            "<tr><th rowspan=2>Line</th><th colspan=2>Route</th><th rowspan=2>Time</th></tr>"
            "<tr><th>From</th><th>To</th></tr>"
            "<tr><td rowspan=2>B</td><td>Elma</td><td>Northhaven</td><td>80 minutes</td></tr>"
            "<tr><td>Northhaven</td><td>Elma</td><td>75 minutes</td></tr>"
            "<tr><th colspan=4>Winter</th></tr>"
            "<tr><td>C</td><td colspan=2>Harbour tour</td><td>30 minutes</td></tr></table>"
        )
    )
    assert "<p> Summer 1981." in text  # a title row across the table: its own paragraph
    assert "<p> Line: B; From: Elma; To: Northhaven; Time: 80 minutes." in text
    assert "<p> Line: B; From: Northhaven; To: Elma; Time: 75 minutes." in text  # the rowspan's B, again
    assert "<p> Winter." in text
    assert "<p> Line: C; Route: Harbour tour; Time: 30 minutes." in text  # across From and To: their shared header


def test_repeated_column_names_take_the_header_above_them():
    text = model_text(
        wiki(
            "<table class='wikitable'><tr><th rowspan=2>Year</th><th colspan=2>Cup</th><th colspan=2>League</th></tr>"
            "<tr><th>W</th><th>L</th><th>W</th><th>L</th></tr>"
            "<tr><td>1990</td><td>3</td><td>1</td><td>12</td><td>8</td></tr>"
            "<tr><td>1991</td><td>2</td><td>2</td><td>15</td><td>5</td></tr></table>"
        )
    )
    assert "<p> Year: 1990; Cup W: 3; Cup L: 1; League W: 12; League L: 8." in text


def test_infobox_rows_read_as_header_and_value():
    text = model_text(
        wiki(
            "<table class='infobox'><tr><th colspan=2>Port Elma</th></tr>"
            "<tr><th>Founded</th><td>1850</td></tr><tr><th>Population</th><td>12,000</td></tr></table>"
        )
    )
    assert "<p> Port Elma. <p> Founded: 1850. <p> Population: 12,000." in text


def test_a_table_without_header_cells_takes_a_first_row_of_labels():
    rows = (
        "<tr><td>Line</td><td>From</td><td>Time</td></tr><tr><td>A</td><td>Elma</td><td>45 minutes</td></tr>"
        "<tr><td>B</td><td>Northhaven</td><td>80 minutes</td></tr>"
    )
    assert "<p> Line: B; From: Northhaven; Time: 80 minutes." in model_text(wiki(f"<table>{rows}</table>"))
    numbers = (
        "<tr><td>1990</td><td>3</td><td>1</td></tr><tr><td>1991</td><td>2</td><td>2</td></tr>"
        "<tr><td>1992</td><td>4</td><td>0</td></tr>"
    )
    assert "<p> 1991; 2; 2." in model_text(wiki(f"<table>{numbers}</table>"))  # numbers name no column


def test_empty_cells_lists_in_cells_and_long_headers():
    long_header = "Number of passengers carried in the first full year of service"
    text = model_text(
        wiki(
            f"<table class='wikitable'><tr><th>Line</th><th>Stops</th><th>Note</th><th>{long_header}</th></tr>"
            "<tr><td>A</td><td><ul><li>Elma</li><li>Southbay</li></ul></td><td></td><td>4,000</td></tr></table>"
        )
    )
    assert "<p> Line: A; Stops: Elma, Southbay; Number of passengers carried in the: 4,000." in text


def test_a_table_in_a_cell_flows_into_its_row_and_a_layout_table_into_blocks():
    inner = "<table><tr><td>home</td><td>away</td></tr></table>"
    text = model_text(
        wiki(
            f"<table class='infobox'><tr><th>Name</th><td>Elma FC</td></tr>"
            f"<tr><th>Kit</th><td>{inner}</td></tr><tr><th>Ground</th><td>Quay Park</td></tr></table>"
        )
    )
    assert "<p> Name: Elma FC. <p> Kit: home away. <p> Ground: Quay Park." in text
    paragraph = "The ferry company was founded by the harbour office in 1850. " * 10
    layout = model_text(wiki(f"<table><tr><td><p>{paragraph}</p></td><td>{inner}</td></tr></table>"))
    assert "<p> The ferry company was founded" in layout and "Name:" not in layout


def test_markdown_and_the_tag_form():
    markdown = (
        "# Ferries\n\n| Line | From | Time |\n|---|---|---|\n| A | Elma | 45 minutes |\n| B | Northhaven | 80 min |\n"
    )
    document = clean_document(RawDocument(markdown, False, "ferries.md", "utf-8"))
    assert document.text == markdown
    assert document.model_text == (
        "<h1> Ferries <p> Line; From; Time. <p> Ferries, Line: A; From: Elma; Time: 45 minutes. "
        "<p> Ferries, Line: B; From: Northhaven; Time: 80 min."
    )
    assert [document.model_text[a:b] for _, a, b in document.table_rows][
        -1
    ] == "<p> Ferries, Line: B; From: Northhaven; Time: 80 min."
    assert_tokens_round_trip(document)
    tags = clean_document(RawDocument(markdown, False, "ferries.md", "utf-8"), table_form="tags")
    assert "<table> <tr> <th> Line <th> From <th> Time <tr> <td> A <td> Elma <td> 45 minutes" in tags.model_text


@pytest.mark.parametrize("form", TABLE_FORMS)
def test_every_form_keeps_every_cell_linked(form):
    text = model_text(
        wiki(
            "<table class='wikitable'><tr><th>Line</th><th>Time</th></tr>"
            "<tr><td rowspan=2>B</td><td>80 minutes</td></tr><tr><td>75 minutes</td></tr></table>"
        ),
        form,
    )
    assert "80 minutes" in text and "75 minutes" in text
    if form == "named-rows":  # no caption and no heading above it: nothing names this table
        assert "<p> Line: B; Time: 80 minutes." in text
    if form == "header-tags":
        assert "<tr> <td> Line: B <td> Time: 80 minutes" in text


def test_the_grid_expands_spans_and_an_unknown_form_is_refused():
    rows = [[TableCell("a", "a", rowspan=2), TableCell("b", "b", colspan=2)], [TableCell("c", "c")]]
    laid = grid(rows)
    assert [(s.cell.text, s.column, s.width, s.first) for s in laid[0]] == [("a", 0, 1, True), ("b", 1, 2, True)]
    assert [(s.cell.text, s.column, s.first) for s in laid[1]] == [("a", 0, False), ("c", 1, True)]
    assert len(table_plan(rows, "rows")) == 2
    with pytest.raises(
        ValueError, match="table_form must be one of tags, header-tags, rows, named-rows, ranked-rows, ordered-rows"
    ):
        check_table_form("csv")


def test_the_default_form_names_each_row_by_its_caption_heading_or_title_row():
    caption = model_text(
        wiki(
            "<table class='wikitable'><caption>Summer timetable</caption>"
            "<tr><th>Line</th><th>Time</th></tr><tr><td>B</td><td>80 minutes</td></tr></table>"
        ),
        DEFAULT_TABLE_FORM,
    )
    assert "<p> Summer timetable <p> Line; Time. <p> Summer timetable, Line: B; Time: 80 minutes." in caption
    heading = model_text(
        wiki(
            "<h2>Fares</h2><table class='wikitable'><tr><th>Line</th><th>Fare</th></tr>"
            "<tr><td>B</td><td>12 euros</td></tr></table>"
        ),
        DEFAULT_TABLE_FORM,
    )
    assert "<h2> Fares <p> Line; Fare. <p> Fares, Line: B; Fare: 12 euros." in heading
    title = model_text(
        wiki(
            "<table class='infobox'><tr><th colspan=2>Port Elma</th></tr><tr><th>Founded</th><td>1850</td></tr></table>"
        ),
        DEFAULT_TABLE_FORM,
    )
    assert "<p> Port Elma, Port Elma. <p> Port Elma, Founded: 1850." in title  # every row named, the title's too


def test_spans_anyone_can_write_stay_bounded():
    """colspan and rowspan are attributes a page sets at will: capped, so a small page stays a small table."""
    rows = [[TableCell(f"c{i}", f"c{i}", colspan=100_000, rowspan=100_000) for i in range(50)]] + [
        [TableCell("x", "x")]
    ] * 200
    laid = grid(rows)
    assert width(laid) == 50 * MAX_COLSPAN + 1 and len(laid) == 201  # the rows below: one cell after the spans
    cells = "".join(f"<td colspan=100000 rowspan=100000>c{i}</td>" for i in range(50))
    document = clean_document(
        RawDocument(
            wiki(f"<table><tr>{cells}</tr>" + "<tr><td>x</td></tr>" * 200 + "</table>"), True, "page.html", "utf-8"
        )
    )
    assert len(document.model_text) < 50_000
    long_cell = "A long remark that runs on. " * 10  # longer than a repeated cell may be
    text = model_text(
        wiki(
            f"<table class='wikitable'><tr><th>Line</th><th>Note</th></tr>"
            f"<tr><td>A</td><td rowspan=3>{long_cell}</td></tr><tr><td>B</td></tr><tr><td>C</td></tr>"
            "</table>"
        )
    )
    assert text.count("A long remark") == 10  # written once, not again in rows B and C
    assert "<p> Line: B." in text


MEDALS = (
    "<h2>Medal table</h2><table class='wikitable'>"
    "<tr><th>Rank</th><th>Nation</th><th>Gold</th><th>Silver</th><th>Time</th></tr>"
    "<tr><td>1</td><td>South Korea</td><td>7</td><td>2</td><td>1:45.30</td></tr>"
    "<tr><td>2</td><td>Japan</td><td>3</td><td>5[a]</td><td>1:39.80</td></tr>"
    "<tr><td>3</td><td>Indonesia</td><td>1</td><td>12</td><td>1:51.02</td></tr></table>"
)


@pytest.mark.parametrize(
    ("cell", "number"),
    [
        ("60,160", 60160.0),
        ("12.87", 12.87),
        ("1:45.30", 105.3),
        ("$3.5", 3.5),
        ("45%", 45.0),
        ("−3", -3.0),
        ("+3", 3.0),
        ("109 m", 109.0),
        ("5[a]", 5.0),
        ("October 17", None),
        ("6–2", None),
        ("12/20/2013", None),
        ("", None),
    ],
)
def test_a_cell_number_is_read_as_a_reader_reads_it(cell, number):
    assert cell_number(cell) == number


def test_ranked_rows_name_each_number_columns_extremes_and_the_first_and_last_row():
    """Questions about a table mostly compare its rows ("who won the most silver medals?"). The ranked form
    writes, after the rows, which row holds each number column's highest and lowest value, by the row's first
    column of words, and which row comes first and last."""
    html = wiki(MEDALS)
    document = clean_document(RawDocument(html, True, "page.html", "utf-8"), table_form="ranked-rows")
    named = clean_document(RawDocument(html, True, "page.html", "utf-8"), table_form="named-rows")
    assert_linked(document)
    assert_tokens_round_trip(document)
    assert document.text == named.text  # the page shows the table as before: the units are model text only
    assert document.model_text.startswith(named.model_text)
    assert document.model_text[len(named.model_text) :] == (
        " <p> Medal table, first: South Korea; last: Indonesia."
        " <p> Medal table, highest, most Rank: Indonesia, 3; lowest, least Rank: South Korea, 1."
        " <p> Medal table, highest, most Gold: South Korea, 7; lowest, least Gold: Indonesia, 1."
        " <p> Medal table, highest, most Silver: Indonesia, 12; lowest, least Silver: South Korea, 2."
        " <p> Medal table, highest, most Time: Indonesia, 1:51.02; lowest, least Time: Japan, 1:39.80."
    )
    # A name in a unit is the cell of its row: the answer there highlights that cell on the page.
    model, shown = document.model_text, document.text
    unit = model.index("highest, most Silver: ") + len("highest, most Silver: ")
    start = int(document.model_to_text[unit])
    assert shown[start : start + len("Indonesia")] == "Indonesia"
    assert shown.index("Indonesia") == start
    ranked = [model[a:b] for _, a, b in document.ranked_units]
    assert ranked[0] == "<p> Medal table, first: South Korea; last: Indonesia."
    assert len(ranked) == 5 and all(unit.startswith("<p> Medal table, highest, most ") for unit in ranked[1:])
    assert document.table_rows[-5:] == document.ranked_units  # each ranked unit is one of the table's units too


def test_ordered_rows_name_each_rows_neighbours_as_model_only_text():
    """Each data row's unit ends with its neighbours' key cells ("before Indonesia" in Japan's row), model-only
    (mapped to -1), so no answer span; the shown page and the ranked units are those of ``ranked-rows``."""
    html = wiki(MEDALS)
    document = clean_document(RawDocument(html, True, "page.html", "utf-8"), table_form="ordered-rows")
    ranked = clean_document(RawDocument(html, True, "page.html", "utf-8"), table_form="ranked-rows")
    assert_linked(document)
    assert_tokens_round_trip(document)
    assert document.text == ranked.text
    model = document.model_text
    rows = [model[a:b] for _, a, b in document.table_rows]
    assert rows[1:4] == [
        "<p> Medal table, Rank: 1; Nation: South Korea; Gold: 7; Silver: 2; Time: 1:45.30; before Japan.",
        "<p> Medal table, Rank: 2; Nation: Japan; Gold: 3; Silver: 5[a]; Time: 1:39.80; after South Korea; "
        "before Indonesia.",
        "<p> Medal table, Rank: 3; Nation: Indonesia; Gold: 1; Silver: 12; Time: 1:51.02; after Japan.",
    ]
    assert [model[a:b] for _, a, b in document.ranked_units] == [
        ranked.model_text[a:b] for _, a, b in ranked.ranked_units
    ]
    neighbour = model.index("before Indonesia")
    assert (document.model_to_text[neighbour : neighbour + len("before Indonesia")] == -1).all()
    japan = model.index("Japan; Gold: 3")
    assert document.text[int(document.model_to_text[japan]) :].startswith("Japan")
    korean = model_text(
        wiki(
            "<h2>노선</h2><table><tr><th>노선</th><th>소요 시간(분)</th></tr><tr><td>가</td><td>45</td></tr>"
            "<tr><td>나</td><td>80</td></tr><tr><td>다</td><td>55</td></tr></table>"
        ),
        "ordered-rows",
    )
    assert "<p> 노선, 노선: 나; 소요 시간(분): 80; 가 다음; 다 이전." in korean
    # Nothing to order by (no column of words, or too few rows): the rows stay as ranked-rows writes them.
    years = "<table><tr><th>Year</th><th>Berths</th></tr>" + "".join(
        f"<tr><td>{1901 + i}</td><td>{4 + i}</td></tr>" for i in range(3)
    )
    assert model_text(wiki(years + "</table>"), "ordered-rows") == model_text(wiki(years + "</table>"), "ranked-rows")


def test_ranked_rows_leave_alone_what_has_nothing_to_rank():
    """An infobox (no column headers), a table of two data rows, one without a column of words, and a column
    whose numbers are all equal get no units; a table ranks at most MAX_RANKED_COLUMNS columns."""

    def units(body: str) -> list[str]:
        text = model_text(wiki(body), "ranked-rows")
        return [unit for unit in text.split("<p>") if "highest, most" in unit or "first:" in unit]

    assert (
        units(
            "<table class='infobox'><tr><th>Founded</th><td>1850</td></tr><tr><th>Berths</th><td>14</td></tr>"
            "<tr><th>Depth</th><td>6 m</td></tr></table>"
        )
        == []
    )
    assert (
        units(
            "<table><tr><th>Line</th><th>Minutes</th></tr><tr><td>A</td><td>45</td></tr>"
            "<tr><td>B</td><td>80</td></tr></table>"
        )
        == []
    )
    assert (
        units(
            "<table><tr><th>Year</th><th>Berths</th></tr><tr><td>1901</td><td>4</td></tr>"
            "<tr><td>1902</td><td>5</td></tr><tr><td>1903</td><td>6</td></tr></table>"
        )
        == []
    )
    same = units(
        "<table><tr><th>Line</th><th>Fare</th></tr><tr><td>A</td><td>3</td></tr>"
        "<tr><td>B</td><td>3</td></tr><tr><td>C</td><td>3</td></tr></table>"
    )
    assert same == [" first: A; last: C."]  # the rows' order still ranks them
    heads = "".join(f"<th>N{i}</th>" for i in range(20))
    body = "".join(
        "<tr><td>" + name + "</td>" + "".join(f"<td>{i + row}</td>" for i in range(20)) + "</tr>"
        for row, name in enumerate(["A", "B", "C"])
    )
    wide = units(f"<table><tr><th>Name</th>{heads}</tr>{body}</table>")
    assert len(wide) == 1 + MAX_RANKED_COLUMNS


def test_ranked_rows_in_korean_markdown_and_pdf_tables():
    """Every source of tables writes the units: a Korean table in Korean words, a Markdown file's words copied
    from the file, a PDF's cells written again from the rows above them."""
    korean = model_text(
        wiki(
            "<h2>노선</h2><table><tr><th>노선</th><th>소요 시간(분)</th></tr><tr><td>가</td><td>45</td></tr>"
            "<tr><td>나</td><td>80</td></tr><tr><td>다</td><td>55</td></tr></table>"
        ),
        "ranked-rows",
    )
    assert "<p> 노선, 첫째: 가; 마지막: 다. <p> 노선, 가장 높은, 가장 많은 소요 시간(분): 나, 80;" in korean
    markdown = "# Ferries\n\n| Line | Minutes |\n|---|---|\n| A | 45 |\n| B | 80 |\n| C | 55 |\n"
    document = clean_document(RawDocument(markdown, False, "ferries.md", "utf-8"), table_form="ranked-rows")
    assert document.text == markdown
    assert document.model_text.endswith(
        "<p> Ferries, first: A; last: C. <p> Ferries, highest, most Minutes: B, 80; lowest, least Minutes: A, 45."
    )
    assert [document.model_text[a:b] for _, a, b in document.ranked_units] == [
        "<p> Ferries, first: A; last: C.",
        "<p> Ferries, highest, most Minutes: B, 80; lowest, least Minutes: A, 45.",
    ]
    assert_linked(document)
    assert_tokens_round_trip(document)
