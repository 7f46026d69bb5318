"""The app's defaults, through the paths users take: the page's Ask handler called with the settings panel
as the page loads it, and the /answer endpoint's function (``app.asking.answer_document``).

The no-answer threshold, the reader's windows (``DEFAULT_MAX_LENGTH``, ``default_stride``,
``WINDOW_OVERLAP``) and the fetch limits are each checked by what they make the app do, with the
named constants where the project may still tune a value, and the README's figures where the
README promises one (a page of up to 5 MB, fetched within 10 s).
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import math
import re
import socket
import threading
import time
from collections.abc import Iterator

import gradio as gr
import pytest

from littlebird.app import asking, models, ui
from littlebird.app.asking import answer_document
from littlebird.app.examples import find_example
from littlebird.cli import main as littlebird
from littlebird.command_options import sliders
from littlebird.documents.errors import DocumentError
from littlebird.reader import (
    DEFAULT_MAX_LENGTH,
    DEFAULT_NO_ANSWER_THRESHOLD,
    DEFAULT_READING,
    MAX_ANSWER_LENGTH,
    WINDOW_OVERLAP,
    ReadingOptions,
    default_stride,
    no_answer_threshold,
    question_prefix,
    special_ids,
    tokenize_questions,
)
from tests.support.qa import model_answerable_at, qa_tokenizer
from tests.support.ui import TEST_MODEL, serve_directory, tiny_loaded_model

DEFAULT_THRESHOLD = DEFAULT_NO_ANSWER_THRESHOLD  # the app's with a checkpoint that stores none, as the test models

PAGE_BYTES = 5_000_000  # the README: "10 s and 5 MB limits" for a fetched page
FETCH_SECONDS = 10.0
SHORT_DOCUMENT = "<p>Jikji was printed with movable metal type at Heungdeoksa temple in 1377.</p>"
QUESTION = "When was Jikji printed?"


@pytest.fixture(scope="module", autouse=True)
def served() -> None:
    """The UI tests' tiny model (biased towards "answerable"), served as TEST_MODEL."""
    tiny_loaded_model()


def serve_answering_at(probability: float) -> str:
    """The tiny model, its answerable head fixed at ``probability`` for every window, served under a name."""
    name = f"answerable-{probability:.3f}"
    models.use_model(name, model_answerable_at(probability), qa_tokenizer())
    return name


@pytest.fixture(scope="module")
def threshold_models() -> dict[bool, str]:
    """Served model names whose answerable probability sits just below (True) and just above (False) the
    default threshold, keyed by whether the app should then say "No answer found"."""
    assert 0.0 < DEFAULT_THRESHOLD < 1.0, f"a no-answer threshold of {DEFAULT_THRESHOLD} makes the decision constant"
    return {True: serve_answering_at(DEFAULT_THRESHOLD - 0.02), False: serve_answering_at(DEFAULT_THRESHOLD + 0.02)}


def ask_on_the_page(demo: gr.Blocks, pasted: str, question: str) -> dict[str, str]:
    """Press Ask on a freshly loaded page of ``demo`` with ``pasted`` and ``question`` typed in and every
    other input (the settings panel included) at its initial value; the outputs by elem_id."""
    handlers = {fn.name: fn for fn in demo.fns.values()}
    ask, number = handlers["on_ask"], handlers["on_new_question"]
    request = gr.Request(session_hash=f"defaults-{id(demo)}")
    typed = {"lb-paste": pasted, "lb-question": question}
    values = {block: typed.get(getattr(block, "elem_id", None), block.value) for block in ask.inputs}
    values[number.outputs[0]] = number.fn(request)
    assert ask.inputs_as_dict  # the handler takes its inputs keyed by component and returns its outputs so
    outputs = ask.fn(values, request=request)
    return {block.elem_id: value for block, value in outputs.items() if getattr(block, "elem_id", None)}


# ---- one declaration of the reading's options --------------------------------------------------------


def shown_in_help(help_text: str, flag: str) -> tuple[str, str]:
    """(help, default) that ``--help`` shows for ``flag``, its lines unwrapped."""
    text = " ".join(help_text.split())
    found = re.search(rf"(?<!\[){re.escape(flag)} [A-Z_]+(?:, --[\w-]+ [A-Z_]+)? (.*?) \(default: ([^)]*)\)", text)
    assert found, f"{flag} shows no default"
    return found.group(1), found.group(2)


