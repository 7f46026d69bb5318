"""What the UI tests share: a tiny answering model, the app served on loopback once per run, and a watch
on the readings it starts.

The browser, API and load tests all talk to the same server, so the model and the
tokenizer (about 8 s to build) are built once per pytest process.
"""

from __future__ import annotations

import atexit
import contextlib
import copy
import functools
import http.server
import socket
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch

from littlebird.app import models, ui
from tests.support.qa import qa_tokenizer, tiny_model_for_tokenizer

TEST_MODEL = "tiny-test-model"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@functools.lru_cache(maxsize=1)
def tiny_answering_model():
    """The tests' random two-layer model in fp32, as a checkpoint would hold it.

    Its no-answer classifier is biased towards "answerable" so that the answer path
    (highlight, probability, offsets) is what the tests see; the spans themselves are
    arbitrary.
    """
    model = copy.deepcopy(tiny_model_for_tokenizer(0))  # the cached original is shared with test_qa
    with torch.no_grad():
        model.qa_head.answerable.bias.fill_(6.0)
    return model


@functools.lru_cache(maxsize=1)
def tiny_loaded_model() -> models.LoadedModel:
    """``tiny_answering_model`` served under TEST_MODEL, in whatever CPU mode the app picks here."""
    return models.use_model(TEST_MODEL, tiny_answering_model(), qa_tokenizer())


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@functools.lru_cache(maxsize=1)
def served_app() -> str:
    """Start the demo with the tiny model on 127.0.0.1 (once) and return its URL."""
    tiny_loaded_model()
    demo = ui.build_demo(TEST_MODEL, allow_local_urls=True)
    demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True, ssr_mode=False)
    atexit.register(demo.close)
    return demo.local_url


class _QuietServer(http.server.ThreadingHTTPServer):
    """A file server that says nothing when a client hangs up mid-page, as the app does on a page over its size
    limit."""

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


@contextlib.contextmanager
def serve_directory(directory: Path) -> Iterator[str]:
    """Serve ``directory`` over HTTP on 127.0.0.1 for the duration of the block; yields its base URL."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(directory))
    server = _QuietServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class WatchedReading:
    """One call of the reader by the served app, as the test sees it."""

    question: str
    started: float  # time.monotonic() when the reader was called
    windows_read: int = 0
    windows_planned: int | None = None
    outcome: str | None = None  # "answered" or "stopped" (ReadingStopped), once it has ended
    ended_at: float | None = None
    first_window: threading.Event = field(default_factory=threading.Event)
    ended: threading.Event = field(default_factory=threading.Event)


def watch_readings(monkeypatch, *, pause: float) -> list[WatchedReading]:
    """Record every reading the app starts from now on, each window followed by ``pause`` seconds.

    The pause, taken where the reader reports a window, makes a short document take long enough
    to be stopped half way; the reader's own ``should_stop`` check follows it. A watched reading
    reads all the windows it plans (no early stop, found or not), so it lasts as long as a test
    counts on whatever the tiny model's answerable head says.
    """
    from littlebird.reader import DEFAULT_READING, ReadingStopped, read

    readings: list[WatchedReading] = []

    def watched_read(question, text, *, options=DEFAULT_READING, **arguments):
        reading = WatchedReading(question, time.monotonic())
        readings.append(reading)
        report = arguments.get("on_window")

        def on_window(done, total):
            reading.windows_read, reading.windows_planned = done, total
            reading.first_window.set()
            time.sleep(pause)
            if report is not None:
                report(done, total)

        try:
            result = read(
                question,
                text,
                **{**arguments, "on_window": on_window},
                options=replace(options, stop_confidence=None, give_up_below=None),
            )
            reading.outcome = "answered"
            return result
        except ReadingStopped:
            reading.outcome = "stopped"
            raise
        finally:
            reading.ended_at = time.monotonic()
            reading.ended.set()

    monkeypatch.setattr("littlebird.app.qa.read", watched_read)
    return readings


def wait_for_reading(readings: list[WatchedReading], question: str, timeout: float = 120.0) -> WatchedReading:
    """The first reading of ``question`` once it has read a window."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [r for r in readings if r.question == question]
        if found and found[0].first_window.wait(0.1):
            return found[0]
        time.sleep(0.05)
    raise AssertionError(f"the app read no window for {question!r} within {timeout:g} s")


def long_document(n_tokens: int = 24_000) -> str:
    """Plain text of about ``n_tokens`` tokens: many of the app's 1K-token windows."""
    sentence = "Paragraph {}: Jikji was printed with movable metal type at Heungdeoksa temple in 1377.\n\n"
    return "".join(sentence.format(i) for i in range(n_tokens // 27))
