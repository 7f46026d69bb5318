"""The one reader: layout, question cap, windows (and one pass), span decoding and merging, model limits.

Decoding rules run on hand-made logits; the teacher and a tiny random LittleBird run the whole
reader. The baselines go through it in ``test_baselines.py``.
"""

import dataclasses
from dataclasses import replace

import numpy as np
import pytest
import torch
from transformers import BertConfig, BertModel

from littlebird.answer_text import tidy_answer_span
from littlebird.conversion import littlebird_config_from_bert
from littlebird.reader import (
    MAX_QUESTION_TOKENS,
    MIN_WINDOWS_BEFORE_GIVING_UP,
    MIN_WINDOWS_BEFORE_STOP,
    Bm25Ranking,
    Candidate,
    ReadingContext,
    ReadingOptions,
    ReadingStopped,
    WindowLogits,
    build_windows,
    confident_enough,
    decode,
    end_log_probabilities,
    merge_candidates,
    nothing_found,
    plan_windows,
    question_prefix,
    read,
    run_windows,
    span_candidates,
    special_ids,
    tokenize_questions,
    window_capacity,
    window_length,
    window_offsets,
    window_starts,
)
from littlebird.training.teacher_model import TeacherForQuestionAnswering
from tests.support.qa import model_answerable_at, qa_tokenizer, tiny_model_for_tokenizer

TEXT = (
    "Lake Baikal is a rift lake in Siberia. It is the deepest lake in the world, at 1,642 metres. "
    "세종대왕이 훈민정음을 1443년에 만들었다. "
) * 12


@pytest.fixture(scope="module")
def tokenizer():
    return qa_tokenizer()


def test_layout_and_the_one_question_cap(tokenizer):
    ids = special_ids(tokenizer)
    assert ids.question == tokenizer.convert_tokens_to_ids("[QUESTION]") and ids.cls == tokenizer.cls_token_id
    long_question = " ".join(["why"] * 200) + "?"
    tokens = tokenize_questions([long_question], tokenizer)[0]
    assert len(tokens) > MAX_QUESTION_TOKENS
    prefix = question_prefix(tokens, ids, 8192)
    assert prefix[:2] == [ids.cls, ids.question] and prefix[-1] == ids.sep
    assert prefix[2:-1] == tokens[:MAX_QUESTION_TOKENS]
    assert len(question_prefix(tokens, ids, 128)) == 128 // 4 + 3  # a short window keeps room for the document
    assert len(question_prefix(tokens, ids, None)) == MAX_QUESTION_TOKENS + 3
    # a question spelling a special token stays text
    spelled = tokenize_questions(["What is [QUESTION] <p>?"], tokenizer)[0]
    assert not set(spelled) & set(tokenizer.all_special_ids)


def test_windows_are_spread_evenly_and_one_pass_is_one_window():
    assert window_starts(100, 200, 50) == [0]
    assert window_starts(32_748, 8_172, 4_096) == [0, 4_096, 8_192, 12_288, 16_384, 20_480, 24_576]
    starts = window_starts(32_768, 8_180, 4_096)  # 12 tokens past six strides: one more window, spread evenly
    assert len(starts) == 8 and starts[-1] == 32_768 - 8_180 and max(b - a for a, b in zip(starts, starts[1:])) <= 4_096
    assert window_starts(10, 4, 100) == [0, 3, 6]  # a stride wider than the window is narrowed
    assert window_capacity(50_000, 20, None) == 50_000 and window_capacity(50_000, 20, 8192) == 8172
    ids, mask = build_windows([0, 9, 9, 2], np.arange(10, 30), [0, 8], 12, 1)
    assert ids[0].tolist() == [0, 9, 9, 2, *range(10, 22)] and ids[1].tolist() == [0, 9, 9, 2, *range(18, 30)]
    ids, mask = build_windows([0, 9, 2], np.arange(10, 15), [0], 12, 1)  # a short document: no padding
    assert ids.shape == (1, 8) and mask.all()


