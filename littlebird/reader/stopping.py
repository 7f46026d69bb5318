"""Stop rules: asked between windows, each says when the windows read so far suffice and the rest of the ranked
windows may stay unread.

A rule is one class, turned on by one field of :class:`~littlebird.reading_options.ReadingOptions` (its threshold)
and registered by being defined; the rules apply to ranked windows only (``rank_windows`` and ``max_windows``), and
the first rule met names why the reading stopped (``Reading.stopped``).
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from ..reading_options import MIN_WINDOWS_BEFORE_GIVING_UP, MIN_WINDOWS_BEFORE_STOP, ReadingOptions
from .passes import WindowLogits

STOP_RULES: list[type[StopRule]] = []  # every rule, in the order they are asked


class StopRule:
    """A rule asked after each window read: :meth:`met` says the windows read so far suffice."""

    option: ClassVar[str]  # the ReadingOptions field holding its threshold; None turns the rule off
    reason: ClassVar[str]  # what Reading.stopped says when the rule ended the reading

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        STOP_RULES.append(cls)

    def __init__(self, threshold: float):
        self.threshold = threshold

    @classmethod
    def from_options(cls, options: ReadingOptions) -> StopRule | None:
        """The rule at the threshold ``options`` give it; None where they turn it off or rank no windows."""
        threshold = getattr(options, cls.option, None)
        if threshold is None or not options.rank_windows or options.max_windows is None:
            return None
        return cls(threshold)

    def met(self, logits: WindowLogits) -> bool:
        """Whether the windows read so far (``logits``) suffice."""
        raise NotImplementedError


class ConfidentEnough(StopRule):
    """Found: :data:`MIN_WINDOWS_BEFORE_STOP` windows read and one answerable with at least ``stop_confidence``."""

    option, reason = "stop_confidence", "found"

    def met(self, logits: WindowLogits) -> bool:
        return confident_enough(logits, self.threshold)


class NothingFound(StopRule):
    """Nothing found: :data:`MIN_WINDOWS_BEFORE_GIVING_UP` windows read and none answerable with ``give_up_below``."""

    option, reason = "give_up_below", "nothing found"

    def met(self, logits: WindowLogits) -> bool:
        return nothing_found(logits, self.threshold)


def stop_rules(options: ReadingOptions) -> list[StopRule]:
    """The rules ``options`` turn on, in the order they are asked."""
    return [rule for rule in (kind.from_options(options) for kind in STOP_RULES) if rule is not None]


def why_stopped(rules: list[StopRule], logits: WindowLogits) -> str | None:
    """The reason of the first of ``rules`` met by the windows read (``logits``); None: read on."""
    return next((rule.reason for rule in rules if rule.met(logits)), None)


def stop_reason(logits: WindowLogits, stop_confidence: float | None, give_up_below: float | None) -> str | None:
    """Why the windows read so far suffice: "found" (:func:`confident_enough`), "nothing found"
    (:func:`nothing_found`), or None: read on. For scripts that replay the rules on logits read once."""
    rules = [
        rule(threshold)
        for rule, threshold in ((ConfidentEnough, stop_confidence), (NothingFound, give_up_below))
        if threshold is not None
    ]
    return why_stopped(rules, logits)


def confident_enough(logits: WindowLogits, stop_confidence: float) -> bool:
    """True once :data:`MIN_WINDOWS_BEFORE_STOP` windows are read and one is answerable with at least
    ``stop_confidence``: the reader's rule for leaving the rest of the ranked windows unread."""
    answerable = logits.answerable_logits
    if len(answerable) < MIN_WINDOWS_BEFORE_STOP:
        return False
    return bool(float(np.max(answerable)) >= _logit(stop_confidence))


def nothing_found(logits: WindowLogits, give_up_below: float) -> bool:
    """True once :data:`MIN_WINDOWS_BEFORE_GIVING_UP` windows are read and none is answerable with
    ``give_up_below``: the best-ranked parts show no sign of the answer, so the rest is not read."""
    answerable = logits.answerable_logits
    if len(answerable) < MIN_WINDOWS_BEFORE_GIVING_UP:
        return False
    return bool(float(np.max(answerable)) < _logit(give_up_below))


def _logit(p: float) -> float:
    """log(p / (1 - p)), infinite at 0 and 1: sigmoid(a) >= p  <=>  a >= _logit(p), with no overflow."""
    if p <= 0.0:
        return -math.inf
    if p >= 1.0:
        return math.inf
    return math.log(p / (1.0 - p))
