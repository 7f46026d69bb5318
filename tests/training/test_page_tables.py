"""Table questions on real pages: the answer found once, or once in the question's table, at its offsets in the
model text the app reads; and questions typed as keyword queries."""

from pathlib import Path

import pytest

from littlebird.evaluation import evaluate_file, summarize
from littlebird.reader import ReadingOptions
from littlebird.training.data import take_questions, write_squad
from littlebird.training.page_tables import (
    TABLE_PAGES_FILE,
    clean_page,
    page_article,
    read_table_pages,
    split_table_pages,
    table_question_articles,
)
from littlebird.training.question_forms import search_style, with_search_style
from tests.support.qa import qa_tokenizer, tiny_model_for_tokenizer

SHARED_DATA = Path(__file__).parents[3] / "shared" / "data"

PAGE = """
<p>The club was founded in 1901 in Toulon. It won its first title in 1931.</p>
<h2><span class="mw-headline" id="Seasons">Seasons</span></h2>
<table class="wikitable">
<tr><th>Season</th><th>Club</th><th>Wins</th><th>Losses</th></tr>
<tr><td>1930</td><td>Perpignan</td><td>12</td><td>4</td></tr>
<tr><td>1931</td><td>Toulon</td><td>14</td><td>2</td></tr>
<tr><td>1932</td><td>Lourdes</td><td>14</td><td>3</td></tr>
</table>
<ul><li>Toulon Rugby, founded 1901</li></ul>
"""


def page(questions):
    return {
        "title": "Toy club",
        "url": "",
        "html": PAGE,
        "questions": [
            {"id": f"q{i}", "question": q, "answers": a, "table": "csv/0.csv"} for i, (q, a) in enumerate(questions)
        ],
    }


def test_each_step_keeps_a_unique_span_and_drops_the_rest():
    article, counts = page_article(
        page(
            [
                ("which club won in 1930?", ["Perpignan"]),  # once in the page
                ("when did toulon win?", ["1931"]),  # in a paragraph and in the table: the table's
                ("which clubs won 14?", ["Toulon", "Lourdes"]),  # a list of values is no span
                ("how many wins did lourdes have?", ["14"]),  # twice in the table: ambiguous
                ("how many seasons are listed?", ["3"]),  # a count that stands in the table by chance
                ("who won in 1950?", ["Marseille"]),  # not on the page
            ]
        )
    )
    assert (counts.questions, counts.one_value, counts.in_model_text) == (6, 5, 4)
    assert (counts.once_in_page, counts.once_in_table, counts.ambiguous, counts.computed) == (2, 1, 1, 1)
    assert counts.kept == 2 and counts.kept_in_question_table == 2
    context = article["paragraphs"][0]["context"]
    kept = {qa["id"]: qa for qa in article["paragraphs"][0]["qas"]}
    assert set(kept) == {"q0", "q1"}
    for qa in kept.values():
        answer = qa["answers"][0]
        assert context[answer["answer_start"] : answer["answer_start"] + len(answer["text"])] == answer["text"]
        row_start, row_end = qa["table_row"]
        assert context[row_start:row_end].startswith("<p> Seasons, Season:")
        assert row_start <= answer["answer_start"] < row_end
    assert context[slice(*kept["q1"]["table_row"])] == "<p> Seasons, Season: 1931; Club: Toulon; Wins: 14; Losses: 2."
    assert "Seasons" in context and context.startswith("<h1> Toy club")


def test_training_answers_a_question_that_ranks_rows_from_the_ranked_unit():
    """The ranked unit says which row has the fewest losses; a training question that asks for it learns to answer
    there, a lookup from its row. The dev files keep the row's occurrence either way."""
    questions = [("which club had the fewest losses?", ["Toulon"]), ("which club won in 1930?", ["Perpignan"])]
    trained, counts = page_article(page(questions), prefer_ranked=True)
    kept, _ = page_article(page(questions))
    assert counts.from_ranked_unit == 1
    context = trained["paragraphs"][0]["context"]
    ranked, lookup = trained["paragraphs"][0]["qas"]
    start = ranked["answers"][0]["answer_start"]
    assert context[:start].endswith("<p> Seasons, highest, most Losses: Perpignan, 4; lowest, least Losses: ")
    assert context[start : start + len("Toulon")] == "Toulon"
    row_start, row_end = ranked["table_row"]  # still the row's: the evaluation reads it
    assert context[row_start:row_end] == "<p> Seasons, Season: 1931; Club: Toulon; Wins: 14; Losses: 2."
    for qa in kept["paragraphs"][0]["qas"] + [lookup]:
        row_start, row_end = qa["table_row"]
        assert row_start <= qa["answers"][0]["answer_start"] < row_end


