"""What the UI tests share: a tiny answering model and the app served on loopback, once per run.

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
import threading
from collections.abc import Iterator
from pathlib import Path

import torch

from app import models, ui
from tests.qa_factories import qa_tokenizer, tiny_model_for_tokenizer

TEST_MODEL = "tiny-test-model"


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


@contextlib.contextmanager
def serve_directory(directory: Path) -> Iterator[str]:
    """Serve ``directory`` over HTTP on 127.0.0.1 for the duration of the block; yields its base URL."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
