"""What the reader needs of a model (:class:`ReadingModel`), and the model's side of a reading: its longest input,
its device, its threads and CPU mode.

LittleBird, the teacher (:mod:`littlebird.training.teacher_model`) and the baseline adapters
(:mod:`littlebird.baselines`) all offer it. The reader asks the model through this protocol only: it writes
nothing onto a model, and keeps which models it has settled in a table of its own.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Protocol

import torch

from ..reading_options import DEFAULT_NO_ANSWER_THRESHOLD, ReadingOptions


class ReadingModel(Protocol):
    """An extractive QA model as the reader calls it.

    ``model(input_ids=(W, L), attention_mask=(W, L), top_k_starts=k, max_answer_length=a)`` answers with
    ``top_start_indices`` (W, k), ``top_start_logits`` (W, k), ``top_end_logits`` (W, k, a): the end logit of
    start + offset, the dtype's minimum where not allowed, and ``answerable_logits`` (W,); ``start_logits`` (W, L)
    where it has them (the reader normalises spans with them). Two attributes say more, each optional:
    ``max_input_length``, the longest input its positions cover (None or absent: any length), and
    ``end_depends_on_start`` (absent: True), False for a model whose end logits ignore the start (the baselines),
    whose spans the reader then scores with the raw end logits. Its weights are its ``parameters()``; on CPU the
    reader converts it with :func:`littlebird.inference.optimize_for_cpu` when a reading asks for a CPU mode.
    """

    def __call__(
        self, *, input_ids: torch.Tensor, attention_mask: torch.Tensor, top_k_starts: int, max_answer_length: int
    ) -> Any: ...

    def parameters(self): ...


def max_input_length(model: ReadingModel) -> int | None:
    """The longest input the model's positions cover, as it says (``max_input_length``); None: any length."""
    limit = getattr(model, "max_input_length", None)
    return None if limit is None else int(limit)


def end_depends_on_start(model: ReadingModel) -> bool:
    """Whether the model's end logits are conditioned on the start (appendix A.2's head), as it says."""
    return getattr(model, "end_depends_on_start", True)


def no_answer_threshold(model: ReadingModel | None, options: ReadingOptions) -> float:
    """The answerable probability below which a reading says "no answer": the options' where they set one, else
    the checkpoint's own (``no_answer_threshold`` in its config, chosen on the dev files by ``littlebird evaluate
    --thresholds``), else ``DEFAULT_NO_ANSWER_THRESHOLD``."""
    if options.no_answer_threshold is not None:
        return options.no_answer_threshold
    stored = getattr(getattr(model, "config", None), "no_answer_threshold", None)
    return DEFAULT_NO_ANSWER_THRESHOLD if stored is None else float(stored)


def window_length(model: ReadingModel, max_length: int | None) -> int | None:
    """``max_length`` (None: one pass) capped by what the model's positions cover."""
    limit = max_input_length(model)
    if limit is None:
        return max_length
    return limit if max_length is None else min(max_length, limit)


def model_device(model: ReadingModel) -> torch.device:
    """Where the model's weights are (the CPU for a model without any)."""
    try:
        return next(model.parameters()).device
    except StopIteration:
        return torch.device("cpu")


# model -> the cpu_mode a reading asked of it and got: settled, so the CPU's flags are not read on every question
_settled_cpu_modes: "weakref.WeakKeyDictionary[Any, str]" = weakref.WeakKeyDictionary()
_settled_lock = threading.Lock()


def prepare_model(model: ReadingModel | None, options: ReadingOptions) -> None:
    """Set the threads and the CPU mode ``options`` ask for: see :class:`ReadingOptions`."""
    if options.threads is not None and torch.get_num_threads() != options.threads:
        torch.set_num_threads(options.threads)
    if options.cpu_mode is None or model is None:
        return
    with _settled_lock:
        if _settled_cpu_modes.get(model) == options.cpu_mode:
            return  # asked for this mode before: settled
    if model_device(model).type != "cpu":
        return
    from ..inference import cpu_mode_of, optimize_for_cpu, resolve_cpu_mode

    wanted = resolve_cpu_mode(options.cpu_mode)
    current = cpu_mode_of(model)
    if current != wanted:
        if current != "fp32":
            raise ValueError(
                f"cpu_mode {options.cpu_mode!r} asks for {wanted}, but the model was converted to "
                f"{current}; load it again to read in another mode"
            )
        optimize_for_cpu(model, wanted, inplace=True)
    with _settled_lock:
        _settled_cpu_modes[model] = options.cpu_mode
