"""Glimpses: of a document with more than :data:`~littlebird.reading_options.GLIMPSE_ABOVE` ranked windows, the model
first reads a short glimpse of each (``glimpse_tokens`` input tokens around the window's best-matching chunk, all in
one batch), then reads in full, in turn and under the stop rules, at most ``glimpse_keep`` windows that the glimpses'
answerable logits and BM25 together find likeliest to hold the answer
(:func:`littlebird.window_ranking.glimpse_choice`). ``Reading.stopped`` is then "glimpsed" unless a stop rule or the
time ended the reading."""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..reading_options import GLIMPSE_ABOVE, MAX_ANSWER_LENGTH, TOP_K_STARTS
from ..window_ranking import best_chunk_centres, glimpse_choice, order_by_score
from .layout import SpecialIds, build_windows, window_capacity
from .model import ReadingModel
from .passes import run_windows
from .plan import Plan
from .steps import ReadingContext, WindowStep


def glimpse_starts(
    centres: Sequence[int], starts: Sequence[int], capacity: int, n_tokens: int, glimpse_capacity: int
) -> list[int]:
    """Document start of each window's glimpse: ``glimpse_capacity`` tokens centred on ``centres[i]``, kept
    inside window ``[starts[i], starts[i] + capacity)`` and the document."""
    out = []
    for centre, start in zip(centres, starts):
        end = min(start + capacity, n_tokens)
        out.append(int(min(max(start, centre - glimpse_capacity // 2), max(start, end - glimpse_capacity))))
    return out


def glimpse_logits(
    model: ReadingModel,
    tokenizer,
    ids: SpecialIds,
    prefix: Sequence[int],
    question_ids: Sequence[int],
    document_ids: np.ndarray,
    starts: Sequence[int],
    capacity: int,
    glimpse_tokens: int,
    *,
    top_k_starts: int = TOP_K_STARTS,
    max_answer_length: int = MAX_ANSWER_LENGTH,
    should_stop: Callable[[], bool] | None = None,
) -> np.ndarray:
    """(W,) the model's answerable logit on a glimpse of each window ``[starts[i], starts[i] + capacity)``:
    ``prefix`` and the ``glimpse_tokens - len(prefix)`` document tokens around the window's best-matching
    chunk for ``question_ids`` (:func:`best_chunk_centres`), all glimpses in one batch."""
    n_tokens = len(document_ids)
    glimpse_capacity = window_capacity(n_tokens, len(prefix), glimpse_tokens)
    centres = best_chunk_centres(question_ids, document_ids, starts, capacity, tokenizer)
    glimpse_ids, glimpse_mask = build_windows(
        prefix,
        document_ids,
        glimpse_starts(centres, starts, capacity, n_tokens, glimpse_capacity),
        glimpse_capacity,
        ids.pad,
    )
    seen = run_windows(
        model,
        glimpse_ids,
        glimpse_mask,
        top_k_starts=min(top_k_starts, glimpse_ids.shape[1]),
        max_answer_length=max_answer_length,
        batch_size=len(starts),
        should_stop=should_stop,
    )
    return np.asarray(seen.answerable_logits, dtype=np.float64)


class Glimpse(WindowStep):
    """Glimpse each ranked window, then keep the ``glimpse_keep`` likeliest to read in full."""

    option = "glimpse_tokens"
    timing = "glimpse"
    place = 30

    @classmethod
    def wanted(cls, options) -> bool:
        return options.glimpse_tokens is not None and options.rank_windows and options.max_windows is not None

    def applies(self, plan: Plan) -> bool:
        return len(plan.order) > GLIMPSE_ABOVE

    def run(self, plan: Plan, context: ReadingContext) -> None:
        options = context.options
        context.announce("glimpse")
        seen = glimpse_logits(
            context.model,
            context.tokenizer,
            plan.ids,
            plan.prefix,
            plan.question_terms,
            plan.encoded.input_ids,
            plan.starts,
            plan.capacity,
            options.glimpse_tokens,
            top_k_starts=options.top_k_starts,
            max_answer_length=options.max_answer_length,
            should_stop=context.should_stop,
        )
        plan.glimpses = {window: float(logit) for window, logit in zip(plan.order, seen)}
        lexical = plan.lexical[plan.order] / max(float(plan.lexical.max()), 1e-9)
        plan.keep(order_by_score(glimpse_choice(seen, lexical))[: options.glimpse_keep])
        plan.narrowed = "glimpsed"
