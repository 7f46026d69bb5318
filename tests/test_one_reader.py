"""The evaluation CLI scores the answers users get: ``littlebird.evaluation`` and the app's ``/answer``
path (``app.qa.answer_question``) pick the same span for the same document and question.

The evaluation reads a SQuAD context as it is; the app reads a cleaned Document, whose model text
(tag tokens included) maps back to the shown text. Giving the evaluation the Document's model text
makes both read the same tokens, so the spans must agree once mapped to the shown text.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from app.clean import clean_document
from app.examples import find_example
from app.qa import answer_question
from app.upload import read_pasted_text
from littlebird import evaluation
from littlebird.checkpoint import load_qa_model
from tests.qa_factories import qa_tokenizer, tiny_model_for_tokenizer

CHECKPOINT = Path(__file__).resolve().parents[1] / "assets" / "littlebird-qa"


def example_document():
    example = find_example("en-iss")
    return clean_document(read_pasted_text(example.read_html())), example.questions[0].question


def squad_file(path: Path, context: str, question: str) -> Path:
    qa = {"id": "q0", "question": question, "answers": [{"text": "x", "answer_start": 0}]}
    path.write_text(json.dumps({"data": [{"title": "t", "paragraphs": [{"context": context, "qas": [qa]}]}]}))
    return path


def assert_same_span(document, question, model, tmp_path, **windows):
    tokenizer = qa_tokenizer()
    result = answer_question(document, question, model=model, tokenizer=tokenizer, **windows)
    app = result.answers[0]
    reading = evaluation.predict_answer(model, tokenizer, question, document.model_text, **windows)
    scored = reading.answers[0]
    mapping = np.asarray(document.model_to_text)
    assert (int(mapping[scored.start]), int(mapping[scored.end - 1]) + 1) == (app.start, app.end)
    assert scored.score == pytest.approx(app.score, abs=1e-4) and scored.window == app.window
    # the CLI's loop (evaluate_file) predicts exactly this span's text
    [row] = evaluation.evaluate_file(model, tokenizer, squad_file(tmp_path / "one.json", document.model_text, question),
                                     **windows)
    assert row.prediction == document.model_text[scored.start : scored.end] and row.n_windows == reading.n_windows
    # and records the decision the app shows ("No answer found" below the threshold) with its probability
    assert row.answerable == pytest.approx(result.answerable_probability, abs=1e-6)
    assert row.no_answer == result.no_answer
    return app


def test_a_question_without_an_answer_scores_the_no_answer_decision(tmp_path, monkeypatch):
    document, question = example_document()
    model, tokenizer = tiny_model_for_tokenizer(), qa_tokenizer()
    path = squad_file(tmp_path / "none.json", document.model_text, question)
    data = json.loads(path.read_text())
    data["data"][0]["paragraphs"][0]["qas"][0].update(answers=[], is_impossible=True)
    path.write_text(json.dumps(data))
    read = evaluation.read
    for threshold, says_none in ((0.0, False), (1.0, True)):  # the answerable sigmoid lies strictly inside (0, 1)
        monkeypatch.setattr(evaluation, "read", lambda *a, t=threshold, **k: read(*a, **{**k, "no_answer_threshold": t}))
        [row] = evaluation.evaluate_file(model, tokenizer, path)
        assert row.prediction  # a guess exists either way; only the decision is scored
        assert row.no_answer == says_none and row.f1 == row.em == float(says_none)


def test_app_and_evaluation_agree_on_a_tiny_random_littlebird(tmp_path):
    document, question = example_document()
    model = tiny_model_for_tokenizer()
    assert_same_span(document, question, model, tmp_path, max_length=512, stride=200)  # several windows
    assert_same_span(document, question, model, tmp_path, max_length=None)  # one pass


@pytest.mark.skipif(not (CHECKPOINT / "config.json").exists(), reason="the shipped checkpoint is not here")
def test_app_and_evaluation_agree_on_the_shipped_checkpoint(tmp_path):
    document, question = example_document()
    app = assert_same_span(document, question, load_qa_model(CHECKPOINT), tmp_path)
    assert app.text.strip() and app.text == document.text[app.start : app.end]
