"""Clients served in turn: one client's many questions do not make everyone else wait behind them all.

Gradio's queue starts the oldest waiting event of a concurrency group first. A client that submits 50 questions at
once through the API then holds everyone who asks after it until all 50 are read: minutes, on two cores.
:func:`serve_in_turn` makes the demo's queue start, of a group's waiting events, the oldest of the session served
longest ago (:func:`next_in_turn`): sessions take turns, and each session's own events keep their order. Whoever
asks waits for at most one event of each other session that is waiting, however many each has queued.

Clients are told apart by their Gradio session (a page, a ``gradio_client.Client``); a client that opens a new
session for every question is as many clients, as it is to Gradio.

Gradio has no setting or hook for the order, so this replaces ``get_events`` of the demo's own queue, the method
its loop calls for the next events to start. It is written against Gradio 6's queue (``gradio>=6,<7`` in
pyproject.toml); when the queue lacks what it reads, the demo keeps Gradio's order and a warning says so.
``tests/app/test_turns.py`` checks the order on the installed Gradio.
"""

from __future__ import annotations

import random
import time
import warnings
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

_SESSIONS_KEPT = 10_000  # when each session was last served: far more sessions than ever wait at once, bounded


def next_in_turn(waiting: Sequence[Any], served: dict[str, float]) -> Any:
    """Of ``waiting`` (events, oldest first, each with a ``session_hash``), the oldest event of the session that
    ``served`` (session -> when it last started an event, or was first seen waiting) names earliest."""
    return min(waiting, key=lambda event: served[event.session_hash])  # min keeps the first of equals: the oldest


def serve_in_turn(demo) -> bool:
    """Make ``demo``'s queue (after ``demo.queue()``) start events in turn by session; False, with a warning, when
    Gradio's queue is not the one this was written for."""
    queue = getattr(demo, "_queue", None)
    groups = getattr(queue, "event_queue_per_concurrency_id", None)
    if not callable(getattr(queue, "get_events", None)) or not isinstance(groups, dict):
        warnings.warn(
            "Gradio's queue is not the one littlebird.app.turns knows: its events start first come, first served",
            RuntimeWarning,
            stacklevel=2,
        )
        return False
    served: OrderedDict[str, float] = OrderedDict()

    def note(session: str, at: float) -> None:
        served[session] = at
        served.move_to_end(session)
        while len(served) > _SESSIONS_KEPT:
            served.popitem(last=False)

    def get_events() -> tuple[list, bool, str] | None:
        """Gradio's ``Queue.get_events`` with the next event picked by :func:`next_in_turn`."""
        now = time.monotonic()
        ids = list(groups)
        random.shuffle(ids)  # as Gradio does: no group goes first always
        for concurrency_id in ids:
            group = groups[concurrency_id]
            for event in group.queue:  # a session first seen now takes its turn after those already waiting
                if event.session_hash not in served:
                    note(event.session_hash, now)
            if group.queue and (group.concurrency_limit is None or group.current_concurrency < group.concurrency_limit):
                first = next_in_turn(group.queue, served)
                events = [first]
                if first.fn.batch:  # a batched function takes its other waiting events along, as in Gradio
                    events += [e for e in group.queue if e is not first and e.fn == first.fn][
                        : first.fn.max_batch_size - 1
                    ]
                for event in events:
                    group.queue.remove(event)
                    note(event.session_hash, now)
                return events, first.fn.batch, concurrency_id
        return None

    queue.get_events = get_events
    return True
