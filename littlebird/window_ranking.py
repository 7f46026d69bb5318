"""Which windows of a long document to read first: a lexical first pass (BM25) over the tokens.

Reading every 1K-token window of a long document with the full model costs a forward pass a window,
and over many windows the choice among them is the weak part (a wrong window's span
can outscore the right one). So before the model runs, the reader ranks the windows by how well
their words match the question's: BM25 (Robertson and Zaragoza, 2009) over short chunks of the
document, a window scoring as its best chunk, since an answer sits near the question's words.

Terms are the tokenizer's own pieces, folded to lower case without the word-start mark, so
"▁Seoul", "Seoul" and "seoul" count as one term; pieces that are punctuation or special tokens
are no terms. Everything is numpy over token ids the reader already has: ranking a 128K-token
document takes milliseconds.
"""

from __future__ import annotations

import threading
import unicodedata
import weakref
from typing import Sequence

import numpy as np

CHUNK_TOKENS = 64  # BM25's unit: about a sentence or two, where an answer's context sits
BM25_K1, BM25_B = 1.2, 0.75  # the usual values

_term_tables: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_term_tables_lock = threading.Lock()


def _fold(piece: str) -> str:
    piece = unicodedata.normalize("NFKC", piece.replace("\u2581", "")).lower()
    return piece if any(ch.isalnum() for ch in piece) else ""


def term_table(tokenizer) -> np.ndarray:
    """(vocab,) term id of each token id: equal for pieces that fold to the same text, -1 for no term.

    Built once per tokenizer (a quarter of a second for XLM-R's 250K pieces) and kept with it.
    """
    with _term_tables_lock:
        table = _term_tables.get(tokenizer)
        if table is not None:
            return table
    pieces = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    special = set(tokenizer.all_special_ids)
    terms: dict[str, int] = {}
    table = np.full(len(pieces), -1, dtype=np.int64)
    for index, piece in enumerate(pieces):
        folded = _fold(piece or "") if index not in special else ""
        if folded:
            table[index] = terms.setdefault(folded, len(terms))
    with _term_tables_lock:
        _term_tables[tokenizer] = table
    return table


