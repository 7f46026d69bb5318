"""Clients served in turn (``littlebird.app.turns``): a client that submits many questions at once makes another
wait for one of them, not for all; each client's own questions keep their order."""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest
from gradio_client import Client

from littlebird.app.turns import next_in_turn, serve_in_turn
from tests.support.ui import long_document, served_app, watch_readings


@dataclass
class FakeEvent:
    session_hash: str
    name: str


def test_the_session_served_longest_ago_goes_next_with_its_oldest_event():
    waiting = [FakeEvent("burst", f"b{i}") for i in range(5)] + [FakeEvent("page", "p0"), FakeEvent("page", "p1")]
    assert next_in_turn(waiting, {"burst": 20.0, "page": 10.0}).name == "p0"
    assert next_in_turn(waiting, {"burst": 10.0, "page": 20.0}).name == "b0"
    assert next_in_turn(waiting, {"burst": 10.0, "page": 10.0}).name == "b0"  # equals: the oldest event


def test_a_queue_it_does_not_know_keeps_gradios_order_and_says_so():
    class Demo:
        _queue = None

    with pytest.warns(RuntimeWarning, match="first come, first served"):
        assert serve_in_turn(Demo()) is False


def test_a_client_asking_after_a_burst_waits_for_one_of_its_questions_not_all(monkeypatch):
    readings = watch_readings(monkeypatch, pause=0.3)  # a question reads its 3 windows in about a second
    url = served_app()
    burst, other = Client(url, verbose=False), Client(url, verbose=False)
    document = long_document(3_000)
    asked = [f"Burst question {i}: where was Jikji printed?" for i in range(6)]
    jobs = [burst.submit(document, question, api_name="/answer") for question in asked]
    deadline = time.monotonic() + 120
    while not any(r.first_window.is_set() for r in readings if r.question in asked) and time.monotonic() < deadline:
        time.sleep(0.05)
    mine, asked_at = "Where was Jikji printed, asked after the burst?", time.monotonic()
    assert other.submit(document, mine, api_name="/answer").result(timeout=120)["answer"]
    assert all(job.result(timeout=120)["answer"] for job in jobs)

    started = {r.question: r.started for r in readings if r.question in (*asked, mine)}
    after = [q for q in asked if started[q] > asked_at]  # the burst's questions that were still waiting
    ahead = [q for q in after if started[q] < started[mine]]
    assert len(after) >= 3, started  # most of the burst waited; first come, first served would read them all first
    # One of them may go first: its session was served before this one was first seen; then it is this one's turn.
    assert len(ahead) <= 1, started