def test_decoding_rules_on_fake_logits():
    # Tokens 0..5 of a document whose token 2 is a tag token; prefix of 3 tokens.
    text = "alpha beta gamma delta"
    spans = np.array([[0, 5], [6, 10], [-1, -1], [11, 16], [17, 22], [17, 22]])
    end_logits = np.full((1, 3, 3), -np.inf)
    end_logits[0, 0] = [1.0, 2.0, 0.5]  # spans (0,0), (0,1); (0,2) ends on the tag token: no text
    end_logits[0, 1] = [8.0, 8.0, 8.0]  # a start inside the question: never an answer
    end_logits[0, 2] = [0.0, -np.inf, -np.inf]  # start on the tag token: no text
    logits = WindowLogits(np.array([[3, 1, 5]]), np.array([[5.0, 9.0, 4.0]]), end_logits, np.array([0.0]))
    found = span_candidates(logits, spans, 3, [0], limit=10, end_depends_on_start=False)  # raw sums
    assert [(c.start, c.end) for c in found] == [(0, 10), (0, 5)]
    assert [c.score for c in found] == [7.0, 6.0]
    answers = merge_candidates(found + [Candidate(6.5, 0, 10, 1)], text, n_best=5)
    assert [(a.text, a.score, a.window) for a in answers] == [("alpha beta", 7.0, 0), ("alpha", 6.0, 0)]
    assert sum(a.probability for a in answers) == pytest.approx(1.0)
    assert answers[0].probability == pytest.approx(1 / (1 + np.exp(-1.0)))


def test_end_logits_are_normalised_per_start_where_the_end_depends_on_it():
    # "Robert Mulligan": the right start (token 0, logit 5) has spread-out end logits; a wrong start
    # inside the name (token 1, logit 2.6) has one high end logit. Raw sums pick the wrong start.
    text = "Robert Mulligan directed"
    spans = np.array([[0, 6], [7, 15], [16, 24]])
    end_logits = np.full((1, 2, 2), -np.inf)
    end_logits[0, 0] = [0.0, 2.5]  # (0, 0) "Robert", (0, 1) "Robert Mulligan"
    end_logits[0, 1] = [6.8, -np.inf]  # (1, 1) "Mulligan"; its second end is past the window
    logits = WindowLogits(np.array([[0, 1]]), np.array([[5.0, 2.6]]), end_logits, np.array([0.0]))
    raw = span_candidates(logits, spans, 0, [0], limit=3, end_depends_on_start=False)
    assert [text[c.start : c.end] for c in raw][0] == "Mulligan"
    normalised = span_candidates(logits, spans, 0, [0], limit=3)
    assert [text[c.start : c.end] for c in normalised] == ["Robert Mulligan", "Mulligan", "Robert"]
    assert normalised[0].score == pytest.approx(5.0 + 2.5 - np.log(np.exp(0.0) + np.exp(2.5)))
    assert normalised[1].score == pytest.approx(2.6)  # its only allowed end: probability 1
    probabilities = end_log_probabilities(end_logits)
    assert np.exp(probabilities[0, 0]).sum() == pytest.approx(1.0) and probabilities[0, 1, 1] == -np.inf
    assert np.isneginf(end_log_probabilities(np.full((1, 1, 3), -np.inf))).all()  # no allowed end: no pair


def test_windows_are_ranked_by_normalised_starts_plus_their_answerable_logit():
    # Two windows over "one two three four"; window 0 (tokens 0-1) has the higher raw start logit
    # but spreads its start mass and says it holds no answer; window 1 (tokens 2-3) is sure.
    text = "one two three four"
    spans = np.array([[0, 3], [4, 7], [8, 13], [14, 18]])
    end_logits = np.array([[[0.0]], [[0.0]]])  # one end per start: the start token itself
    logits = WindowLogits(
        np.array([[0], [0]]),
        np.array([[6.0], [4.0]]),
        end_logits,
        np.array([-3.0, 2.0]),
        np.array([6.0 + np.log(20.0), 4.0]),
    )
    raw = span_candidates(logits, spans, 0, [0, 2], limit=2)
    assert [text[c.start : c.end] for c in raw] == ["one", "three"]
    ranked = span_candidates(logits, spans, 0, [0, 2], limit=2, rank_windows=True)
    assert [(text[c.start : c.end], c.window) for c in ranked] == [("three", 1), ("one", 0)]
    assert ranked[0].score == pytest.approx(0.0 + 2.0) and ranked[1].score == pytest.approx(-np.log(20.0) - 3.0)
    # Without stored normalisers, the top starts' log-sum-exp stands in.
    bare = WindowLogits(logits.top_start_indices, logits.top_start_logits, end_logits, logits.answerable_logits)
    assert window_offsets(bare) == pytest.approx([-3.0 - 6.0, 2.0 - 4.0])
    # One window: ranking and probabilities are those of the raw rule.
    one = WindowLogits(
        np.array([[0, 1]]), np.array([[3.0, 2.0]]), np.zeros((1, 2, 1)), np.array([-1.5]), np.array([7.0])
    )
    plain, shifted = (
        merge_candidates(span_candidates(one, spans, 0, [0], limit=4, rank_windows=r), text, 4) for r in (False, True)
    )
    assert [a.text for a in plain] == [a.text for a in shifted] == ["one", "two"]
    assert [a.probability for a in plain] == pytest.approx([a.probability for a in shifted])


