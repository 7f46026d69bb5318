"""The screened reading: the first layers screen every ranked window, the rest of the layers finish the
likeliest few, and the answers are those the full model gives on the windows it finished."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

from littlebird.reader import build_windows, read, run_screened, run_windows, screen_order
from tests.littlebird_factories import tiny_qa_model
from tests.qa_factories import qa_tokenizer
from tests.reader.test_long_documents import NEEDLE, haystack

QUESTION = "Who lit the lamp at Saint Ovidio?"


@functools.lru_cache(maxsize=1)
def screened_model():
    """A seeded three-layer LittleBird for the project's tokenizer, screening after its first layer."""
    tokenizer = qa_tokenizer()
    return tiny_qa_model(4, vocab_size=len(tokenizer), num_hidden_layers=3, screen_layers=1,
                         question_token_id=tokenizer.convert_tokens_to_ids("[QUESTION]"))


def windows(n: int, length: int = 100):
    torch.manual_seed(n)
    rows = [torch.randint(5, 1000, (length - 7 * i,)).tolist() for i in range(n)]
    return build_windows([0, 3], np.concatenate(rows), np.cumsum([0] + [len(r) for r in rows[:-1]]).tolist(), length, 1)


def test_finishing_every_screened_window_gives_the_plain_readings_logits():
    model = screened_model()
    input_ids, attention_mask = windows(4)
    plain = run_windows(model, input_ids, attention_mask, top_k_starts=5, max_answer_length=9)
    screened = run_screened(model, input_ids, attention_mask, finish_windows=4, top_k_starts=5, max_answer_length=9)
    assert screened.finished == screen_order(screened.screen_logits) and sorted(screened.finished) == [0, 1, 2, 3]
    rows = screened.finished
    np.testing.assert_allclose(screened.logits.answerable_logits, plain.answerable_logits[rows], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(screened.logits.top_end_logits, plain.top_end_logits[rows], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(screened.logits.top_start_indices, plain.top_start_indices[rows])
    with torch.inference_mode():
        expected = model.screen(input_ids, attention_mask)[1]
    np.testing.assert_allclose(screened.screen_logits, expected.numpy(), rtol=1e-5, atol=1e-5)


def test_only_the_likeliest_windows_are_finished_and_the_progress_counts_both_passes():
    model = screened_model()
    input_ids, attention_mask = windows(5)
    progress = []
    screened = run_screened(model, input_ids, attention_mask, finish_windows=2, top_k_starts=5, max_answer_length=9,
                            on_window=lambda done, total: progress.append((done, total)))
    assert len(screened.screen_logits) == 5
    assert screened.finished == screen_order(screened.screen_logits)[:2]
    assert progress == [(1, 7), (2, 7), (3, 7), (4, 7), (5, 7), (6, 7), (7, 7)]
    assert len(screened.logits.answerable_logits) == 2


def test_a_passed_deadline_screens_and_finishes_one_window():
    model = screened_model()
    input_ids, attention_mask = windows(4)
    screened = run_screened(model, input_ids, attention_mask, finish_windows=3, top_k_starts=5, max_answer_length=9,
                            deadline=0.0)
    assert len(screened.screen_logits) == 1 and screened.finished == [0]


def test_the_reader_screens_the_ranked_windows_and_answers_from_the_finished_ones():
    tokenizer, model = qa_tokenizer(), screened_model()
    text = haystack(80, needle_at=60)
    reading = read(QUESTION, text, model=model, tokenizer=tokenizer, max_length=128, max_windows=6,
                   finish_windows=2, stop_confidence=None, give_up_below=None)
    records = reading.windows
    screened = [w for w in records if w.screen_logit is not None]
    finished = sorted((w for w in records if w.read is not None), key=lambda w: w.read)
    assert reading.windows_screened == len(screened) == 6 and sorted(w.rank for w in screened) == list(range(6))
    assert reading.n_windows == len(finished) == 2
    # the finished windows are the two the screen found likeliest, likeliest first
    likeliest = sorted(screened, key=lambda w: -w.screen_logit)[:2]
    assert [(w.start, w.end) for w in finished] == [(w.start, w.end) for w in likeliest] == reading.window_token_spans
    assert all(w.answerable_logit is None for w in records if w.read is None)
    best = reading.answers[0]
    assert best.score == finished[best.window].best_span_score == max(w.best_span_score for w in finished)
    assert all(a.text == text[a.start : a.end] for a in reading.answers)
    assert reading.note.startswith(f"Screened 6 of {reading.windows_planned} windows")
    assert "read the 2 likeliest in full" in reading.note
    # the same windows read through every layer give the same answers
    plain = read(QUESTION, text, model=model, tokenizer=tokenizer, max_length=128, max_windows=6,
                 finish_windows=None, stop_confidence=None, give_up_below=None)
    assert plain.windows_screened == 0 and plain.n_windows == 6
    plain_best = {(w.start, w.end): w.best_span_score for w in plain.windows if w.read is not None}
    for w in finished:
        assert w.best_span_score == pytest.approx(plain_best[(w.start, w.end)], abs=1e-4)


def test_a_document_of_few_windows_is_read_whole_without_screening():
    tokenizer, model = qa_tokenizer(), screened_model()
    text = haystack(4, needle_at=3)
    reading = read(QUESTION, text, model=model, tokenizer=tokenizer, max_length=128, finish_windows=3)
    assert 1 < reading.windows_planned <= 3 and reading.windows_screened == 0
    assert reading.n_windows == reading.windows_planned and NEEDLE in text


def test_finish_windows_must_be_positive():
    with pytest.raises(ValueError, match="finish_windows"):
        read(QUESTION, "text", model=screened_model(), tokenizer=qa_tokenizer(), finish_windows=0)
