"""The first step: plan the windows. The question's prefix, the document's tokens and where every window starts;
then :class:`Plan` carries the reading through the steps that rank, weigh and narrow its windows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from ..reading_options import ReadingOptions
from .layout import (
    SpecialIds,
    default_stride,
    question_cap,
    question_prefix,
    special_ids,
    tokenize_questions,
    window_capacity,
    window_starts,
)
from .model import ReadingModel, window_length
from .tokens import EncodedText, encode_text


@dataclass
class Plan:
    """A question's windows and which of them to read, as the steps leave it.

    Planning fills the first fields. The window steps (:mod:`littlebird.reader.steps`) then set ``ranked`` and
    ``lexical`` (the first pass), reorder and narrow ``order`` (the windows the model reads in full, in turn),
    weigh them (``prior``, one value per window of ``order``), and say why they left ranked windows unread
    (``narrowed``).
    """

    text: str  # the document as shown; answers are its spans
    encoded: EncodedText  # the model text's tokens and their spans in ``text``
    ids: SpecialIds
    question_ids: list[int]  # the question's tokens, before the cap of its prefix
    max_length: int | None  # the window, capped by the model's positions (None: one pass)
    prefix: list[int]  # [CLS] [QUESTION] question [SEP]
    capacity: int  # document tokens per window
    every_start: list[int]  # where each window's document part starts, in document order
    ranked: list[int] = field(default_factory=list)  # every window, in the first pass's order
    lexical: np.ndarray | None = None  # (W,) the first pass's score of every window; None: nothing was ranked
    order: list[int] = field(default_factory=list)  # the windows to read in full, in reading order
    prior: np.ndarray | None = None  # one score per window of ``order`` that decoding adds to its spans
    glimpses: dict[int, float] | None = None  # window -> its glimpse's answerable logit, where glimpsed
    narrowed: str | None = None  # why a step left ranked windows unread (``Reading.stopped``): "glimpsed"

    @property
    def n_tokens(self) -> int:
        return len(self.encoded.input_ids)

    @property
    def has_text(self) -> bool:
        """Whether any document token has text to answer from."""
        return self.n_tokens > 0 and not (self.encoded.spans[:, 0] < 0).all()

    @property
    def starts(self) -> list[int]:
        """Where each window of ``order`` starts, in reading order."""
        return [self.every_start[i] for i in self.order]

    @property
    def question_terms(self) -> list[int]:
        """The question's tokens as its prefix holds them: what the first pass matches."""
        return self.question_ids[: question_cap(self.max_length)]

    def keep(self, places: Sequence[int]) -> None:
        """Read only the windows at ``places`` of ``order``, in that order (their prior with them)."""
        self.order = [self.order[i] for i in places]
        self.prior = None if self.prior is None else self.prior[list(places)]


def plan_windows(
    question: str,
    text: str,
    *,
    model: ReadingModel,
    tokenizer,
    options: ReadingOptions,
    model_text: str | None = None,
    model_to_text=None,
) -> Plan:
    """The windows of ``text`` (read as ``model_text``, see :func:`littlebird.reader.read`) for ``question``, in
    document order, all of them to be read."""
    max_length = window_length(model, options.max_length)
    ids = special_ids(tokenizer, model)
    encoded = encode_text(text if model_text is None else model_text, tokenizer, text=text, model_to_text=model_to_text)
    question_ids = tokenize_questions([question], tokenizer)[0]
    prefix = question_prefix(question_ids, ids, max_length)
    n_tokens = len(encoded.input_ids)
    capacity = window_capacity(n_tokens, len(prefix), max_length)
    stride = default_stride(max_length or capacity) if options.stride is None else options.stride
    every_start = window_starts(n_tokens, capacity, stride)
    every = list(range(len(every_start)))
    return Plan(
        text, encoded, ids, question_ids, max_length, prefix, capacity, every_start, ranked=every, order=list(every)
    )