def test_a_lexical_prior_moves_the_choice_between_windows_by_its_weight():
    spans = np.array([[0, 3], [4, 7], [8, 13], [14, 18]])  # the words of "one two three four"
    end_logits = np.array([[[0.0]], [[0.0]]])
    logits = WindowLogits(
        np.array([[0], [0]]), np.array([[4.0], [4.0]]), end_logits, np.array([1.0, 0.5]), np.array([4.0, 4.0])
    )
    plain = span_candidates(logits, spans, 0, [0, 2], limit=2, rank_windows=True)
    assert [c.window for c in plain] == [0, 1]  # the model prefers window 0 by 0.5
    small = span_candidates(logits, spans, 0, [0, 2], limit=2, rank_windows=True, window_prior=np.array([0.0, 0.4]))
    large = span_candidates(logits, spans, 0, [0, 2], limit=2, rank_windows=True, window_prior=np.array([0.0, 0.6]))
    assert [c.window for c in small] == [0, 1] and [c.window for c in large] == [1, 0]
    assert large[0].score == pytest.approx(plain[1].score + 0.6)


def test_run_windows_keeps_each_windows_start_log_sum_exp(tokenizer):
    model = tiny_model_for_tokenizer().eval()
    prefix = question_prefix(tokenize_questions(["How deep is Lake Baikal?"], tokenizer)[0], special_ids(tokenizer), 64)
    document = np.array(tokenizer(TEXT, add_special_tokens=False)["input_ids"][:150])
    ids, mask = build_windows(prefix, document, [0, 40, 100], 50, special_ids(tokenizer).pad)
    mask[2, -7:] = 0  # a padded window: its padding adds nothing
    logits = run_windows(model, ids, mask, top_k_starts=5, max_answer_length=8, batch_size=2)
    with torch.inference_mode():
        for w in range(3):
            n = int(mask[w].sum())
            start = model(input_ids=ids[w : w + 1, :n], attention_mask=mask[w : w + 1, :n]).start_logits.float()
            assert logits.start_log_normalizers[w] == pytest.approx(float(torch.logsumexp(start, -1)), abs=1e-3)
    assert np.all(logits.start_log_normalizers >= logits.top_start_logits.max(axis=1))


def test_run_windows_hands_decoding_minus_infinity_for_impossible_ends(tokenizer):
    # The model marks ends it does not allow with its dtype's minimum; decoding must see them as -inf,
    # or a window with few allowed spans would offer spans past its end scored -3.4e38.
    model = tiny_model_for_tokenizer().eval()
    prefix = question_prefix(tokenize_questions(["How deep is Lake Baikal?"], tokenizer)[0], special_ids(tokenizer), 64)
    document = np.array(tokenizer(TEXT, add_special_tokens=False)["input_ids"][:60])
    ids, mask = build_windows(prefix, document, [0], 40, special_ids(tokenizer).pad)
    mask[0, -30:] = 0  # mostly padding: most ends are impossible
    with torch.inference_mode():
        raw = model(input_ids=ids, attention_mask=mask, top_k_starts=5, max_answer_length=8).top_end_logits
    assert (raw.float() <= torch.finfo(torch.float32).min / 2).any()  # what the model hands over
    logits = run_windows(model, ids, mask, top_k_starts=5, max_answer_length=8)
    ends = logits.top_end_logits
    assert np.isneginf(ends).any() and np.all(ends[np.isfinite(ends)] > -1e30)
    spans = np.stack([np.arange(60) * 2, np.arange(60) * 2 + 1], axis=1)
    candidates = span_candidates(logits, spans, len(prefix), [0], limit=1000)
    assert candidates and all(c.score > -1e30 for c in candidates)


