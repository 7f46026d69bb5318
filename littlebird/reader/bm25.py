"""The first pass: the windows ranked by BM25 against the question (:mod:`littlebird.window_ranking`), the
likeliest to hold the answer first, and the best ``max_windows`` of them kept to read. The cost of a question then
stays nearly flat in the document's length."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..window_ranking import order_by_score, window_scores
from .plan import Plan
from .steps import ReadingContext, WindowStep


def first_pass(
    question_ids: Sequence[int], document_ids: np.ndarray, starts: Sequence[int], capacity: int, tokenizer
) -> tuple[list[int], np.ndarray | None]:
    """Every index of ``starts`` in reading order, the likeliest to hold the answer first (BM25,
    :mod:`littlebird.window_ranking`; ties in document order), and the windows' BM25 scores (None for
    a document of one window: there is nothing to rank, so nothing is scored)."""
    if len(starts) <= 1:
        return list(range(len(starts))), None
    scores = window_scores(question_ids, document_ids, starts, capacity, tokenizer)
    return order_by_score(scores), scores


class Bm25Ranking(WindowStep):
    """Rank every window by BM25 and keep the best ``max_windows`` (None: all of them), best first."""

    place = 10

    def run(self, plan: Plan, context: ReadingContext) -> None:
        plan.ranked, plan.lexical = first_pass(
            plan.question_terms, plan.encoded.input_ids, plan.every_start, plan.capacity, context.tokenizer
        )
        max_windows = context.options.max_windows
        plan.order = plan.ranked if max_windows is None else plan.ranked[:max_windows]
