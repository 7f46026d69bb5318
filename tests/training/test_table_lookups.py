"""Lookups in tables: a row named by one cell no other row holds, or by two cells each shared with another row,
and another cell of it asked; each answer at its offsets in the model text the app reads, inside the one row that
holds the question's key cells."""

import random
from pathlib import Path

import pytest

from littlebird.documents.clean import clean_document
from littlebird.documents.decode import RawDocument
from littlebird.training.table_lookups import (
    english_lookup_articles,
    html_tables,
    korean_lookup_articles,
    korean_table,
    locate,
    lookups_in_table,
    particle,
)

SHARED_DATA = Path(__file__).parents[3] / "shared" / "data"

HEADER = ["Line", "From", "To", "Departs", "Takes"]
ROWS = [
    ["1", "Avon", "Bree", "06:10", "40 min"],
    ["2", "Avon", "Cole", "06:40", "55 min"],
    ["3", "Bree", "Cole", "07:05", "35 min"],
    ["4", "Bree", "Avon", "07:50", "45 min"],
]
PAGE = (
    "<html><head><title>Buses</title></head><body><h1>Buses</h1>"
    "<p>Four bus lines join the three towns of the valley every morning of the week.</p><h2>Timetable</h2><table>"
    + "<tr>"
    + "".join(f"<th>{h}</th>" for h in HEADER)
    + "</tr>"
    + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in ROWS)
    + "</table><p>Tickets are sold on board.</p></body></html>"
)


def _shared(rows, column, value):
    return sum(row[column] == value for row in rows)


def test_a_two_key_lookup_names_its_row_by_two_cells_each_shared_with_another_row():
    chosen = lookups_in_table(HEADER, ROWS, random.Random(0), per_table=6)
    assert chosen and any(len(item["keys"]) == 2 for item in chosen)
    for item in chosen:
        row = ROWS[item["row"]]
        assert item["target"] not in item["keys"]
        matching = [r for r in ROWS if all(r[k] == row[k] for k in item["keys"])]
        assert matching == [row]  # the keys fix the row
        if len(item["keys"]) == 2:  # and neither alone does
            assert all(_shared(ROWS, k, row[k]) > 1 for k in item["keys"])


def test_the_answer_is_located_in_the_one_row_holding_every_key():
    document = clean_document(RawDocument(PAGE, True, "buses", "utf-8"))
    start, (row_start, row_end) = locate(document, ["Avon", "Cole"], "55 min")
    text = document.model_text
    assert text[start : start + len("55 min")] == "55 min"
    assert "Avon" in text[row_start:row_end] and "Cole" in text[row_start:row_end]
    assert "Line: 2" in text[row_start:row_end]
    assert locate(document, ["Avon"], "55 min") is None  # Avon is in three rows: no one row
    assert locate(document, ["Avon", "Cole"], "35 min") is None  # not in the row the keys name


def test_html_tables_reads_a_plain_table_and_skips_spanning_ones():
    spanning = PAGE.replace("<td>Avon</td>", '<td rowspan="2">Avon</td>', 1)
    assert html_tables(PAGE) == [(HEADER, ROWS)]
    assert html_tables(spanning) == []
    unexpanded = PAGE.replace("<td>Avon</td>", '<td rowspan="{{{rows}}}">Avon</td>', 1)  # a template's leftover
    assert html_tables(unexpanded) == []
    single = PAGE.replace("<td>Avon</td>", '<td colspan="1">Avon</td>', 1)
    assert html_tables(single) == [(HEADER, ROWS)]


@pytest.mark.parametrize(
    ("word", "closed", "open_", "expected"),
    [
        ("동항", "은", "는", "동항은"),
        ("첫차", "은", "는", "첫차는"),
        ("소요 시간", "은", "는", "소요 시간은"),
        ("노선", "이", "가", "노선이"),
        ("요일", "이", "가", "요일이"),
        ("정당", "이", "가", "정당이"),
        ("방송사", "이", "가", "방송사가"),
        ("2022년", "은", "는", "2022년은"),
        ("07:45", "은", "는", "07:45는"),
        ("10:30", "은", "는", "10:30은"),
    ],
)
def test_a_korean_particle_follows_the_last_syllable(word, closed, open_, expected):
    assert particle(word, closed, open_) == expected


def test_a_built_korean_table_has_rows_that_share_keys_but_never_all_of_them():
    rng = random.Random(3)
    for _ in range(30):
        _, header, rows, words = korean_table(
            rng, {"place": ["동항", "남항", "북항", "서항"], "name": ["섬마을", "바다", "등대"]}
        )
        assert len(header) == len(words) >= 3 and 4 <= len(rows) <= 8
        assert len({tuple(row) for row in rows}) == len(rows)
        assert all(len(row) == len(header) for row in rows)


def test_a_built_korean_table_keeps_to_the_kinds_asked_for():
    rng = random.Random(4)
    names = {"place": ["동항", "남항", "북항", "서항"], "name": ["섬마을", "바다", "등대"]}
    headings = {korean_table(rng, names, ["운행 시간표"])[0] for _ in range(20)}
    assert headings == {"운행 시간표"}
    assert len({korean_table(rng, names)[0] for _ in range(60)}) > 1