def test_tidy_hook_merges_spans_that_tidy_to_the_same_answer():
    text = "세종대왕이 만들었다. 세종대왕"
    candidates = [Candidate(3.0, 0, 5, 0), Candidate(2.0, 0, 4, 1), Candidate(1.0, 12, 16, 1)]
    plain = merge_candidates(candidates, text, n_best=5)
    tidied = merge_candidates(candidates, text, n_best=5, tidy=tidy_answer_span)
    assert [a.text for a in plain] == ["세종대왕이", "세종대왕", "세종대왕"]
    assert [(a.text, a.start, a.window) for a in tidied] == [("세종대왕", 0, 0), ("세종대왕", 12, 1)]


def test_one_pass_and_windows_on_a_tiny_littlebird(tokenizer):
    model = tiny_model_for_tokenizer()
    question = "How deep is Lake Baikal?"
    one_pass = read(question, TEXT, model=model, tokenizer=tokenizer, options=ReadingOptions(max_length=None, n_best=3))
    passes = []
    windowed = read(
        question,
        TEXT,
        model=model,
        tokenizer=tokenizer,
        on_pass=passes.append,
        options=ReadingOptions(max_length=128, stride=48, n_best=3, max_windows=None),
    )
    assert passes == ["read"]  # no glimpses without max_windows: one announcement, before the windows
    n = one_pass.n_tokens
    assert n > 400 and one_pass.window_token_spans == [(0, n)] and windowed.n_tokens == n
    assert windowed.n_windows > 8 and max(end for _, end in windowed.window_token_spans) == n
    for reading in (one_pass, windowed):
        assert 1 <= len(reading.answers) <= 3 and set(reading.timings) == {"tokenize", "rank", "model", "decode"}
        assert all(a.text == TEXT[a.start : a.end] and a.text.strip() for a in reading.answers)
        assert 0.0 < reading.answerable_probability < 1.0
    empty = read(question, "  \n ", model=model, tokenizer=tokenizer)
    assert empty.answers == [] and empty.no_answer and empty.n_windows == 0


def test_decode_gives_a_script_with_the_windows_logits_the_readers_answers(tokenizer):
    model = tiny_model_for_tokenizer()
    question = "How deep is Lake Baikal?"
    options = ReadingOptions(max_length=128, stride=48, max_windows=None, n_best=3)
    reading = read(question, TEXT, model=model, tokenizer=tokenizer, options=options, tidy=tidy_answer_span)
    plan = plan_windows(question, TEXT, model=model, tokenizer=tokenizer, options=options)  # the reader's steps ...
    Bm25Ranking().run(plan, ReadingContext(model, tokenizer, options))
    input_ids, attention_mask = build_windows(
        plan.prefix, plan.encoded.input_ids, plan.starts, plan.capacity, plan.ids.pad
    )
    logits = run_windows(
        model, input_ids, attention_mask, top_k_starts=options.top_k_starts, max_answer_length=options.max_answer_length
    )  # ... by hand, as a script takes them
    decoded = decode(logits, plan.encoded.spans, len(plan.prefix), plan.starts, TEXT, n_best=3, tidy=tidy_answer_span)
    assert reading.n_windows == len(plan.order) > 8 and decoded.answers == reading.answers
    assert decoded.answerable_probability == reading.answerable_probability
    assert [w.best_span_score for w in sorted(reading.windows, key=lambda w: w.read)] == [
        None if not np.isfinite(score) else score for score in decoded.best_span_scores
    ]
    assert [a.text for a in decode(logits.head(2), plan.encoded.spans, len(plan.prefix), plan.starts[:2], TEXT).answers]


