"""Stopping work nobody waits for: a question asked again from the same page, or a client that has gone.

Gradio cannot stop a handler that is already running (``cancels=`` reaches queued events and
generators between yields, not a function in its thread pool), so the reader asks a ``should_stop``
callable before each window (:func:`littlebird.reader.read`) and :class:`Cancellation` answers it,
per Gradio session (``gr.Request.session_hash``):

- Pressing Ask calls :meth:`Cancellation.new_question` before the question is queued. Every question
  the page asked before is unwanted from then on, whether it is being read or still waits.
- Gradio's ``unload`` event fires when a page is closed or reloaded, and when an API client's
  heartbeat connection drops; it calls :meth:`Cancellation.end_session`, which stops everything
  that session asked.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class Cancellation:
    """Which questions each session still wants; one per app, shared by its handlers."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._newest: dict[str, int] = {}  # page session -> number of its newest question
        self._running: dict[str, set[threading.Event]] = {}  # session -> "gone" flags of its questions being answered

    def new_question(self, session: str) -> int:
        """Number a new question from the page of ``session``; the session's earlier questions stop being wanted."""
        with self._lock:
            number = self._newest.get(session, 0) + 1
            self._newest[session] = number
            return number

    @contextmanager
    def answering(self, session: str | None, number: int | None = None) -> Iterator[Callable[[], bool]]:
        """While a question of ``session`` is answered, its ``should_stop``: true once the session has ended or,
        for a page's question ``number`` (from :meth:`new_question`), once the page asked a newer question.

        Without a session (a direct call, not through Gradio) nothing stops it.
        """
        if session is None:
            yield lambda: False
            return
        gone = threading.Event()
        with self._lock:
            self._running.setdefault(session, set()).add(gone)

        def should_stop() -> bool:
            return gone.is_set() or (number is not None and self._newest.get(session) != number)

        try:
            yield should_stop
        finally:
            with self._lock:
                flags = self._running[session]
                flags.discard(gone)
                if not flags:
                    del self._running[session]

    def end_session(self, session: str) -> None:
        """The client of ``session`` has gone: stop everything it asked, and forget it."""
        with self._lock:
            self._newest.pop(session, None)
            for gone in self._running.get(session, ()):
                gone.set()
