"""The evaluation CLI scores the answers users get: ``python -m littlebird.evaluation`` and the app's
``/answer`` (``app.asking.answer_document``, the app's default settings) give the same answer and the same
"No answer found" decision for the same document and question; so do ``littlebird.evaluation`` and
``app.qa.answer_question`` at the same window settings.

The evaluation reads a SQuAD context as it is; the app reads a cleaned Document, whose model text
(tag tokens included) maps back to the shown text. Giving the evaluation the Document's model text
makes both read the same tokens, so the spans must agree once mapped to the shown text.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from littlebird import evaluation
from littlebird.app.asking import answer_document
from littlebird.app.examples import find_example
from littlebird.app.qa import answer_question
from littlebird.checkpoint import load_qa_model
from littlebird.documents.clean import clean_document
from littlebird.documents.upload import read_pasted_text
from littlebird.reader import (
    DEFAULT_MAX_WINDOWS,
    DEFAULT_NO_ANSWER_THRESHOLD,
    GLIMPSE_KEEP,
    GLIMPSE_TOKENS,
    MIN_WINDOWS_BEFORE_GIVING_UP,
    MIN_WINDOWS_BEFORE_STOP,
    ReadingOptions,
)
from tests.support.qa import model_answerable_at, qa_tokenizer, tiny_model_for_tokenizer

DEFAULT_THRESHOLD = DEFAULT_NO_ANSWER_THRESHOLD  # the app's with a checkpoint that stores none, as these

CHECKPOINT = Path(__file__).resolve().parents[2] / "assets" / "littlebird-qa"


def example_document():
    example = find_example("en-iss")
    return clean_document(read_pasted_text(example.read_html())), example.questions[0].question


def squad_file(path: Path, context: str, *questions: str) -> Path:
    qas = [
        {"id": f"q{i}", "question": q, "answers": [{"text": "x", "answer_start": 0}]} for i, q in enumerate(questions)
    ]
    path.write_text(json.dumps({"data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]}))
    return path


def near_the_threshold(margin: float) -> tuple[float, float]:
    """Answerable probabilities just below and just above the app's no-answer threshold."""
    assert 0.0 < DEFAULT_THRESHOLD < 1.0, f"a no-answer threshold of {DEFAULT_THRESHOLD} makes the decision constant"
    return DEFAULT_THRESHOLD - margin, DEFAULT_THRESHOLD + margin


def assert_same_span(document, question, model, tmp_path, **windows):
    tokenizer = qa_tokenizer()
    options = ReadingOptions(**windows)
    result = answer_question(document, question, model=model, tokenizer=tokenizer, options=options)
    app = result.answers[0]
    reading = evaluation.predict_answer(model, tokenizer, question, document.model_text, options)
    scored = reading.answers[0]
    mapping = np.asarray(document.model_to_text)
    assert (int(mapping[scored.start]), int(mapping[scored.end - 1]) + 1) == (app.start, app.end)
    assert scored.score == pytest.approx(app.score, abs=1e-4) and scored.window == app.window
    # the CLI's loop (evaluate_file) predicts exactly this span's text
    [row] = evaluation.evaluate_file(
        model, tokenizer, squad_file(tmp_path / "one.json", document.model_text, question), options
    )
    assert row.prediction == document.model_text[scored.start : scored.end] and row.n_windows == reading.n_windows
    # and records the decision the app shows ("No answer found" below the threshold) with its probability
    assert row.answerable == pytest.approx(result.answerable_probability, abs=1e-6)
    assert row.no_answer == result.no_answer
    return app


def test_a_question_without_an_answer_scores_the_apps_no_answer_decision(tmp_path):
    document, question = example_document()
    path = squad_file(tmp_path / "none.json", document.model_text, question)
    data = json.loads(path.read_text())
    data["data"][0]["paragraphs"][0]["qas"][0].update(answers=[], is_impossible=True)
    path.write_text(json.dumps(data))
    for probability in near_the_threshold(0.01):
        [row] = evaluation.evaluate_file(model_answerable_at(probability), qa_tokenizer(), path)
        says_none = probability < DEFAULT_THRESHOLD  # the app's "No answer found"
        assert row.answerable == pytest.approx(probability, abs=1e-6)
        assert row.prediction  # a guess exists either way; only the decision is scored
        assert row.no_answer == says_none and row.f1 == row.em == float(says_none)


