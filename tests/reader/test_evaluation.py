"""Evaluation metrics: SQuAD v1.1 and KorQuAD normalisation, length buckets, span decoding, and the tables
of result files (comparisons between result sets: test_comparison.py)."""

import json
from dataclasses import asdict

import pytest

from littlebird.evaluation import (
    Prediction,
    best_scores,
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


def test_threshold_table_counts_no_answer_decisions_at_each_threshold(tmp_path):
    def write(name, answers, probabilities):
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
                0.0,
                0.0,
                a or 0.0,
                a is None or a < 0.5,
            )
            for i, a in enumerate(probabilities)
        ]
        path = tmp_path / f"{name}.json"
        summary = {**summarize(rows), "model": "m", "data": f"{name}.json"}
        path.write_text(json.dumps({"summary": summary, "predictions": [asdict(r) for r in rows]}))
        return path

    answered = write("dev-en-paragraph", ["x"], [0.9, 0.45, 0.15, 0.05])
    impossible = write("dev-en-near-miss", [], [0.6, 0.3, None, 0.01])  # None: no span at all
    header, _, first, second = threshold_report([answered, impossible], [0.1, 0.2, 0.5]).splitlines()
    assert header.endswith("| at 0.1 | at 0.2 | at 0.5 |")
    assert first == "| m | dev-en-paragraph | 4 | yes | 25.0% | 50.0% | 75.0% |"
    assert second == "| m | dev-en-near-miss | 4 | no | 50.0% | 50.0% | 75.0% |"
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
