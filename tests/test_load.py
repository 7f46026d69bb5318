"""Ten questions at once on loopback: the queue takes them all and every one gets an answer."""

from __future__ import annotations

import time

from gradio_client import Client

from app.examples import load_examples
from tests.ui_support import served_app

CONCURRENT = 10
TIME_LIMIT_S = 150  # generous for two shared cores; a hung queue fails long before pytest's own limits


def test_ten_concurrent_questions_all_get_answers():
    client = Client(served_app(), verbose=False)
    # one medium document (first two sections of an example), ten different questions
    html = load_examples()[1].read_html()
    document = html[: html.index("<h2>Structure and systems</h2>")]
    questions = [f"Question {i}: who built the station and when did work on it begin?" for i in range(CONCURRENT)]

    start = time.monotonic()
    jobs = [client.submit(document, q, api_name="/answer") for q in questions]
    results = [job.result(timeout=TIME_LIMIT_S) for job in jobs]
    elapsed = time.monotonic() - start

    assert len(results) == CONCURRENT
    for result in results:
        assert result["answer"], result
        assert result["text"][result["start"] : result["end"]] == result["answer"]
    assert elapsed < TIME_LIMIT_S