class CountingModel(torch.nn.Module):
    """Wraps a model and counts the windows it is asked to read."""

    def __init__(self, model):
        super().__init__()
        self.model, self.windows = model, 0

    def forward(self, input_ids, **kwargs):
        self.windows += len(input_ids)
        return self.model(input_ids=input_ids, **kwargs)


def test_a_spent_time_budget_stops_between_windows_and_says_so(tokenizer):
    model = CountingModel(tiny_model_for_tokenizer())
    question = "How deep is Lake Baikal?"
    progress = []
    full = read(
        question,
        TEXT,
        model=model,
        tokenizer=tokenizer,
        on_window=lambda done, total: progress.append((done, total)),
        options=ReadingOptions(max_length=128, stride=48, max_windows=None),
    )
    assert full.note is None and full.n_windows == full.windows_planned == model.windows > 8
    assert progress == [(i, full.n_windows) for i in range(1, full.n_windows + 1)]

    model.windows = 0
    cut = read(
        question,
        TEXT,
        model=model,
        tokenizer=tokenizer,
        options=ReadingOptions(max_length=128, stride=48, time_budget=0.0, max_windows=None),
    )
    assert model.windows == 1  # the first window; no second window
    assert cut.n_windows == 1 and cut.windows_planned == full.n_windows
    assert cut.window_token_spans == full.window_token_spans[:1]
    read_tokens = full.window_token_spans[0][1] - full.window_token_spans[0][0]
    assert cut.note.startswith(f"Read 1 of {full.n_windows} windows ({read_tokens:,} of {full.n_tokens:,} tokens)")
    assert "the time for one question (0 s) ran out" in cut.note
    assert cut.answers and all(a.window == 0 and a.end <= len(TEXT) for a in cut.answers)


def test_a_confident_window_leaves_the_rest_of_the_ranked_windows_unread(tokenizer):
    question = "How deep is Lake Baikal?"
    sure = CountingModel(model_answerable_at(0.95))
    options = dict(model=sure, tokenizer=tokenizer, tidy=tidy_answer_span)
    turn = ReadingOptions(max_length=128, stride=48, max_windows=5, glimpse_tokens=None)  # the windows read in turn
    stopped = read(question, TEXT, **options, options=replace(turn, stop_confidence=0.9))
    assert sure.windows == MIN_WINDOWS_BEFORE_STOP == stopped.n_windows < stopped.windows_planned
    assert stopped.stopped == "found" and "stopped once it found a part it judged to hold the answer" in stopped.note
    assert stopped.note.startswith(f"Read 2 of {stopped.windows_planned} windows")
    # the same answers as reading those two windows on purpose: stopping changes how many, not how they decode
    two = read(question, TEXT, **options, options=replace(turn, stop_confidence=None, max_windows=2))
    assert stopped.answers == two.answers and stopped.window_token_spans == two.window_token_spans
    assert two.stopped is None and "stopped once" not in two.note

    sure.windows = 0
    everything = read(question, TEXT, **options, options=replace(turn, stop_confidence=None))
    assert sure.windows == everything.n_windows == 5 and everything.stopped is None
    sure.windows = 0  # "every window" reads every window, confident or not
    every = read(question, TEXT, **options, options=replace(turn, stop_confidence=0.9, max_windows=None))
    assert sure.windows == every.n_windows == every.windows_planned > 5

    unsure = CountingModel(model_answerable_at(0.8))
    below = read(
        question, TEXT, **{**options, "model": unsure}, options=replace(turn, stop_confidence=0.9, give_up_below=0.05)
    )
    assert unsure.windows == below.n_windows == 5 and below.stopped is None


def test_best_windows_without_a_sign_of_the_answer_leave_the_rest_unread(tokenizer):
    question = "How deep is Lake Baikal?"
    doubtful = CountingModel(model_answerable_at(0.02))
    options = dict(model=doubtful, tokenizer=tokenizer, tidy=tidy_answer_span)
    turn = ReadingOptions(max_length=128, stride=48, max_windows=5, glimpse_tokens=None)  # the windows read in turn
    given_up = read(question, TEXT, **options, options=replace(turn, give_up_below=0.05))
    assert doubtful.windows == MIN_WINDOWS_BEFORE_GIVING_UP == given_up.n_windows < given_up.windows_planned
    assert given_up.stopped == "nothing found" and "none of them seemed to hold the answer" in given_up.note
    assert given_up.no_answer and given_up.answers  # "No answer found", with the guesses still listed
    three = read(question, TEXT, **options, options=replace(turn, give_up_below=None, max_windows=3))
    assert given_up.answers == three.answers and three.stopped is None
    doubtful.windows = 0
    on = read(question, TEXT, **options, options=replace(turn, give_up_below=0.01))  # 0.02: a sign of an answer here
    assert doubtful.windows == on.n_windows == 5 and on.stopped is None


