"""What the explorer shows: one window of a question's reading, aimed at by an n-best answer or a window.

An :class:`ExplorerTarget` is a small value, kept by the page beside the answer: the document, the question,
the reading's windows and answers, and where it is aimed. It is aimed by a typed choice, :class:`AnswerChoice`
(the K-th n-best answer and the window it came from) or :class:`WindowChoice` (any window of the document,
read or not); :meth:`ExplorerTarget.choices` lists them with a label for a menu.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from littlebird.documents.clean import Document
from littlebird.reader import Answer, WindowRecord

if TYPE_CHECKING:
    from littlebird.app.asking import AskView, Settings


@dataclass(frozen=True)
class AnswerChoice:
    """Aim at the n-best answer ``index`` (0 the best) and the window it was read from."""

    index: int


@dataclass(frozen=True)
class WindowChoice:
    """Aim at window ``index`` of the document (document order), following the best answer read from it, if any."""

    index: int


Aim = AnswerChoice | WindowChoice


@dataclass(frozen=True)
class ExplorerTarget:
    """What the explorer needs to show the attention of one window of a question's reading.

    It starts aimed at the best answer's window (:meth:`of`); :meth:`aimed` turns it to another
    n-best answer or any window of the document, read or not (:meth:`choices` lists them).
    """

    document: Document
    question: str
    checkpoint: str | None
    max_length: int
    windows: tuple[WindowRecord, ...]  # every window of the document, in document order
    answers: tuple[Answer, ...]  # the n-best, best first
    window: int  # the window aimed at: an index of ``windows``
    answer: int | None  # the n-best answer aimed at, whose tokens the views follow; None: none in the window
    no_answer: bool = False  # the reading's decision, for the document view the explorer redraws

    @classmethod
    def of(cls, view: AskView, question: str, settings: Settings) -> ExplorerTarget | None:
        """The target of ``view``'s answer to ``question``, aimed at the best answer's window (the
        first window read, without one); None when nothing was read."""
        result = view.reading
        if not any(w.read is not None for w in result.windows):
            return None
        target = cls(
            view.document,
            question,
            settings.checkpoint,
            settings.reading.max_length,
            tuple(result.windows),
            tuple(result.answers),
            window=0,
            answer=None,
            no_answer=result.no_answer,
        )
        return target.aimed(AnswerChoice(0) if result.answers else WindowChoice(target._window_read(0)))

    @property
    def document_start(self) -> int:
        """First document token of the window aimed at."""
        return self.windows[self.window].start

    @property
    def answer_span(self) -> tuple[int, int] | None:
        """The answer aimed at, as a span of ``document.text``; None without one."""
        if self.answer is None:
            return None
        answer = self.answers[self.answer]
        return answer.start, answer.end

    @property
    def aim(self) -> Aim:
        """The choice of :meth:`choices` this target is aimed by."""
        return WindowChoice(self.window) if self.answer is None else AnswerChoice(self.answer)

    def _window_read(self, reading_index: int) -> int:
        """The index in ``windows`` of the window read ``reading_index``-th (an ``Answer.window``)."""
        return next(i for i, w in enumerate(self.windows) if w.read == reading_index)

    def aimed(self, aim: Aim) -> ExplorerTarget:
        """This target aimed at ``aim``: an n-best answer and its window, or a window of the document (following
        the best n-best answer read from it, if any)."""
        if isinstance(aim, AnswerChoice):
            if not 0 <= aim.index < len(self.answers):
                raise ValueError(f"there are {len(self.answers)} answers, so no answer {aim.index}")
            return replace(self, window=self._window_read(self.answers[aim.index].window), answer=aim.index)
        if not isinstance(aim, WindowChoice):
            raise TypeError(f"aim the explorer with an AnswerChoice or a WindowChoice, got {aim!r}")
        if not 0 <= aim.index < len(self.windows):
            raise ValueError(f"the document has {len(self.windows)} windows, so no window {aim.index}")
        reading_index = self.windows[aim.index].read
        answer = next((k for k, a in enumerate(self.answers) if a.window == reading_index), None)
        return replace(self, window=aim.index, answer=None if reading_index is None else answer)

    def choices(self) -> list[tuple[str, Aim]]:
        """(label, aim) of everything the explorer can be aimed at: the n-best answers, then every window."""
        answers = [
            (
                f"answer #{k + 1}: “{' '.join(a.text.split())[:48]}” ({a.probability:.0%}), window "
                f"{self._window_read(a.window)}",
                AnswerChoice(k),
            )
            for k, a in enumerate(self.answers)
        ]
        return answers + [(window_label(i, w), WindowChoice(i)) for i, w in enumerate(self.windows)]


def _ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, ... 11th, 12th, 13th, 21st."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def window_label(index: int, window: Any) -> str:
    """One line on a window of the reading: where it is, its first-pass rank, whether and when it was read."""
    read = "not read" if window.read is None else f"read {_ordinal(window.read + 1)}"
    return f"window {index} · tokens {window.start:,}–{window.end:,} · first pass #{window.rank + 1} · {read}"