def test_evaluate_ask_serve_and_the_sliders_show_the_page_settings_of_one_declaration(capsys):
    helps = {}
    for command in ("evaluate", "ask", "serve"):
        with pytest.raises(SystemExit):
            littlebird([command, "--help"])
        helps[command] = capsys.readouterr().out
    page = {block.elem_id: block for block in ui.build_demo(TEST_MODEL).blocks.values() if isinstance(block, gr.Slider)}
    declared = {field.name: field for field in dataclasses.fields(ReadingOptions)}
    assert list(sliders(ReadingOptions)) == ["max_length", "max_windows", "n_best", "no_answer_threshold"]
    for name, slider in sliders(ReadingOptions).items():
        default, help_text = declared[name].default, declared[name].metadata["help"]
        for command, text in helps.items():
            if default is None:  # no "(default: ...)": the help says what None means
                assert " ".join(help_text.split()) in " ".join(text.split()), (command, name)
                continue
            assert shown_in_help(text, "--" + name.replace("_", "-")) == (" ".join(help_text.split()), str(default)), (
                command,
                name,
            )
        shown = page["lb-" + name.replace("_", "-")]
        if name == "no_answer_threshold":  # None: the checkpoint's own, which the slider shows
            assert default is None
            default = no_answer_threshold(tiny_loaded_model().model, DEFAULT_READING)
        assert (shown.value, shown.minimum, shown.maximum, shown.step) == (
            default,
            slider.low,
            slider.high,
            slider.step,
        )
        assert (shown.label, shown.info) == (slider.label, help_text)
    # the page opens with what `littlebird serve` is given
    served = ui.build_demo(TEST_MODEL, reading=dataclasses.replace(DEFAULT_READING, max_windows=20, n_best=3))
    values = {block.elem_id: block.value for block in served.blocks.values() if isinstance(block, gr.Slider)}
    assert (values["lb-max-windows"], values["lb-n-best"]) == (20, 3)
    with pytest.raises(ValueError, match="max_windows must be within 1..64"):
        ui.build_demo(TEST_MODEL, reading=dataclasses.replace(DEFAULT_READING, max_windows=100))
    # a setting whose declaration allows None is left to its source: the threshold to the checkpoint's own
    left = asking.Settings(reading=dataclasses.replace(DEFAULT_READING, no_answer_threshold=None))
    assert left.reading.no_answer_threshold is None


# ---- the no-answer threshold ------------------------------------------------------------------------


@pytest.mark.parametrize("says_none", [True, False], ids=["below", "above"])
def test_the_page_and_answer_say_no_answer_below_the_default_threshold(threshold_models, says_none):
    name = threshold_models[says_none]
    page = ask_on_the_page(ui.build_demo(name), SHORT_DOCUMENT, QUESTION)
    assert ("No answer found." in page["lb-answer-card"]) == says_none, page["lb-answer-card"]
    payload = answer_document(SHORT_DOCUMENT, QUESTION, checkpoint=name)
    assert payload["no_answer"] == says_none and (payload["answer"] is None) == says_none
    assert payload["answerable_probability"] == pytest.approx(
        DEFAULT_THRESHOLD + (-0.02 if says_none else 0.02), abs=2e-3
    )
    assert payload["n_best"]  # the guesses are listed either way


def test_a_checkpoints_stored_threshold_is_the_page_and_answers_default(tmp_path):
    model = model_answerable_at(0.6)
    model.config.no_answer_threshold = 0.7  # as `littlebird evaluate --thresholds ... --store` writes it
    name = "answerable-0.6-stored-0.7"
    models.use_model(name, model, qa_tokenizer())
    demo = ui.build_demo(name)
    [slider] = [b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "lb-no-answer-threshold"]
    assert slider.value == 0.7
    page = ask_on_the_page(demo, SHORT_DOCUMENT, QUESTION)
    assert "No answer found." in page["lb-answer-card"]  # 0.6 is below the checkpoint's 0.7
    assert answer_document(SHORT_DOCUMENT, QUESTION, checkpoint=name)["no_answer"]
    # a reading that sets its own threshold (the page's slider moved, `serve --threshold`) wins
    asked = dataclasses.replace(DEFAULT_READING, no_answer_threshold=0.5)
    assert not answer_document(SHORT_DOCUMENT, QUESTION, checkpoint=name, reading=asked)["no_answer"]
    # loading another checkpoint on the page moves the slider to that one's threshold
    on_load = {fn.name: fn for fn in demo.fns.values()}["on_load"]
    updates = on_load.fn(TEST_MODEL)
    [moved] = [update for block, update in updates.items() if block is slider]
    assert moved.value == DEFAULT_NO_ANSWER_THRESHOLD


