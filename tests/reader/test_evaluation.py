"""Evaluation metrics: SQuAD v1.1 and KorQuAD normalisation, length buckets, span decoding, and the tables
of result files (comparisons between result sets: test_comparison.py)."""

import json
from dataclasses import asdict

import pytest

from littlebird.checkpoint import load_qa_model
from littlebird.evaluation import (
    Prediction,
    best_scores,
    choose_threshold,
    format_summary,
    korquad_scores,
    length_bucket,
    markdown_report,
    metric_language,
    normalize_korquad,
    normalize_squad,
    squad_scores,
    summarize,
    threshold_report,
)
from littlebird.evaluation import main as evaluation_main
from littlebird.reader import DEFAULT_NO_ANSWER_THRESHOLD, DEFAULT_READING, ReadingOptions, no_answer_threshold, read
from tests.support.qa import model_answerable_at, qa_tokenizer


def test_squad_normalisation_follows_the_official_script():
    assert normalize_squad("The  Cat, sat!") == "cat sat"
    assert normalize_squad("An apple a day") == "apple day"
    assert squad_scores("the Eiffel Tower.", "Eiffel Tower") == (1.0, 1.0)
    em, f1 = squad_scores("Eiffel Tower in Paris", "the Eiffel Tower")
    assert em == 0.0 and f1 == pytest.approx(2 * (2 / 4) * 1 / (2 / 4 + 1))


def test_korquad_f1_is_character_level_without_spaces():
    assert normalize_korquad("《경영의 실제》") == "경영의 실제"
    assert korquad_scores("《경영의 실제》", "경영의 실제") == (1.0, 1.0)
    # spacing does not matter to F1, only to EM
    em, f1 = korquad_scores("경영의실제", "경영의 실제")
    assert em == 0.0 and f1 == 1.0
    em, f1 = korquad_scores("서울특별시", "서울")  # 2 of 5 predicted characters, all 2 gold ones
    assert f1 == pytest.approx(2 * 0.4 * 1.0 / 1.4)


def test_best_scores_take_the_best_gold_answer_and_the_question_language():
    assert best_scores("Denver Broncos", ["Broncos", "Denver Broncos"], "en") == (1.0, 1.0)
    assert best_scores("", ["x"], "en") == (0.0, 0.0)
    assert metric_language("현대적 인사조직관리의 시발점이 된 책은?") == "ko"
    assert metric_language("Who wrote it?") == "en"
    assert metric_language("세종 Sejong: who was he?") == "ko"  # any Hangul: KorQuAD's normalisation


@pytest.mark.parametrize(
    "n, bucket",
    [(1, "<=512"), (512, "<=512"), (513, "512-2K"), (2048, "512-2K"), (4000, "2K-4K"), (8192, "4K-8K"), (9000, ">8K")],
)
def test_length_buckets(n, bucket):
    assert length_bucket(n) == bucket


def test_summary_splits_by_language_and_length():
    rows = [
        Prediction("a", "q", "x", ["x"], "en", 100, 1, 0.1, 1.0, 1.0),
        Prediction("b", "q", "y", ["z"], "ko", 3000, 1, 0.3, 0.0, 0.0),
    ]
    summary = summarize(rows)
    assert summary["overall"] == {"n": 2, "em": 50.0, "f1": 50.0}
    assert summary["by_language"]["ko"]["f1"] == 0.0 and summary["by_length"]["<=512"]["em"] == 100.0
    assert summary["latency_seconds"]["mean"] == pytest.approx(0.2)
    assert summary["no_answer_rate"] == 0.0


def test_report_table_has_the_no_answer_column_and_reads_older_files(tmp_path):
    rows = [Prediction("a", "q", "x", ["x"], "en", 100, 1, 0.1, 1.0, 1.0, 0.3, True)]
    new, old = tmp_path / "new.json", tmp_path / "old.json"
    new.write_text(json.dumps({"summary": {**summarize(rows), "model": "m", "data": "dev-en-paragraph.json"}}))
    older = {**summarize(rows), "model": "m", "data": "dev-en-article.json"}
    del older["no_answer_rate"]  # result files written before the column existed
    old.write_text(json.dumps({"summary": older}))
    header, _, first, second = markdown_report([new, old]).splitlines()
    assert header.count("|") == first.count("|") == second.count("|")
    assert "| 100.0% |" in first and "| 1 | 100.0 | 100.0 | <=512: 100.0 (1) |  | 0.10 s |" in second


def test_summary_counts_the_no_answer_decisions_the_app_would_show():
    rows = [
        Prediction(str(i), "q", "x", ["x"], "en", 100, 1, 0.1, 1.0, 1.0, answerable, answerable < 0.5)
        for i, answerable in enumerate([0.9, 0.2, 0.7, 0.4])
    ]
    summary = summarize(rows)
    assert summary["no_answer_rate"] == 0.5
    assert "'no answer' decisions (answerable below the app's threshold): 50.0%" in format_summary(summary, "t")


