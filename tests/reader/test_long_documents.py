"""Long documents: the lexical first pass, reading the best windows only, no wall in tokens, the lazy explorer."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from littlebird import reader
from littlebird.app import asking
from littlebird.documents.errors import DocumentError
from littlebird.documents.limits import DEFAULT_MAX_CHARACTERS, Limits
from littlebird.reader import DEFAULT_MAX_LENGTH, DEFAULT_MAX_WINDOWS, ReadingOptions, encode_text, read, tokens_covered
from littlebird.training.data import long_documents
from littlebird.window_ranking import chunk_scores, glimpse_choice, reading_order, term_table
from tests.support.qa import qa_tokenizer
from tests.support.ui import TEST_MODEL, tiny_answering_model, tiny_loaded_model

FILLER = (
    "The river valley was settled by farmers who grew wheat and barley on the terraces above the water. "
    "Markets were held every week in the square beside the old stone bridge. "
)
NEEDLE = "The lighthouse keeper Henrietta Quorvash lit the lamp at Saint Ovidio in 1874."
KOREAN_NEEDLE = "측우기는 1441년 세종 때 장영실이 만들었다."


def haystack(repeats: int, needle_at: int, needle: str = NEEDLE) -> str:
    """``repeats`` filler paragraphs with ``needle`` as paragraph ``needle_at``."""
    paragraphs = [FILLER] * repeats
    paragraphs.insert(needle_at, needle)
    return "\n\n".join(paragraphs)


# ---- the first pass ------------------------------------------------------------------


def test_bm25_scores_the_chunk_with_the_rare_question_words_highest():
    # terms 1 and 2 are everywhere, 7 and 9 only in chunk 2: a chunk's score is BM25, so IDF rules
    document = np.array([1, 2, 1, 2] * 3 + [1, 7, 9, 2] + [1, 2, 1, 2] * 2)
    scores = chunk_scores(np.array([1, 7, 9, -1]), document, chunk=4)
    assert scores.shape == (6,) and int(np.argmax(scores)) == 3
    assert scores[3] > 2 * scores[0] > 0 and np.allclose(scores[[0, 1, 2, 4, 5]], scores[0])
    assert not chunk_scores(np.array([5, -1]), document, chunk=4).any()  # no question word: all zero
    assert not chunk_scores(np.array([-1]), document, chunk=4).any()


def test_terms_fold_case_and_the_word_start_mark_and_skip_punctuation():
    tokenizer = qa_tokenizer()
    table = term_table(tokenizer)
    assert table is term_table(tokenizer)  # built once per tokenizer
    ids = tokenizer.convert_tokens_to_ids(["▁The", "▁the", "The", "the", "▁Paris", "▁(", ")", "[QUESTION]"])
    assert tokenizer.unk_token_id not in ids
    spaced, lower, bare, bare_lower, paris, dot, mark, special = (int(table[i]) for i in ids)
    assert spaced == lower == bare == bare_lower >= 0 and paris >= 0 and paris != spaced
    assert dot == mark == special == -1


def test_reading_order_puts_the_window_with_the_answer_first():
    tokenizer = qa_tokenizer()
    text = haystack(60, needle_at=45)
    encoded = encode_text(text, tokenizer)
    question = tokenizer("Who lit the lamp at Saint Ovidio?", add_special_tokens=False)["input_ids"]
    starts = list(range(0, len(encoded.input_ids) - 100, 100))
    order = reading_order(question, encoded.input_ids, starts, 128, tokenizer)
    needle = text.index(NEEDLE)
    needle_tokens = np.flatnonzero(encoded.spans[:, 0] >= needle)[0]
    best = starts[order[0]]
    assert sorted(order) == list(range(len(starts))) and best <= needle_tokens < best + 128
    assert order[0] > 5  # far from the start: the first pass found it, not the document order


# ---- the reader reads the best windows only ----------------------------------------------


def test_the_reader_reads_at_most_max_windows_the_best_first_and_says_how_much():
    tokenizer, model = qa_tokenizer(), tiny_answering_model()
    text = haystack(80, needle_at=60)
    progress = []
    reading = read(
        "Who lit the lamp at Saint Ovidio?",
        text,
        model=model,
        tokenizer=tokenizer,
        on_window=lambda done, total: progress.append((done, total)),
        options=ReadingOptions(max_length=128, max_windows=3, stop_confidence=None, give_up_below=None),
    )
    every = read(
        "Who lit the lamp at Saint Ovidio?",
        text,
        model=model,
        tokenizer=tokenizer,
        options=ReadingOptions(max_length=128, max_windows=None),
    )
    assert reading.n_windows == 3 and reading.windows_planned == every.n_windows == every.windows_planned > 20
    assert progress == [(1, 3), (2, 3), (3, 3)]  # the progress bar counts the windows that will be read
    needle = text.index(NEEDLE)
    first = reading.window_token_spans[0]
    encoded = encode_text(text, tokenizer)
    assert encoded.spans[first[0], 0] <= needle < encoded.spans[first[1] - 1, 1]
    assert set(reading.window_token_spans) < set(every.window_token_spans)
    covered = tokens_covered(reading.window_token_spans)
    assert reading.note.startswith(f"Read 3 of {every.n_windows} windows ({covered:,} of {reading.n_tokens:,} tokens)")
    assert every.note is None
    assert all(a.text == text[a.start : a.end] for a in reading.answers)


def test_the_reading_keeps_every_windows_rank_and_what_the_model_said_of_those_read():
    tokenizer, model = qa_tokenizer(), tiny_answering_model()
    text = haystack(80, needle_at=60)
    question = "Who lit the lamp at Saint Ovidio?"
    reading = read(
        question,
        text,
        model=model,
        tokenizer=tokenizer,
        options=ReadingOptions(max_length=128, max_windows=3, stop_confidence=None, give_up_below=None),
    )
    windows = reading.windows
    assert len(windows) == reading.windows_planned > 20
    assert [w.start for w in windows] == sorted(w.start for w in windows)  # document order
    assert sorted(w.rank for w in windows) == list(range(len(windows)))
    # the ranks are the first pass's order, and the three it ranked best were read, in that order
    encoded = encode_text(text, tokenizer)
    question_ids = tokenizer(question, add_special_tokens=False)["input_ids"]
    order = reading_order(question_ids, encoded.input_ids, [w.start for w in windows], windows[0].end, tokenizer)
    assert [windows[i].rank for i in order] == list(range(len(windows)))
    read_ones = sorted((w for w in windows if w.read is not None), key=lambda w: w.read)
    assert [w.rank for w in read_ones] == [0, 1, 2]
    assert [(w.start, w.end) for w in read_ones] == reading.window_token_spans
    assert all(w.answerable_logit is None and w.best_span_score is None for w in windows if w.read is None)
    assert all(w.lexical_score is not None for w in windows)
    # the best answer is its window's best span, and no other window's best span scores higher
    best = reading.answers[0]
    assert best.score == read_ones[best.window].best_span_score == max(w.best_span_score for w in read_ones)
    assert reading.answerable_probability == pytest.approx(max(w.answerable_probability for w in read_ones))
    # one window: nothing ranked, the window still recorded
    short = read(question, haystack(2, needle_at=1), model=model, tokenizer=tokenizer)
    assert len(short.windows) == 1 and short.windows[0].rank == 0 and short.windows[0].lexical_score is None
    assert short.windows[0].read == 0 and short.windows[0].best_span_score is not None


def test_tokens_covered_counts_overlapping_windows_once():
    assert tokens_covered([(0, 100), (50, 150), (400, 500)]) == 250
    assert tokens_covered([(400, 500), (0, 100)]) == 200 and tokens_covered([]) == 0


def test_a_short_document_is_read_whole_as_before():
    tokenizer, model = qa_tokenizer(), tiny_answering_model()
    text = haystack(3, needle_at=1)
    reading = read("Who lit the lamp?", text, model=model, tokenizer=tokenizer)
    assert reading.n_windows == reading.windows_planned == 1 and reading.note is None
    assert reading.window_token_spans == [(0, reading.n_tokens)] and reading.n_tokens < DEFAULT_MAX_LENGTH


def test_max_windows_must_be_positive():
    with pytest.raises(ValueError, match="max_windows"):
        read("q", "text", model=tiny_answering_model(), tokenizer=qa_tokenizer(), options=ReadingOptions(max_windows=0))


# ---- the app: no wall in tokens, bounded by characters -------------------------------------


def test_a_document_over_32k_tokens_is_answered_through_the_api_with_a_note(monkeypatch):
    tiny_loaded_model()
    monkeypatch.delenv("LITTLEBIRD_MAX_TOKENS", raising=False)
    document = haystack(1500, needle_at=1100)
    payload = asking.answer_document(document, "Who lit the lamp at Saint Ovidio?", checkpoint=TEST_MODEL)
    assert payload["n_tokens"] > 40_000
    # the best DEFAULT_MAX_WINDOWS at most (fewer once one is answerable, or three are not)
    assert 2 <= payload["n_windows"] <= DEFAULT_MAX_WINDOWS < payload["windows_planned"]
    assert payload["message"].startswith(f"Read {payload['n_windows']} of {payload['windows_planned']} windows")
    assert payload["n_best"] and "rank" in payload["timings"]


def test_the_size_limit_is_in_characters_and_a_host_may_still_set_a_token_wall(monkeypatch):
    assert Limits.from_environment({}) == Limits(max_characters=DEFAULT_MAX_CHARACTERS, max_tokens=None)
    assert Limits.from_environment({"LITTLEBIRD_MAX_TOKENS": "500", "LITTLEBIRD_MAX_CHARACTERS": "90000"}) == Limits(
        max_characters=90_000, max_tokens=500
    )
    tiny_loaded_model()
    monkeypatch.setenv("LITTLEBIRD_MAX_CHARACTERS", "2000")
    with pytest.raises(DocumentError, match="at most 2,000 characters of plain text"):
        asking.answer_document(FILLER * 20, "What grew on the terraces?", checkpoint=TEST_MODEL)
    monkeypatch.delenv("LITTLEBIRD_MAX_CHARACTERS")
    monkeypatch.setenv("LITTLEBIRD_MAX_TOKENS", "100")
    with pytest.raises(DocumentError, match="at most 100 tokens"):
        asking.answer_document(FILLER * 20, "What grew on the terraces?", checkpoint=TEST_MODEL)


# ---- the explorer is computed when it is opened ---------------------------------------------


def test_asking_computes_no_attention_and_explain_draws_the_answers_window():
    from littlebird.app.explorer.explaining import after_reading, explain

    tiny_loaded_model()
    settings = asking.Settings(checkpoint=TEST_MODEL, reading=ReadingOptions(max_length=512))
    text = haystack(40, needle_at=30, needle=KOREAN_NEEDLE)
    view = asking.ask("paste", "측우기는 누가 만들었나?", settings, pasted=text)
    assert "attention" not in view.reading.timings and view.reading.n_windows <= DEFAULT_MAX_WINDOWS
    target = after_reading(view, "측우기는 누가 만들었나?", settings)
    best = view.reading.answers[0]
    assert target.document_start == view.reading.window_token_spans[best.window][0]
    assert target.answer_span == (best.start, best.end)
    summary, plots, seconds = explain(target, layer=1, head=0)
    assert (
        summary is not None
        and set(plots) == {"block_map", "answer", "pack", "curves", "atlas", "rollout"}
        and seconds > 0
    )
    assert (
        summary.n_tokens > 400 and summary.answer_blocks.shape[2] >= 1
    )  # the answer's tokens were found in the window
    empty, plots, _ = explain(None)
    assert empty is None and set(plots) == {"block_map", "answer", "pack", "curves", "atlas", "rollout"}


# ---- the long dev file ----------------------------------------------------------------------


def test_long_dev_documents_hold_their_question_among_whole_other_articles():
    tokenizer = qa_tokenizer()

    def article(title, n, with_question):
        paragraphs = []
        for i in range(n):
            context = f"{title} paragraph {i}. " + FILLER * 4
            qas = (
                [
                    {
                        "id": f"{title}-{i}",
                        "question": f"What about {title} {i}?",
                        "answers": [{"text": f"{title} paragraph {i}", "answer_start": 0}],
                    }
                ]
                if with_question
                else []
            )
            paragraphs.append({"context": context, "qas": qas})
        return {"title": title, "paragraphs": paragraphs}

    articles = [article(f"Topic{k}", 3, True) for k in range(4)]
    filler = [article(f"Page{k}", 2, False) for k in range(40)]
    documents = long_documents(articles, filler, tokenizer, n_questions=5, seed=1, min_tokens=2000, max_tokens=4000)
    assert len(documents) == 5
    for document in documents:
        (paragraph,) = document["paragraphs"]
        (qa,) = paragraph["qas"]
        answer = qa["answers"][0]
        context = paragraph["context"]
        assert context[answer["answer_start"] : answer["answer_start"] + len(answer["text"])] == answer["text"]
        n_tokens = len(tokenizer(context, add_special_tokens=False)["input_ids"])
        assert 2000 <= n_tokens <= 4000 + 600  # the target, plus at most the section that passed it
        owner = answer["text"].split()[0]
        assert context.count(f"{owner} paragraph 0.") == 1  # the whole owning article, once


def test_a_question_read_by_another_thread_during_an_explorer_pass_is_left_alone():
    import threading

    from littlebird.app.explorer.window import window_attention

    tokenizer, model = qa_tokenizer(), tiny_answering_model()
    text = haystack(8, needle_at=4)
    other: list = []

    def reduce_layer(window, weights):
        if not other:  # meanwhile another thread reads a question on the same model
            thread = threading.Thread(
                target=lambda: other.append(
                    read(
                        "Who lit the lamp?",
                        text,
                        model=model,
                        tokenizer=tokenizer,
                        options=ReadingOptions(max_length=128),
                    )
                )
            )
            thread.start()
            thread.join()
        return float(weights.local.sum())

    explained = window_attention(
        "Who lit the lamp at Saint Ovidio?",
        text,
        model=model,
        tokenizer=tokenizer,
        document_start=0,
        max_length=128,
        reduce_layer=reduce_layer,
    )
    assert len(explained.attentions) == len(model.littlebird.encoder.layer)
    assert other and other[0].answers


# ---- glimpses: a short look at each ranked window, then the likeliest read in full ----------------------------


def test_glimpses_read_in_full_only_the_windows_whose_glimpses_look_likeliest():
    tokenizer, model = qa_tokenizer(), tiny_answering_model()
    text = haystack(80, needle_at=60)
    question = "Who lit the lamp at Saint Ovidio?"
    passes = []  # the reader says which of the model's passes are glimpses, and which windows read in full
    reading = read(
        question,
        text,
        model=model,
        tokenizer=tokenizer,
        on_pass=passes.append,
        options=ReadingOptions(max_length=128, max_windows=8, glimpse_tokens=48, glimpse_keep=2),
    )
    assert passes == ["glimpse", "read"]
    glimpsed = [w for w in reading.windows if w.glimpse_logit is not None]
    assert sorted(w.rank for w in glimpsed) == list(range(8))  # the eight best-ranked windows, each glimpsed once
    assert all(w.glimpse_logit is None for w in reading.windows if w.rank >= 8)
    read_ones = sorted((w for w in reading.windows if w.read is not None), key=lambda w: w.read)
    assert reading.n_windows == len(read_ones) == 2 and reading.stopped == "glimpsed"
    # the two read are the two the choice scores highest, from each window's glimpse logit and BM25 score and rank,
    # the higher first
    by_rank = sorted(glimpsed, key=lambda w: w.rank)
    choice = glimpse_choice(
        np.array([w.glimpse_logit for w in by_rank]),
        np.array([w.lexical_score for w in by_rank]) / max(w.lexical_score for w in by_rank),
    )
    by_choice = [by_rank[i] for i in np.argsort(-choice, kind="stable")]
    assert [(w.start, w.end) for w in read_ones] == [(w.start, w.end) for w in by_choice[:2]]
    assert reading.note.startswith("Read 2 of ") and "glimpsed each" in reading.note
    assert reading.answers and reading.answers[0].window in (0, 1)  # answers come from the windows read
    # a glimpse's logit is the model's on the prefix and the glimpse's tokens around the window's best chunk:
    # the needle's window, ranked first, is glimpsed where the needle is
    encoded = encode_text(text, tokenizer)
    ids = reader.special_ids(tokenizer, model)
    prefix = reader.question_prefix(tokenizer(question, add_special_tokens=False)["input_ids"], ids, 128)
    first = next(w for w in glimpsed if w.rank == 0)
    needle = int(np.flatnonzero(encoded.spans[:, 0] >= text.index(NEEDLE))[0])
    assert first.start <= needle < first.end
    capacity = 48 - len(prefix)
    starts = [
        s for s in range(first.start, first.end - capacity + 1) if s <= needle < s + capacity
    ]  # the glimpse holds the needle's first token
    with torch.inference_mode():
        logits = {
            s: float(
                model(input_ids=torch.tensor([[*prefix, *encoded.input_ids[s : s + capacity]]])).answerable_logits[0]
            )
            for s in starts
        }
    assert any(abs(logit - first.glimpse_logit) < 1e-4 for logit in logits.values())


def test_the_choice_among_glimpsed_windows_follows_the_glimpses_and_the_words_the_question_shares():
    # ten windows in BM25's order, their scores over the best one's
    flat = np.zeros(10)
    lexical = np.linspace(1.0, 0.5, 10)
    order = lambda g, lex: list(np.argsort(-glimpse_choice(g, lex), kind="stable"))  # noqa: E731
    # equal glimpses: BM25's order decides
    assert order(flat, lexical) == list(range(10))
    # a glimpse far likelier than the others' wins over a better BM25 rank
    sure = flat.copy()
    sure[6] = 6.0
    assert order(sure, lexical)[0] == 6
    # a likelier glimpse lifts a window above an otherwise equal one
    lifted = flat.copy()
    lifted[4] = 3.0
    assert order(lifted, lexical).index(4) < order(flat, lexical).index(4)
    # a higher BM25 score lifts a window above an otherwise equal one
    higher = lexical.copy()
    higher[5] = 0.95
    assert order(flat, higher).index(5) < order(flat, lexical).index(5)


def test_a_document_of_few_windows_is_read_without_glimpses():
    tokenizer, model = qa_tokenizer(), tiny_answering_model()
    text = haystack(12, needle_at=8)
    question = "Who lit the lamp at Saint Ovidio?"
    plain = read(
        question,
        text,
        model=model,
        tokenizer=tokenizer,
        options=ReadingOptions(
            max_length=128, max_windows=reader.GLIMPSE_ABOVE, stop_confidence=None, give_up_below=None
        ),
    )
    glimpsing = read(
        question,
        text,
        model=model,
        tokenizer=tokenizer,
        options=ReadingOptions(
            max_length=128,
            max_windows=reader.GLIMPSE_ABOVE,
            stop_confidence=None,
            give_up_below=None,
            glimpse_tokens=48,
        ),
    )
    assert plain.windows_planned > reader.GLIMPSE_ABOVE == plain.n_windows == glimpsing.n_windows
    assert [(a.start, a.end, a.score) for a in glimpsing.answers] == [(a.start, a.end, a.score) for a in plain.answers]
    assert all(w.glimpse_logit is None for w in glimpsing.windows) and glimpsing.stopped is None
    with pytest.raises(ValueError, match="glimpse_tokens"):
        read(question, text, model=model, tokenizer=tokenizer, options=ReadingOptions(glimpse_tokens=4))
