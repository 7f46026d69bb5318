"""The read: the model reads the planned windows in full, in turn, a batch at a time, until they are all read, the
time is spent or a stop rule (:mod:`littlebird.reader.stopping`) says the windows read suffice."""

from __future__ import annotations

from typing import Callable

from .layout import build_windows
from .passes import WindowLogits, run_windows
from .plan import Plan
from .steps import ReadingContext
from .stopping import StopRule, why_stopped


def read_in_full(
    plan: Plan,
    context: ReadingContext,
    rules: list[StopRule],
    *,
    deadline: float | None = None,
    on_window: Callable[[int, int], None] | None = None,
) -> WindowLogits:
    """The logits of the windows of ``plan.order`` read, the first ``len(answerable_logits)`` of them."""
    options = context.options
    input_ids, attention_mask = build_windows(
        plan.prefix, plan.encoded.input_ids, plan.starts, plan.capacity, plan.ids.pad
    )
    context.announce("read")
    enough = None if not rules else (lambda so_far: why_stopped(rules, so_far) is not None)
    return run_windows(
        context.model,
        input_ids,
        attention_mask,
        top_k_starts=min(options.top_k_starts, input_ids.shape[1]),
        max_answer_length=options.max_answer_length,
        batch_size=max(1, options.window_batch_size),
        deadline=deadline,
        on_window=on_window,
        should_stop=context.should_stop,
        enough=enough,
    )