def chunk_scores(question_terms: np.ndarray, document_terms: np.ndarray, chunk: int = CHUNK_TOKENS) -> np.ndarray:
    """BM25 of each ``chunk``-token piece of the document against the question's distinct terms.

    ``question_terms`` and ``document_terms`` are term ids (:func:`term_table`), -1 for no term.
    Inverse document frequencies are the document's own, over its chunks: a word in every chunk
    tells nothing. Returns (ceil(n / chunk),) scores, 0 where no question term occurs.
    """
    n_chunks = max(1, -(-len(document_terms) // chunk))
    query = np.unique(question_terms[question_terms >= 0])
    if query.size == 0 or len(document_terms) == 0:
        return np.zeros(n_chunks)
    position = np.searchsorted(query, document_terms)
    position = np.minimum(position, query.size - 1)
    hit = query[position] == document_terms
    where = np.flatnonzero(hit)
    tf = np.bincount((where // chunk) * query.size + position[where], minlength=n_chunks * query.size)
    tf = tf.reshape(n_chunks, query.size).astype(np.float64)
    df = np.count_nonzero(tf, axis=0)
    idf = np.log1p((n_chunks - df + 0.5) / (df + 0.5))
    lengths = np.full(n_chunks, float(chunk))
    lengths[-1] = len(document_terms) - chunk * (n_chunks - 1)
    norm = BM25_K1 * (1 - BM25_B + BM25_B * lengths / lengths.mean())
    return (idf * tf * (BM25_K1 + 1) / (tf + norm[:, None])).sum(axis=1)


def window_scores(
    question_ids: Sequence[int],
    document_ids: np.ndarray,
    starts: Sequence[int],
    capacity: int,
    tokenizer,
    chunk: int = CHUNK_TOKENS,
) -> np.ndarray:
    """(W,) BM25 score of each window ``[start, start + capacity)``: the best chunk it holds whole
    or in part."""
    return _best_chunks(question_ids, document_ids, starts, capacity, tokenizer, chunk)[0]


def best_chunk_centres(
    question_ids: Sequence[int],
    document_ids: np.ndarray,
    starts: Sequence[int],
    capacity: int,
    tokenizer,
    chunk: int = CHUNK_TOKENS,
) -> np.ndarray:
    """(W,) the document token at the middle of each window's best chunk (the window's first chunk where no
    question word occurs): where in a window its answer most likely sits."""
    return _best_chunks(question_ids, document_ids, starts, capacity, tokenizer, chunk)[1]


def _best_chunks(question_ids, document_ids, starts, capacity, tokenizer, chunk) -> tuple[np.ndarray, np.ndarray]:
    table = term_table(tokenizer)
    scores = chunk_scores(
        table[np.asarray(question_ids, dtype=np.int64)], table[np.asarray(document_ids, dtype=np.int64)], chunk
    )
    best, centres = np.empty(len(starts)), np.empty(len(starts), dtype=np.int64)
    for i, start in enumerate(starts):
        first, last = start // chunk, -(-(start + capacity) // chunk)
        top = first + int(np.argmax(scores[first:last])) if last > first else first
        best[i] = scores[top] if last > first else 0.0
        centres[i] = min(max(start, top * chunk + chunk // 2), start + capacity - 1)
    return best, centres


def order_by_score(scores: np.ndarray) -> list[int]:
    """Indices of ``scores``, the highest first (ties: the lower index, i.e. document order)."""
    return [int(i) for i in np.argsort(-np.asarray(scores), kind="stable")]


# The choice among glimpsed windows (littlebird.reader.read's glimpse_tokens) weighs, per window: its glimpse's
# answerable logit and probability, its BM25 score over the document's best window's, its BM25 rank over 10 (0 the
# best), whether it is BM25's best window, and that times BM25's lead over the next window (choice_features). A
# listwise softmax over each question's glimpsed windows, the windows holding a gold answer its targets, fitted on
# 1,053 questions of training-split documents (English and Korean: articles, and long documents of 32K-160K tokens),
# none of the dev files it is measured on:
#   python experiments/window-screening/fit_choice.py runs/cascade/gr-train-{en,ko}-{article,long}.pt
GLIMPSE_CHOICE_WEIGHTS = (0.5445, -1.5979, 6.3631, -0.8404, -0.3869, 1.8477)


def glimpse_choice(glimpse_logits: np.ndarray, lexical: np.ndarray, weights=None) -> np.ndarray:
    """(W,) how likely each glimpsed window is to hold the answer, for windows in BM25's order (rank 0 first):
    ``glimpse_logits`` their glimpses' answerable logits, ``lexical`` their BM25 scores over the best one's."""
    return choice_features(glimpse_logits, lexical) @ np.asarray(GLIMPSE_CHOICE_WEIGHTS if weights is None else weights)


def choice_features(glimpse_logits: np.ndarray, lexical: np.ndarray) -> np.ndarray:
    """(W, 6): the features :func:`glimpse_choice` weighs (see :data:`GLIMPSE_CHOICE_WEIGHTS`)."""
    g, lex = np.asarray(glimpse_logits, dtype=np.float64), np.asarray(lexical, dtype=np.float64)
    rank = np.arange(len(g), dtype=np.float64)
    first = (rank == 0).astype(np.float64)
    lead = lex[0] - lex[1] if len(lex) > 1 else 0.0
    return np.stack([g, 1 / (1 + np.exp(-g)), lex, rank / 10, first, first * lead], 1)


def reading_order(
    question_ids: Sequence[int], document_ids: np.ndarray, starts: Sequence[int], capacity: int, tokenizer
) -> list[int]:
    """Indices of ``starts``, the windows most likely to hold the answer first (ties: document order)."""
    if len(starts) <= 1:
        return list(range(len(starts)))
    return order_by_score(window_scores(question_ids, document_ids, starts, capacity, tokenizer))