def test_the_stop_rules_need_two_or_three_windows_and_never_overflow():
    def logits(answerable):
        w = len(answerable)
        return WindowLogits(
            np.zeros((w, 1), dtype=np.int64),
            np.zeros((w, 1)),
            np.zeros((w, 1, 1)),
            np.asarray(answerable, dtype=np.float32),
        )

    assert not confident_enough(logits([50.0]), 0.9)  # one window is never enough
    assert confident_enough(logits([-3.0, 2.2]), 0.9) and not confident_enough(logits([-3.0, 2.1]), 0.9)  # logit 2.197
    assert not confident_enough(logits([-1e30, -1e30]), 0.5) and confident_enough(logits([1e30, 0.0]), 0.999)
    assert not confident_enough(logits([1e30, 1e30]), 1.0)  # certainty is never reached
    assert not nothing_found(logits([-9.0, -9.0]), 0.05) and nothing_found(logits([-9.0, -9.0, -2.95]), 0.05)
    assert not nothing_found(logits([-9.0, -9.0, -2.94]), 0.05)  # logit(0.05) = -2.944
    assert nothing_found(logits([-1e30] * 3), 0.05) and not nothing_found(logits([-1e30] * 3), 0.0)
    with pytest.raises(ValueError, match="stop_confidence"):
        read("q?", TEXT, model=None, tokenizer=None, options=ReadingOptions(stop_confidence=0.0))
    with pytest.raises(ValueError, match="give_up_below"):
        read("q?", TEXT, model=None, tokenizer=None, options=ReadingOptions(give_up_below=1.0))


def test_should_stop_ends_the_reading_between_windows(tokenizer):
    model = CountingModel(tiny_model_for_tokenizer())
    question = "How deep is Lake Baikal?"
    asked = []

    def stop_after_two_windows() -> bool:
        asked.append(model.windows)
        return model.windows >= 2

    with pytest.raises(ReadingStopped):
        read(
            question,
            TEXT,
            model=model,
            tokenizer=tokenizer,
            should_stop=stop_after_two_windows,
            options=ReadingOptions(max_length=128, stride=48, max_windows=None),
        )
    assert model.windows == 2 and asked == [0, 1, 2]  # asked before each window; the third never started

    model.windows = 0
    with pytest.raises(ReadingStopped):  # a question stopped while it waited never reaches the model
        read(
            question,
            TEXT,
            model=model,
            tokenizer=tokenizer,
            should_stop=lambda: True,
            options=ReadingOptions(max_length=128, stride=48),
        )
    assert model.windows == 0

    wanted = read(
        question,
        TEXT,
        model=model,
        tokenizer=tokenizer,
        should_stop=lambda: False,
        options=ReadingOptions(max_length=128, stride=48, n_best=3, max_windows=None),
    )
    plain = read(
        question,
        TEXT,
        model=model,
        tokenizer=tokenizer,
        options=ReadingOptions(max_length=128, stride=48, n_best=3, max_windows=None),
    )
    assert wanted.n_windows == wanted.windows_planned > 8 and wanted.answers == plain.answers


def tiny_teacher(tokenizer, max_positions: int = 64) -> TeacherForQuestionAnswering:
    torch.manual_seed(0)
    bert_config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=max_positions,
        pad_token_id=1,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    config = littlebird_config_from_bert(bert_config, question_token_id=tokenizer.convert_tokens_to_ids("[QUESTION]"))
    return TeacherForQuestionAnswering(BertModel(bert_config, add_pooling_layer=False), config).eval()


