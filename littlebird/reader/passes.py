"""The model's passes over windows: one forward per batch of windows, between which a reading can end.

:func:`run_windows` stops between batches once the time budget is spent, once a stop rule
(:mod:`littlebird.reader.stopping`) says the windows read suffice, and raises :class:`ReadingStopped` once nobody
wants the answer any more. :class:`WindowLogits` holds what the model said of the windows read, as numpy arrays.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from .model import ReadingModel, model_device


@dataclass
class WindowLogits:
    """The model's QA outputs over all windows, as numpy arrays."""

    top_start_indices: np.ndarray  # (W, k) window positions
    top_start_logits: np.ndarray  # (W, k)
    top_end_logits: np.ndarray  # (W, k, L): end logit of start + offset, -inf where not allowed
    answerable_logits: np.ndarray  # (W,)
    start_log_normalizers: np.ndarray | None = None  # (W,): log-sum-exp of each window's start logits

    def head(self, k: int) -> "WindowLogits":
        """The logits of the first ``k`` windows read: what the reader had after reading ``k``."""
        return WindowLogits(
            *(
                None if a is None else a[:k]
                for a in (
                    self.top_start_indices,
                    self.top_start_logits,
                    self.top_end_logits,
                    self.answerable_logits,
                    self.start_log_normalizers,
                )
            )
        )


class ReadingStopped(Exception):
    """A reading ended early because its ``should_stop`` said so: nobody wants its answer any more."""


def _check(should_stop: Callable[[], bool] | None) -> None:
    """Raise ReadingStopped when ``should_stop`` says the reading is no longer wanted."""
    if should_stop is not None and should_stop():
        raise ReadingStopped("the reading was stopped before it finished: its answer is no longer wanted")


def run_windows(
    model: ReadingModel,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    *,
    top_k_starts: int,
    max_answer_length: int,
    batch_size: int = 1,
    deadline: float | None = None,
    on_window: Callable[[int, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    enough: Callable[[WindowLogits], bool] | None = None,
) -> WindowLogits:
    """One forward per ``batch_size`` windows, stopping between batches once ``time.monotonic()``
    passes ``deadline`` (the first batch always runs, so there is something to answer from), or
    once ``enough(logits so far)`` says the windows read suffice.

    ``on_window(done, total)`` is called after each batch. The logits cover the windows read,
    the first ``len(answerable_logits)`` of ``input_ids``. ``should_stop()`` is asked before
    every batch, the first included; when it returns True, ReadingStopped is raised.
    """
    device = model_device(model)
    outputs, normalizers = [], []
    with torch.inference_mode():
        for first in range(0, len(input_ids), batch_size):
            _check(should_stop)
            if outputs and deadline is not None and time.monotonic() >= deadline:
                break
            if outputs and enough is not None and enough(_window_logits(outputs, normalizers)):
                break
            out = model(
                input_ids=input_ids[first : first + batch_size].to(device),
                attention_mask=attention_mask[first : first + batch_size].to(device),
                top_k_starts=top_k_starts,
                max_answer_length=max_answer_length,
            )
            outputs.append([out.top_start_indices, out.top_start_logits, out.top_end_logits, out.answerable_logits])
            every_start = getattr(out, "start_logits", None)  # padding is masked to the dtype's minimum
            every_start = out.top_start_logits if every_start is None else every_start
            normalizers.append(torch.logsumexp(every_start.float(), dim=-1))
            if on_window is not None:
                on_window(min(first + batch_size, len(input_ids)), len(input_ids))
    return _window_logits(outputs, normalizers)


def _window_logits(outputs: list, normalizers: list) -> WindowLogits:
    """The numpy WindowLogits of the model outputs collected so far."""
    indices, starts, ends, answerable = (torch.cat(parts).cpu() for parts in zip(*outputs))
    # bf16 logits have no numpy type; float32 is exact for them.
    return WindowLogits(
        indices.numpy(),
        impossible_as_minus_infinity(starts.float().numpy()),
        impossible_as_minus_infinity(ends.float().numpy()),
        answerable.float().numpy(),
        torch.cat(normalizers).cpu().numpy(),
    )


def impossible_as_minus_infinity(logits: np.ndarray) -> np.ndarray:
    """``logits`` with the model's "impossible" marks as -inf: the model masks ends past its window,
    before their start or beyond the answer length (and padded starts) with its dtype's minimum, as
    transformers models do, and decoding here tells allowed spans by a finite score."""
    return np.where(logits <= np.finfo(np.float32).min / 2, -np.inf, logits)