@pytest.fixture(scope="module")
def data_dir():
    if not (SHARED_DATA / "qa" / "wtq-train-pages.jsonl.gz").exists():
        pytest.skip(f"the shared data is not beside this checkout ({SHARED_DATA})")
    return SHARED_DATA


def _check(articles, count):
    questions = [(a, q) for a in articles for q in a["paragraphs"][0]["qas"]]
    assert len(questions) == count
    two_keys = 0
    for article, question in questions:
        context = article["paragraphs"][0]["context"]
        answer = question["answers"][0]
        start = answer["answer_start"]
        assert context[start : start + len(answer["text"])] == answer["text"]
        row_start, row_end = question["table_row"]
        assert row_start <= start < row_end
        assert all(key in context[row_start:row_end] for key in question["keys"])
        two_keys += len(question["keys"]) == 2
    assert two_keys >= count // 4  # the lookups this teaches: a row fixed by two cells
    return questions


def test_english_lookups_sit_in_the_training_pages_tables(data_dir):
    questions = _check(english_lookup_articles(data_dir, 0.1, 40, seed=1), 40)
    from littlebird.training.page_tables import read_table_pages, split_table_pages

    _, dev = split_table_pages(read_table_pages(data_dir / "qa" / "wtq-train-pages.jsonl.gz"), 0.1)
    dev_titles = {page["title"] for page in dev}
    assert not {article["title"] for article, _ in questions} & dev_titles  # no dev page is read


def test_korean_lookups_sit_in_their_built_tables(data_dir):
    questions = _check(korean_lookup_articles(data_dir, 40, seed=1), 40)
    assert all(any("가" <= ch <= "힣" for ch in q["question"]) for _, q in questions)


def test_held_out_lookups_read_only_the_dev_split(data_dir):
    from littlebird.training.splits import is_dev_title

    english = english_lookup_articles(data_dir, 0.1, 10, seed=7, split="dev")
    korean = korean_lookup_articles(data_dir, 10, seed=7, dev_fraction=0.1)
    assert english and korean
    assert all(is_dev_title(article["title"], 0.1) for article in english + korean)


def test_a_plain_korean_question_asks_by_the_cells_meaning_without_its_header():
    from littlebird.training.table_lookups import _PLAIN, _korean_question

    header = ["노선", "출발", "도착", "첫차", "소요 시간"]
    row = ["나", "동항", "북항", "07:45", "1시간 20분"]
    rng = random.Random(0)
    plain = {_korean_question(header, row, [1, 2], 4, "얼마인가", rng, plain_share=1.0) for _ in range(20)}
    assert plain <= {template.format(k="동항에서 북항까지") for template in _PLAIN["소요 시간"]}
    assert all("소요 시간" not in question for question in plain)
    with_headers = {_korean_question(header, row, [1, 2], 4, "얼마인가", rng) for _ in range(20)}
    assert all("소요 시간" in question for question in with_headers)  # without the share, the header is named


def test_a_route_table_may_name_its_vehicle_in_a_header_and_in_the_question():
    from littlebird.training.table_lookups import _korean_question

    header = ["노선", "출발", "도착", "첫 배", "소요 시간"]
    row = ["나", "동항", "북항", "07:45", "1시간 20분"]
    rng = random.Random(1)
    asked = {_korean_question(header, row, [1, 2], 4, "얼마인가", rng, 1.0, "배") for _ in range(20)}
    assert asked == {
        "동항에서 북항까지 배를 타고 가면 얼마나 걸리는가?",
        "동항에서 북항까지 가는 배는 시간이 얼마나 드는가?",
    }
    first = {_korean_question(header, row, [1, 2], 3, "언제인가", rng, 1.0, "배") for _ in range(20)}
    assert all("배는" in question and "첫 배" not in question for question in first)
    # asked by headers, a question about another column names the vehicle too, one about its own column once
    by_header = {_korean_question(header, row, [1, 2], 4, "얼마인가", rng) for _ in range(40)}
    with_vehicle = {_korean_question(header, row, [1, 2], 4, "얼마인가", rng, 0.0, "배") for _ in range(40)}
    assert not any("배" in question for question in by_header)
    assert all("배" in question and "소요 시간" in question for question in with_vehicle)
    own = {_korean_question(header, row, [1, 2], 3, "언제인가", rng, 0.0, "배") for _ in range(40)}
    assert all(question.count("배") == 1 and "첫 배" in question for question in own)


def test_built_route_tables_name_their_vehicle_only_when_asked(data_dir):
    plain = korean_lookup_articles(data_dir, 150, seed=2, plain_share=0.5)
    named = korean_lookup_articles(data_dir, 150, seed=2, plain_share=0.5, vehicle_share=1.0)
    contexts = [article["paragraphs"][0]["context"] for article in plain]
    assert not any("첫 배" in c or "첫 버스" in c or "첫 열차" in c for c in contexts)
    contexts = [article["paragraphs"][0]["context"] for article in named]
    assert not any("첫차" in c for c in contexts) and any("첫 " in c for c in contexts)