# ---- the reader's windows ---------------------------------------------------------------------------


def test_the_page_and_answer_read_long_documents_in_the_default_windows(monkeypatch):
    name = TEST_MODEL
    views = []
    ask = ui.ask
    monkeypatch.setattr(ui, "ask", lambda *args, **kwargs: views.append(ask(*args, **kwargs)) or views[-1])
    html = find_example("en-iss").read_html()
    ask_on_the_page(ui.build_demo(name), html, QUESTION)
    [result] = [view.reading for view in views]

    tokenizer = qa_tokenizer()
    prefix = len(
        question_prefix(tokenize_questions([QUESTION], tokenizer)[0], special_ids(tokenizer), DEFAULT_MAX_LENGTH)
    )
    capacity = DEFAULT_MAX_LENGTH - prefix  # document tokens beside the question in a window of the default length
    n = result.n_tokens
    assert n > 3 * capacity, "the example should need several windows"
    stride = default_stride(DEFAULT_MAX_LENGTH)
    assert stride == max(DEFAULT_MAX_LENGTH // 2, DEFAULT_MAX_LENGTH - WINDOW_OVERLAP)
    # the windows that cover the document: the fewest whose starts step at most a stride, spread evenly
    steps = math.ceil((n - capacity) / stride)
    covering = [(start, start + capacity) for start in (round(i * (n - capacity) / steps) for i in range(steps + 1))]
    # neighbours share enough that any answer the reader may give lies whole in one of them: here, and for
    # a document of any length (the least they share is a window less a stride)
    assert min(a[1] - b[0] for a, b in itertools.pairwise(covering)) >= capacity - stride >= MAX_ANSWER_LENGTH
    # and every window the page had read is one of them, whole
    assert result.window_token_spans and set(result.window_token_spans) <= set(covering), result.window_token_spans

    payload = answer_document(html, QUESTION, checkpoint=name)  # /answer reads the same windows
    assert (payload["n_tokens"], payload["n_windows"]) == (n, result.n_windows)


# ---- fetching a page --------------------------------------------------------------------------------


def test_answer_fetches_a_page_of_5_mb_and_refuses_one_byte_more(tmp_path):
    name = TEST_MODEL
    padding = PAGE_BYTES - len(SHORT_DOCUMENT) - len("<!---->")
    page = f"{SHORT_DOCUMENT}<!--{' ' * padding}-->"  # 5,000,000 bytes, nearly all of them a comment
    assert len(page.encode()) == PAGE_BYTES
    (tmp_path / "full.html").write_text(page, encoding="utf-8")
    (tmp_path / "over.html").write_text(page + " ", encoding="utf-8")
    with serve_directory(tmp_path) as base:
        payload = answer_document(f"{base}/full.html", QUESTION, checkpoint=name, allow_local=True)
        assert payload["text"].strip() == "Jikji was printed with movable metal type at Heungdeoksa temple in 1377."
        with pytest.raises(DocumentError, match=r"^The page is larger than 5 MB, the most this app reads\."):
            answer_document(f"{base}/over.html", QUESTION, checkpoint=name, allow_local=True)


@contextlib.contextmanager
def dripping_server(seconds: float) -> Iterator[str]:
    """A web server on 127.0.0.1 that answers "200 OK" with a 1 MB page and then sends one byte a second,
    for ``seconds`` at most; yields the page's URL."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve():
        connection, _ = listener.accept()
        with connection:
            connection.recv(65536)
            connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 1000000\r\n\r\n<p>")
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline and not stop.wait(1.0):
                with contextlib.suppress(OSError):
                    connection.sendall(b"x")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/slow.html"
    finally:
        stop.set()
        listener.close()
        thread.join(timeout=5)


def test_answer_gives_up_on_a_page_after_10_seconds():
    with dripping_server(FETCH_SECONDS + 5) as url:  # bytes keep coming, so only the total time can stop it
        start = time.monotonic()
        with pytest.raises(DocumentError, match=r"did not load within 10 seconds"):
            answer_document(url, QUESTION, checkpoint=TEST_MODEL, allow_local=True)
        elapsed = time.monotonic() - start
    assert FETCH_SECONDS <= elapsed < FETCH_SECONDS + 3