def test_the_teacher_reads_within_its_positions(tokenizer):
    teacher = tiny_teacher(tokenizer)
    assert (
        window_length(teacher, 8192) == 64 and window_length(teacher, None) == 64 and window_length(teacher, 32) == 32
    )
    assert window_length(tiny_model_for_tokenizer(), None) is None  # LittleBird: no position limit
    reading = read(
        "How deep is Lake Baikal?",
        TEXT,
        model=teacher,
        tokenizer=tokenizer,
        options=ReadingOptions(max_length=None, n_best=2, max_windows=None),
    )
    widths = [end - start for start, end in reading.window_token_spans]
    assert reading.n_windows > 10 and max(widths) + reading.question_length <= 64
    assert reading.answers and all(a.text == TEXT[a.start : a.end] for a in reading.answers)


@pytest.mark.parametrize(
    "field, value",
    [
        ("max_length", 4),
        ("stride", 0),
        ("max_windows", 0),
        ("max_windows", "all"),
        ("stop_confidence", 0.0),
        ("stop_confidence", 1.5),
        ("give_up_below", 1.0),
        ("give_up_below", -0.1),
        ("glimpse_tokens", 7),
        ("glimpse_keep", 0),
        ("time_budget", -1.0),
        ("lexical_prior", -0.5),
        ("n_best", 0),
        ("max_answer_length", 0),
        ("top_k_starts", 0),
        ("no_answer_threshold", 1.5),
        ("no_answer_threshold", -0.1),
        ("window_batch_size", 0),
        ("threads", 0),
        ("rank_windows", "yes"),
        ("cpu_mode", "int8"),
    ],
)
def test_an_invalid_reading_option_is_refused_by_its_name(field, value):
    with pytest.raises(ValueError) as refused:
        ReadingOptions(**{field: value})
    message = str(refused.value)
    assert message.startswith(f"{field} ") and repr(value) in message
    others = {f.name for f in dataclasses.fields(ReadingOptions)} - {field}
    assert not any(f" {name} " in f" {message} " for name in others)  # one field, not a list of every limit


def test_the_reading_is_set_only_through_its_options(tokenizer):
    model = tiny_model_for_tokenizer()
    with pytest.raises(TypeError):
        read(
            "How deep is Lake Baikal?", TEXT, model=model, tokenizer=tokenizer, max_length=128
        )  # not a keyword of read
    options = ReadingOptions(max_length=128, stride=48, max_windows=None, n_best=2)
    reading = read("How deep is Lake Baikal?", TEXT, model=model, tokenizer=tokenizer, options=options)
    assert reading.n_windows == reading.windows_planned > 8 and len(reading.answers) == 2
    assert all(end - start <= 128 - reading.question_length for start, end in reading.window_token_spans)


def test_the_reading_options_set_the_threads_and_convert_a_model_once(tokenizer):
    model = tiny_model_for_tokenizer()
    threads = torch.get_num_threads()
    try:
        read("How deep is Lake Baikal?", TEXT, model=model, tokenizer=tokenizer, options=ReadingOptions(threads=1))
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(threads)
    read(
        "How deep is Lake Baikal?",
        TEXT,
        model=model,
        tokenizer=tokenizer,
        options=ReadingOptions(cpu_mode="bf16-linear"),
    )
    from littlebird import inference

    assert inference.cpu_mode_of(model) == "bf16-linear"
    assert any(type(m).__name__ == "BF16Linear" for m in model.modules())
    assert not [name for name in vars(model) if name.startswith("littlebird_")]  # the reader writes nothing onto it

    asked = []
    resolve = inference.resolve_cpu_mode
    inference.resolve_cpu_mode = lambda mode: asked.append(mode) or resolve(mode)
    try:  # settled once: later readings in the same mode do not look at the CPU again
        read(
            "How deep is Lake Baikal?",
            TEXT,
            model=model,
            tokenizer=tokenizer,
            options=ReadingOptions(cpu_mode="bf16-linear"),
        )
    finally:
        inference.resolve_cpu_mode = resolve
    assert asked == []
    with pytest.raises(ValueError, match="cpu_mode"):  # its weights are rounded: no way back to fp32
        read(
            "How deep is Lake Baikal?", TEXT, model=model, tokenizer=tokenizer, options=ReadingOptions(cpu_mode="fp32")
        )
