"""What a reading gives: :class:`Reading`, the n-best answers and how they were found, with a record of every
window of the document (:class:`WindowRecord`) and, when only part was read, a sentence for the user."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from .decoding import Answer


@dataclass(frozen=True)
class WindowRecord:
    """One window of a document as the reader saw it: where it is, how the first pass ranked it and,
    when the model read it, what the model said of it."""

    start: int  # the window's document tokens, [start, end)
    end: int
    rank: int  # its place in the first pass's order (BM25), 0 the best; document order for a single window
    lexical_score: float | None  # its BM25 score; None when the document is one window (nothing was ranked)
    read: int | None = None  # its place in the reading order (an Answer's ``window``); None: not read
    answerable_logit: float | None = None  # the model's answerable logit for the window, when read
    best_span_score: float | None = None  # the score its best span ranks with (before tidying); None: none
    glimpse_logit: float | None = None  # the answerable logit of its glimpse, when the reader glimpsed it

    @property
    def answerable_probability(self) -> float | None:
        """The sigmoid of ``answerable_logit``: how sure the model is that the window holds the answer."""
        return None if self.answerable_logit is None else 1 / (1 + math.exp(-self.answerable_logit))


@dataclass
class Reading:
    """A question read from a document: the n-best answers and how they were found."""

    answers: list[Answer]  # best first; kept even when ``no_answer``
    answerable_probability: float  # sigmoid of the best window's answerable logit
    no_answer: bool  # no span, or ``answerable_probability`` below the threshold
    n_tokens: int  # document tokens
    window_token_spans: list[tuple[int, int]]  # document token range [start, end) of each window read, in reading order
    question_length: int  # tokens of [CLS] [QUESTION] question [SEP]
    timings: dict[str, float] = field(default_factory=dict)  # seconds: tokenize, rank, (glimpse,) model, decode
    windows_planned: int = 0  # windows the document needed; more than ``n_windows`` when not all were read
    note: str | None = None  # for the user: how much was read, when not all (the app adds why no clear answer)
    stopped: str | None = None  # why ranked windows were left unread: "found", "nothing found" or "glimpsed" (see read)
    windows: list[WindowRecord] = field(default_factory=list)  # every window of the document, in document order

    @property
    def n_windows(self) -> int:
        return len(self.window_token_spans)


def tokens_covered(spans: Sequence[tuple[int, int]]) -> int:
    """Distinct tokens in the union of ``[start, end)`` ranges (neighbouring windows overlap)."""
    covered, reach = 0, -1
    for start, end in sorted(spans):
        covered += max(0, end - max(start, reach))
        reach = max(reach, end)
    return covered


def reading_note(reading: Reading, *, timed_out: bool, time_budget: float | None) -> str:
    """The sentence that tells a user how much of the document ``reading`` read, and why not all of it."""
    read = tokens_covered(reading.window_token_spans)
    what = f"Read {reading.n_windows} of {reading.windows_planned} windows ({read:,} of {reading.n_tokens:,} tokens)"
    if timed_out:
        return (
            f"{what}: the time for one question ({time_budget:g} s) ran out. The windows were read in the order "
            "of how well their words match the question, so the answer may still be in the rest."
        )
    if reading.stopped == "found":
        return (
            f"{what}: the parts whose words best match the question, best first; the model stopped once it "
            "found a part it judged to hold the answer. The answer may be elsewhere; a question that repeats "
            "the document's own words finds its part best."
        )
    if reading.stopped == "glimpsed":
        return (
            f"{what}: of the parts whose words best match the question, the model glimpsed each and read in full "
            "those it judged likeliest to hold the answer. The answer may be elsewhere; a question that repeats "
            "the document's own words finds its part best."
        )
    if reading.stopped == "nothing found":
        return (
            f"{what}: the parts whose words best match the question, best first; the model stopped when "
            "none of them seemed to hold the answer. The answer may be elsewhere; a question that repeats "
            "the document's own words finds its part best."
        )
    return (
        f"{what}: the parts whose words best match the question. The answer may be elsewhere; "
        "a question that repeats the document's own words finds its part best."
    )


def window_records(
    every_start: Sequence[int],
    capacity: int,
    n_tokens: int,
    ranked: Sequence[int],
    lexical: np.ndarray | None,
    order: Sequence[int],
    answerable_logits: np.ndarray,
    best_span_scores: np.ndarray,
    glimpses: dict[int, float] | None = None,
) -> list[WindowRecord]:
    """Every window in document order: its first-pass ``ranked`` place and ``lexical`` score and, for the
    first ``len(answerable_logits)`` windows of the reading ``order`` (those read), the model's
    answerable logit and best span score; ``glimpses``: window -> its glimpse's answerable logit."""
    rank = {window: place for place, window in enumerate(ranked)}
    read_as = {window: place for place, window in enumerate(order[: len(answerable_logits)])}
    glimpses = glimpses or {}
    records = []
    for window, start in enumerate(every_start):
        place = read_as.get(window)
        best = None if place is None or not np.isfinite(best_span_scores[place]) else float(best_span_scores[place])
        records.append(
            WindowRecord(
                start,
                min(start + capacity, n_tokens),
                rank[window],
                None if lexical is None else float(lexical[window]),
                place,
                None if place is None else float(answerable_logits[place]),
                best,
                glimpses.get(window),
            )
        )
    return records
