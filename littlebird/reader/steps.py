"""The window steps: what happens between planning the windows and reading them in full.

Each step is one class, turned on by one field of :class:`~littlebird.reading_options.ReadingOptions` and registered
by being defined (a subclass of :class:`WindowStep`). :func:`window_steps` gives the steps a reading's options name,
by their ``place``: the first pass (:mod:`~littlebird.reader.bm25`, 10), the lexical prior
(:mod:`~littlebird.reader.lexical_prior`, 20), the glimpses (:mod:`~littlebird.reader.glimpse`, 30), then a step
that says no place (100), in the order they were defined. A step ranks, weighs or narrows the windows of a
:class:`~littlebird.reader.plan.Plan`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ClassVar

from ..reading_options import ReadingOptions
from .model import ReadingModel
from .plan import Plan

WINDOW_STEPS: list[type[WindowStep]] = []  # every step, in the order they were defined


@dataclass(frozen=True)
class ReadingContext:
    """What a step may use besides the plan: the model and tokenizer, the options, and the caller's callables
    (see :func:`littlebird.reader.read`)."""

    model: ReadingModel
    tokenizer: Any
    options: ReadingOptions
    should_stop: Callable[[], bool] | None = None
    on_pass: Callable[[str], None] | None = None

    def announce(self, kind: str) -> None:
        """Tell the caller's ``on_pass`` what the model's next passes are ("glimpse", "read")."""
        if self.on_pass is not None:
            self.on_pass(kind)


class WindowStep:
    """A step that ranks, weighs or narrows the windows to read. A subclass names its ``option`` and implements
    :meth:`run`; defining it registers it."""

    option: ClassVar[str | None] = None  # the ReadingOptions field that turns it on; None: always on
    timing: ClassVar[str] = "rank"  # the entry of Reading.timings its seconds count in
    place: ClassVar[int] = 100  # where it runs among the steps, the lowest first

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        WINDOW_STEPS.append(cls)

    @classmethod
    def wanted(cls, options: ReadingOptions) -> bool:
        """Whether ``options`` turn the step on: its option is set (not None or False)."""
        if cls.option is None:
            return True
        value = getattr(options, cls.option, None)
        return value is not None and value is not False

    def applies(self, plan: Plan) -> bool:
        """Whether the step has anything to do for this document (checked before it is timed)."""
        return True

    def run(self, plan: Plan, context: ReadingContext) -> None:
        """Change ``plan``'s ranking, order or prior."""
        raise NotImplementedError


def window_steps(options: ReadingOptions) -> list[WindowStep]:
    """The steps ``options`` turn on, in the order a reading runs them."""
    return [kind() for kind in sorted(WINDOW_STEPS, key=lambda kind: kind.place) if kind.wanted(options)]