def test_the_evaluation_cli_and_answer_agree_at_the_default_settings(tmp_path):
    html = find_example("en-iss").read_html()
    document = clean_document(read_pasted_text(html))  # what /answer reads of the pasted page
    questions = [q.question for q in find_example("en-iss").questions]
    data = squad_file(tmp_path / "questions.json", document.model_text, *questions)
    mapping = np.asarray(document.model_to_text)
    # both sides of the app's threshold (kept inside (0, 1), so a threshold of 0 or 1 shows as a disagreement)
    probabilities = [min(max(DEFAULT_THRESHOLD + step, 0.01), 0.99) for step in (-0.05, 0.05)]
    decisions = set()
    for probability in probabilities:
        checkpoint = tmp_path / f"answerable-{probability:.2f}"
        model_answerable_at(probability).save_pretrained(checkpoint)
        qa_tokenizer().save_pretrained(checkpoint)
        output = tmp_path / f"evaluation-{probability:.2f}.json"
        evaluation.main(["--model", str(checkpoint), "--data", str(data), "--output", str(output)])
        rows = json.loads(output.read_text())["predictions"]
        assert [row["question"] for row in rows] == questions
        for row in rows:
            payload = answer_document(html, row["question"], checkpoint=str(checkpoint))
            best = payload["n_best"][0]
            in_model_text = np.flatnonzero((mapping >= best["start"]) & (mapping < best["end"]))
            assert row["prediction"] == document.model_text[in_model_text[0] : in_model_text[-1] + 1]
            assert row["no_answer"] == payload["no_answer"]
            decisions.add(row["no_answer"])
            assert row["answerable"] == pytest.approx(payload["answerable_probability"], abs=1e-3)
            assert (row["n_tokens"], row["n_windows"]) == (payload["n_tokens"], payload["n_windows"])
        assert rows[0]["n_windows"] > 1  # the default windows, more than one
    assert decisions == {True, False}  # "No answer found" below the threshold, an answer above it


def test_app_and_evaluation_agree_on_a_tiny_random_littlebird(tmp_path):
    document, question = example_document()
    model = tiny_model_for_tokenizer()
    assert_same_span(document, question, model, tmp_path, max_length=512, stride=200)  # several windows
    assert_same_span(document, question, model, tmp_path, max_length=None)  # one pass


def test_app_and_evaluation_agree_on_the_shipped_checkpoint(tmp_path):
    document, question = example_document()
    app = assert_same_span(document, question, load_qa_model(CHECKPOINT), tmp_path)
    assert app.text.strip() and app.text == document.text[app.start : app.end]


def test_the_evaluation_cli_stops_at_a_confident_window_as_the_app_does_unless_told_not_to(tmp_path):
    document, question = example_document()
    data = squad_file(tmp_path / "one.json", document.model_text, question)
    checkpoint = tmp_path / "sure"
    model_answerable_at(0.95).save_pretrained(checkpoint)  # every window answerable with 0.95
    qa_tokenizer().save_pretrained(checkpoint)
    windows_read = {}
    for stop, glimpse in (("0.9", "none"), ("none", "none"), ("none", str(GLIMPSE_TOKENS))):
        output = tmp_path / f"stop-{stop}-{glimpse}.json"
        summary = evaluation.main(
            [
                "--model",
                str(checkpoint),
                "--data",
                str(data),
                "--max-length",
                "128",
                "--stop-confidence",
                stop,
                "--glimpse",
                glimpse,
                "--output",
                str(output),
            ]
        )
        [row] = json.loads(output.read_text())["predictions"]
        windows_read[stop, glimpse] = row["n_windows"]
        assert summary["stop_confidence"] == (None if stop == "none" else 0.9)
    # read in turn, the rule stops at two; without it, the ten best are read; with glimpses, the likeliest few
    assert windows_read == {
        ("0.9", "none"): MIN_WINDOWS_BEFORE_STOP,
        ("none", "none"): DEFAULT_MAX_WINDOWS,
        ("none", str(GLIMPSE_TOKENS)): GLIMPSE_KEEP,
    }
    result = answer_question(
        document,
        question,
        model=model_answerable_at(0.95),
        tokenizer=qa_tokenizer(),
        options=ReadingOptions(max_length=128),
    )
    assert result.n_windows == MIN_WINDOWS_BEFORE_STOP < result.windows_planned  # the app's default rule is the CLI's

    doubtful = tmp_path / "doubtful"
    model_answerable_at(0.02).save_pretrained(doubtful)  # no window shows a sign of the answer
    qa_tokenizer().save_pretrained(doubtful)
    for low, expected in (("0.05", MIN_WINDOWS_BEFORE_GIVING_UP), ("none", DEFAULT_MAX_WINDOWS)):
        output = tmp_path / f"low-{low}.json"
        evaluation.main(
            [
                "--model",
                str(doubtful),
                "--data",
                str(data),
                "--max-length",
                "128",
                "--give-up-below",
                low,
                "--glimpse",
                "none",
                "--output",
                str(output),
            ]
        )  # the windows read in turn
        assert json.loads(output.read_text())["predictions"][0]["n_windows"] == expected
    result = answer_question(
        document,
        question,
        model=model_answerable_at(0.02),
        tokenizer=qa_tokenizer(),
        options=ReadingOptions(max_length=128),
    )
    assert result.n_windows == MIN_WINDOWS_BEFORE_GIVING_UP and "none of them seemed to hold the answer" in result.note