def write_results(path, answers, probabilities, threshold=0.5):
    """A result file of questions with ``answers`` (right where answered), one per answerable probability (None:
    no span at all), read at ``threshold``."""
    rows = [
        Prediction(
            str(i),
            "q",
            "x" if a is not None else "",
            answers,
            "en",
            100,
            1,
            0.1,
            float(bool(answers)),
            float(bool(answers)),
            a or 0.0,
            a is None or a < threshold,
        )
        for i, a in enumerate(probabilities)
    ]
    summary = {**summarize(rows), "model": "m", "data": f"{path.stem}.json", "no_answer_threshold": threshold}
    path.write_text(json.dumps({"summary": summary, "predictions": [asdict(r) for r in rows]}))
    return path


def test_threshold_table_counts_no_answer_decisions_and_what_is_shown_at_each_threshold(tmp_path):
    answered = write_results(tmp_path / "dev-en-paragraph.json", ["x"], [0.9, 0.45, 0.15, 0.05])
    impossible = write_results(tmp_path / "dev-en-near-miss.json", [], [0.6, 0.3, None, 0.01])
    header, _, first, second, *notes = threshold_report([answered, impossible], [0.1, 0.2, 0.5]).splitlines()
    assert header.endswith("| at 0.1 | at 0.2 | at 0.5 |")
    # a "no answer" is a miss on a question with an answer and right on one without
    assert first == "| m | dev-en-paragraph | 4 | yes | 25.0% / 75.0 | 50.0% / 50.0 | 75.0% / 25.0 |"
    assert second == "| m | dev-en-near-miss | 4 | no | 50.0% / 50.0 | 50.0% / 50.0 | 75.0% / 75.0 |"
    assert (
        notes[-1] == "Chosen threshold: no real-page file among the results: the threshold they were read with stays."
    )
    # the rate at the app's threshold is the one the evaluation recorded
    assert json.loads(answered.read_text())["summary"]["no_answer_rate"] == 0.75
    older = tmp_path / "older.json"
    older.write_text(
        json.dumps(
            {"summary": {"model": "m", "data": "d.json"}, "predictions": [{"prediction": "x", "answers": ["x"]}]}
        )
    )
    with pytest.raises(ValueError, match="evaluate it again"):
        threshold_report([older], [0.5])


def test_the_threshold_chosen_raises_the_real_pages_and_keeps_the_unanswerable_files_within_two_points(tmp_path):
    pages = write_results(tmp_path / "dev-en-page-table.json", ["x"], [0.45, 0.35, 0.9, 0.25])
    # 100 questions without an answer: at 0.3 one more is answered (99.0, within 2 points), at 0.2 ten more
    unanswerable = write_results(tmp_path / "dev-en-unanswerable.json", [], [0.05] * 90 + [0.25] * 9 + [0.4])
    chosen, why = choose_threshold([pages, unanswerable], [0.1, 0.2, 0.3, 0.4, 0.5])
    assert chosen == 0.3 and "rises to 75.0" in why  # 0.2 and 0.1 would answer all four, but lose 10 points
    # a file of another real page that a threshold makes worse rules it out: 0.3 now answers its question
    worse = write_results(tmp_path / "dev-en-page-shaped.json", [], [0.35])
    assert choose_threshold([pages, unanswerable, worse], [0.1, 0.2, 0.3, 0.4, 0.5])[0] == 0.4
    mixed = write_results(tmp_path / "dev-ko-paragraph.json", ["x"], [0.9], threshold=0.7)
    with pytest.raises(ValueError, match="different thresholds"):
        choose_threshold([pages, mixed], [0.5])


def test_the_chosen_threshold_is_stored_with_the_checkpoint_and_becomes_its_default(tmp_path, capsys):
    checkpoint = tmp_path / "checkpoint"
    model_answerable_at(0.4).save_pretrained(checkpoint)
    assert no_answer_threshold(load_qa_model(checkpoint), DEFAULT_READING) == DEFAULT_NO_ANSWER_THRESHOLD
    pages = write_results(tmp_path / "dev-en-page-table.json", ["x"], [0.45, 0.35, 0.9, 0.25])
    unanswerable = write_results(tmp_path / "dev-en-unanswerable.json", [], [0.05] * 90 + [0.25] * 9 + [0.4])
    evaluation_main(
        ["--report", str(pages), str(unanswerable), "--thresholds", "0.2", "0.3", "--store", str(checkpoint)]
    )
    assert f"stored no_answer_threshold 0.3 in {checkpoint / 'config.json'}" in capsys.readouterr().out
    with pytest.raises(SystemExit):  # nothing to choose from: refused, not silently ignored
        evaluation_main(["--report", str(pages), "--store", str(checkpoint)])
    model = load_qa_model(checkpoint)
    assert no_answer_threshold(model, DEFAULT_READING) == 0.3
    assert no_answer_threshold(model, ReadingOptions(no_answer_threshold=0.6)) == 0.6  # a reading's own wins
    # the reading says "no answer" by the checkpoint's threshold: 0.4 is above 0.3, below 0.5
    reading = read("When?", "It opened in 1999.", model=model, tokenizer=qa_tokenizer())
    assert reading.answerable_probability == pytest.approx(0.4, abs=1e-3) and not reading.no_answer
    assert read(
        "When?",
        "It opened in 1999.",
        model=model,
        tokenizer=qa_tokenizer(),
        options=ReadingOptions(no_answer_threshold=0.5),
    ).no_answer