@pytest.fixture(scope="module")
def real_pages():
    path = SHARED_DATA / TABLE_PAGES_FILE
    if not path.exists():
        pytest.skip(f"the shared data is not beside this checkout ({path})")
    return read_table_pages(path)[:40]


def test_every_kept_answer_sits_at_its_offsets_in_the_cleaned_pages_model_text(real_pages):
    articles, counts = table_question_articles(real_pages)
    assert counts.pages == 40 and counts.kept >= 0.3 * counts.questions
    by_title = {page["title"]: page for page in real_pages}
    for article in articles:
        model_text = clean_page(by_title[article["title"]]).model_text
        paragraph = article["paragraphs"][0]
        assert paragraph["context"] == model_text
        for qa in paragraph["qas"]:
            answer = qa["answers"][0]
            start = answer["answer_start"]
            assert model_text[start : start + len(answer["text"])] == answer["text"], qa
            if qa["table_row"] is not None:
                assert qa["table_row"][0] <= start < start + len(answer["text"]) <= qa["table_row"][1]


def test_pages_split_by_title_with_no_page_in_both(real_pages):
    train, dev = split_table_pages(real_pages, 0.3)
    assert len(train) + len(dev) == len(real_pages) and dev and train
    assert not {p["title"] for p in train} & {p["title"] for p in dev}
    assert split_table_pages(real_pages, 0.3) == (train, dev)


def test_the_evaluation_tells_an_answer_from_the_right_table_row(tmp_path):
    article, _ = page_article(page([("which club won in 1930?", ["Perpignan"]), ("when did toulon win?", ["1931"])]))
    path = tmp_path / "dev-en-page-table.json"
    write_squad(path, [article])
    tokenizer = qa_tokenizer()
    predictions = evaluate_file(tiny_model_for_tokenizer(0), tokenizer, path, options=ReadingOptions(max_length=256))
    context = article["paragraphs"][0]["context"]
    rows = {qa["id"]: qa["table_row"] for qa in article["paragraphs"][0]["qas"]}
    for prediction in predictions:
        start, end = rows[prediction.id]
        assert prediction.in_answer_row == (bool(prediction.prediction) and prediction.prediction in context[start:end])
    summary = summarize(predictions)
    assert summary["answer_row_questions"] == 2
    assert summary["answer_row_rate"] == sum(p.in_answer_row for p in predictions) / 2


@pytest.mark.parametrize(
    "question, language, query",
    [
        ("When was the Eiffel Tower completed?", "en", "eiffel tower completed when"),
        ("How many people live in Seoul?", "en", "people live seoul how many"),
        ("What is the name of the river that flows through Paris?", "en", "river flows paris what"),
        ("훈민정음은 언제 반포되었는가?", "ko", "훈민정음 반포 언제"),
        ("세종의 아버지는 누구인가?", "ko", "세종 아버지 누구"),
    ],
)
def test_questions_typed_as_keyword_queries(question, language, query):
    assert search_style(question, language) == query


def test_a_share_of_questions_becomes_keyword_queries_and_answers_stay():
    articles = [
        {
            "title": f"t{i}",
            "paragraphs": [
                {
                    "context": "Paris is in France.",
                    "qas": [
                        {
                            "id": f"{i}",
                            "question": "Where is Paris?",
                            "answers": [{"text": "France", "answer_start": 12}],
                        }
                    ],
                }
            ],
        }
        for i in range(200)
    ]
    changed = with_search_style(articles, "en", 0.3, seed=1)
    questions = [a["paragraphs"][0]["qas"][0] for a in changed]
    typed = sum(q["question"] == "paris where" for q in questions)
    assert 40 <= typed <= 80 and typed + sum(q["question"] == "Where is Paris?" for q in questions) == 200
    assert all(q["answers"] == [{"text": "France", "answer_start": 12}] for q in questions)
    assert (
        with_search_style(articles, "en", 0.3, seed=1) == changed
        and with_search_style(articles, "en", 0.0, 1) is articles
    )
    assert take_questions(changed, 10, seed=0) == take_questions(changed, 10, seed=0)
