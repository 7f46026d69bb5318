"""Decoding: the windows' logits to the n-best answers, as spans of the shown text.

The model picks its ``top_k_starts`` best starts and, per start, end logits conditioned on it; pairs from all
windows are mapped to the shown text, tidied by the caller's ``tidy`` function, merged (best score per distinct
span) and given a softmax over the n-best. Across windows, spans rank by log p(span | window) plus the window's
answerable logit (:func:`window_offsets`): raw logits do not compare between windows. "No answer" is the sigmoid of
the best window's answerable logit, against a threshold. :func:`decode` is the whole of it, for the reader and for
any script that has a reading's logits (as transformers' ``utils_qa.py`` is for its examples).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..reading_options import DEFAULT_N_BEST
from .passes import WindowLogits

CANDIDATES_PER_ANSWER = 4  # spans decoded per requested answer, before merging and trimming

Tidy = Callable[[str, int, int], tuple[int, int]]  # (text, start, end) -> a span inside [start, end)


@dataclass
class Answer:
    """One answer: ``text == shown_text[start:end]``."""

    text: str
    start: int
    end: int
    score: float  # start + end logit (conditioned on the start), ranked across windows: see span_candidates
    probability: float  # softmax of ``score`` over the returned n-best
    window: int  # index of the window the span was read from


@dataclass
class Candidate:
    """A decoded (start, end) pair in the shown text, before tidying and merging."""

    score: float
    start: int
    end: int
    window: int


def window_offsets(logits: WindowLogits) -> np.ndarray:
    """Per window, what :func:`span_candidates` adds to its spans' scores when ``rank_windows`` is on.

    Start logits are a softmax over one window's positions, so their level means nothing across
    windows (a window full of distractors and one holding the answer can peak alike). Normalised,
    start + end is log p(span | window); adding the window's answerable logit (the [CLS] head,
    trained on windows with and without the answer) makes spans of different windows compare by
    the model's own estimate of which window holds the answer. One window: a constant, no change in
    ranking or probabilities. Without normalisers, the top-k starts' log-sum-exp stands in.
    """
    normalizers = logits.start_log_normalizers
    if normalizers is None:
        finite = np.where(np.isfinite(logits.top_start_logits), logits.top_start_logits, -np.inf)
        peak = np.max(finite, axis=-1)
        normalizers = peak + np.log(np.sum(np.exp(finite - peak[:, None]), axis=-1))
    return logits.answerable_logits - normalizers


def end_log_probabilities(top_end_logits: np.ndarray) -> np.ndarray:
    """log p(end | start) over each start's allowed ends: ``top_end_logits`` (W, k, L) log-softmaxed on L.

    Appendix A.2's end head learns a softmax over ends given the gold start only, so its raw
    logits are on a different scale for every start: a wrong start can get high end logits
    (on raw sums "Mul|liga|n" once outscored "Robert Mulligan" through its end logit, while the start
    logits ranked "Robert" first). Normalised per start, start + end is the
    log of p(start) p(end | start) up to a per-window constant.
    """
    finite = np.isfinite(top_end_logits)
    peak = np.max(np.where(finite, top_end_logits, -np.inf), axis=-1, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    total = np.sum(np.where(finite, np.exp(top_end_logits - peak), 0.0), axis=-1, keepdims=True)
    with np.errstate(divide="ignore"):
        return np.where(finite, top_end_logits - peak - np.log(np.maximum(total, 1e-30)), -np.inf)


@dataclass
class ScoredSpans:
    """Every (window, start, end) pair the model scored, as arrays of shape (W, k, L)."""

    scores: np.ndarray  # how the pair ranks across windows (see span_candidates)
    valid: np.ndarray  # the pair is an answer: both ends document tokens with text, a finite score
    char_start: np.ndarray  # the pair's span in the shown text
    char_end: np.ndarray

    def best_per_window(self) -> np.ndarray:
        """(W,) the best valid score of each window, -inf where a window has no valid pair."""
        return np.where(self.valid, self.scores, -np.inf).reshape(len(self.scores), -1).max(axis=1)

    def top(self, limit: int) -> list[Candidate]:
        """The ``limit`` best valid pairs over all windows, best first."""
        W, k, L = self.scores.shape
        flat = np.flatnonzero(self.valid)
        if flat.size == 0:
            return []
        order = flat[np.argsort(-self.scores.reshape(-1)[flat], kind="stable")][:limit]
        return [
            Candidate(
                float(self.scores.reshape(-1)[i]),
                int(self.char_start.reshape(-1)[i]),
                int(self.char_end.reshape(-1)[i]),
                int(i // (k * L)),
            )
            for i in order
        ]


def scored_spans(
    logits: WindowLogits,
    spans: np.ndarray,
    prefix_length: int,
    starts: Sequence[int],
    *,
    end_depends_on_start: bool = True,
    rank_windows: bool = False,
    window_prior: np.ndarray | None = None,
) -> ScoredSpans:
    """Every (start, end) pair of every window, scored as :func:`span_candidates` ranks them."""
    W, k, L = logits.top_end_logits.shape
    ends = end_log_probabilities(logits.top_end_logits) if end_depends_on_start else logits.top_end_logits
    scores = logits.top_start_logits[:, :, None] + ends  # (W, k, L)
    if rank_windows:
        scores = scores + window_offsets(logits)[:, None, None]
        if window_prior is not None:
            scores = scores + np.asarray(window_prior, dtype=np.float64)[: len(scores), None, None]
    top = logits.top_start_indices[:, :, None]  # (W, k, 1)
    start_doc = top - prefix_length + np.asarray(starts)[:, None, None]  # (W, k, 1)
    end_doc = start_doc + np.arange(L)[None, None, :]  # (W, k, L)
    # The model gives -inf to ends past its window or on padding; the question is excluded here.
    inside = (top >= prefix_length) & (end_doc < len(spans)) & np.isfinite(scores)
    start_doc = np.broadcast_to(start_doc, end_doc.shape)
    char_start = spans[np.clip(start_doc, 0, len(spans) - 1), 0]
    char_end = spans[np.clip(end_doc, 0, len(spans) - 1), 1]
    valid = inside & (char_start >= 0) & (char_end > char_start)
    return ScoredSpans(scores, valid, char_start, char_end)


def span_candidates(
    logits: WindowLogits,
    spans: np.ndarray,
    prefix_length: int,
    starts: Sequence[int],
    limit: int,
    *,
    end_depends_on_start: bool = True,
    rank_windows: bool = False,
    window_prior: np.ndarray | None = None,
) -> list[Candidate]:
    """The ``limit`` best (start, end) pairs over all windows, as shown-text spans.

    A pair counts if both ends are document tokens with text (not the question, a tag token or
    padding) and the model gave it a finite score. A pair's score is the start logit plus the
    end's log-probability given that start (:func:`end_log_probabilities`) where the end depends
    on the start, else plus the raw end logit (the baselines' independent ends: normalising them
    per start would favour starts with little end mass after them). ``rank_windows``: plus the
    window's :func:`window_offsets` (normalised start, plus the window's answerable logit), and
    ``window_prior`` (W,) where given (the first pass's score of each window, see :func:`read`).
    """
    return scored_spans(
        logits,
        spans,
        prefix_length,
        starts,
        end_depends_on_start=end_depends_on_start,
        rank_windows=rank_windows,
        window_prior=window_prior,
    ).top(limit)


def merge_candidates(candidates: Sequence[Candidate], text: str, n_best: int, tidy: Tidy | None = None) -> list[Answer]:
    """Tidy each span, keep the best score per distinct span, softmax over the ``n_best`` kept."""
    best: dict[tuple[int, int], Candidate] = {}
    for candidate in candidates:
        start, end = (candidate.start, candidate.end) if tidy is None else tidy(text, candidate.start, candidate.end)
        if (start, end) not in best or candidate.score > best[(start, end)].score:
            best[(start, end)] = Candidate(candidate.score, start, end, candidate.window)
    kept = sorted(best.values(), key=lambda c: -c.score)[:n_best]
    if not kept:
        return []
    weights = [math.exp(c.score - kept[0].score) for c in kept]
    total = sum(weights)
    return [Answer(text[c.start : c.end], c.start, c.end, c.score, w / total, c.window) for c, w in zip(kept, weights)]


@dataclass
class Decoded:
    """What :func:`decode` makes of a reading's logits."""

    answers: list[Answer]  # the n-best, best first
    answerable_probability: float  # the sigmoid of the best window's answerable logit
    best_span_scores: np.ndarray  # (W,) each window's best valid span score, -inf where it has none


def answerable_probability(logits: WindowLogits) -> float:
    """The sigmoid of the best window's answerable logit: how sure the model is that the document answers."""
    return float(1 / (1 + math.exp(-float(np.max(logits.answerable_logits)))))


def decode(
    logits: WindowLogits,
    spans: np.ndarray,
    prefix_length: int,
    starts: Sequence[int],
    text: str,
    *,
    n_best: int = DEFAULT_N_BEST,
    tidy: Tidy | None = None,
    end_depends_on_start: bool = True,
    rank_windows: bool = True,
    window_prior: np.ndarray | None = None,
) -> Decoded:
    """The ``n_best`` answers of the windows read, as the reader decodes them.

    ``logits`` (W windows) were read from windows whose document parts start at ``starts`` (document tokens), each
    after a prefix of ``prefix_length`` tokens; ``spans`` (n, 2) are the document tokens' spans in ``text``
    (:class:`~littlebird.reader.tokens.EncodedText`). The :data:`CANDIDATES_PER_ANSWER` best pairs per answer
    (:func:`scored_spans`) are tidied and merged (:func:`merge_candidates`); ``rank_windows``, ``window_prior`` and
    ``end_depends_on_start`` are :func:`span_candidates`'."""
    scored = scored_spans(
        logits,
        spans,
        prefix_length,
        starts,
        end_depends_on_start=end_depends_on_start,
        rank_windows=rank_windows,
        window_prior=window_prior,
    )
    answers = merge_candidates(scored.top(n_best * CANDIDATES_PER_ANSWER), text, n_best, tidy)
    return Decoded(answers, answerable_probability(logits), scored.best_per_window())
