"""One question about one document, from the settings panel's values to everything the page and the API show.

``ask`` reads the document (``documents.sources``), loads the model (``app.models``), runs the reader
within the limits of ``documents.limits`` and renders the result (``app.payloads``); ``answer_document``
is the /answer endpoint's version of it. Asking knows nothing of the attention explorer
(``app.explorer``): a caller that wants something of the reading kept, as the page does for the
explorer, passes ``ask`` an ``observe`` that wraps the reading. All take and return plain data,
so tests call them without a browser.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import Any

from littlebird.app.models import LoadedModel, load_model
from littlebird.app.payloads import answer_card, api_payload, highlight_document, n_best_rows, stats_line
from littlebird.app.qa import answer_question
from littlebird.command_options import option_fields, sliders
from littlebird.documents.clean import Document
from littlebird.documents.fetch import looks_like_address
from littlebird.documents.limits import Limits
from littlebird.documents.sources import Report, read_document, silent
from littlebird.reader import DEFAULT_READING, Reading, ReadingOptions

# The reading options whose declaration allows None: left to their source (read once, not per question).
_MAY_BE_NONE = frozenset(field.name for field, _, optional in option_fields(ReadingOptions) if optional)


@dataclass(frozen=True)
class Settings:
    """The settings panel's values: the checkpoint, and the reading, whose options with a slider
    (:data:`littlebird.reading_options.PAGE_SETTINGS`) lie within the sliders' ranges. The time budget comes from
    the limits (``documents.limits``) when a question is asked."""

    checkpoint: str | None = None
    reading: ReadingOptions = DEFAULT_READING

    def __post_init__(self):
        for name, slider in sliders(ReadingOptions).items():
            value = getattr(self.reading, name)
            if value is None and name in _MAY_BE_NONE:
                continue  # left to its source (the no-answer threshold: the checkpoint's own, which the slider shows)
            if value is None or not slider.low <= value <= slider.high:
                raise ValueError(f"{name} must be within {slider.low:g}..{slider.high:g}, got {value}")


_ON_ZERO_GPU = False  # set by gpu_task: run_qa then runs in a worker process, where callbacks do not reach the page


def gpu_task(fn: Callable) -> Callable:
    """``spaces.GPU`` around ``fn`` on a ZeroGPU Space (the package exists only there), else ``fn``."""
    global _ON_ZERO_GPU
    try:
        import spaces  # type: ignore[import-not-found]
    except ImportError:
        return fn
    _ON_ZERO_GPU = True
    return spaces.GPU(duration=120)(fn)


@gpu_task
def run_qa(
    document: Document,
    question: str,
    loaded: LoadedModel,
    settings: Settings,
    limits: Limits | None = None,
    on_window: Callable[[int, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    on_pass: Callable[[str], None] | None = None,
) -> Reading:
    """``answer_question`` with the UI's settings within ``limits`` (default: from the environment).
    ``on_window(done, total)`` follows the windows; ``should_stop()`` ends the reading between
    windows (``littlebird.reader.ReadingStopped``); ``on_pass`` hears the reader's passes
    (``littlebird.reader.read``).

    The one step of a question that needs the accelerator; it returns only CPU data, because on
    ZeroGPU this runs in a worker process whose result is sent back to the app.
    """
    limits = Limits.from_environment() if limits is None else limits
    return answer_question(
        document,
        question,
        model=loaded.model,
        tokenizer=loaded.tokenizer,
        options=replace(settings.reading, time_budget=limits.question_seconds),
        max_tokens=limits.max_tokens,
        on_window=on_window,
        should_stop=should_stop,
        on_pass=on_pass,
    )


@dataclass
class AskView:
    """What the page shows after a question, as plain data. Its HTML is made when asked for: the /answer API and
    the command line use ``reading`` and ``document`` only, and need neither the page-wide highlighted document
    nor a scan's answer crop."""

    n_best: list[list[Any]]  # rows of app.payloads.N_BEST_HEADERS
    stats: str
    reading: Reading  # the reader's, with the app's note (app.qa.answer_question)
    document: Document
    device: str  # where the model read it

    @property
    def answer_html(self) -> str:
        return answer_card(self.reading, self.document)

    @property
    def document_html(self) -> str:
        return highlight_document(self.document.text, self.reading, self.document.page_starts)


def ask(
    source: str,
    question: str,
    settings: Settings,
    *,
    pasted: str = "",
    url: str = "",
    upload: str | None = None,
    allow_local: bool = False,
    report: Report = silent,
    should_stop: Callable[[], bool] | None = None,
    observe: Callable[[Any], AbstractContextManager[Callable[[str], None] | None]] | None = None,
) -> AskView:
    """Answer ``question`` about the document from ``source``, with everything the page shows.

    Stages are reported through ``report(fraction, message)``: fetching or reading,
    cleaning, each window the model reads. The document and the time are bounded by
    ``Limits.from_environment()`` (see ``documents.limits``). Raises DocumentError or CheckpointError,
    whose text is for the user, and ``littlebird.reader.ReadingStopped`` when ``should_stop()``
    turns True while the model reads.

    ``observe(model)``, when given, is a context manager wrapped around the reading with the loaded model; what
    it yields, if not None, hears the reader's passes (``on_pass`` of ``littlebird.reader.read``). The page keeps
    the layer inputs of the windows read this way, for the attention explorer; nothing is kept by default. On
    ZeroGPU the reading runs in another process, which no hook here reaches, and ``observe`` is not used.
    """
    limits = Limits.from_environment()
    document = read_document(
        source, pasted=pasted, url=url, upload=upload, allow_local=allow_local, report=report, limits=limits
    )
    report(0.25, "Loading the model")
    loaded = load_model(settings.checkpoint)
    running = f"Running the model on {loaded.device}"
    report(0.3, running)

    def on_window(done: int, total: int) -> None:
        report(0.3 + 0.65 * done / total, f"{running}: window {done} of {total} read")

    callbacks = (
        {} if _ON_ZERO_GPU else {"on_window": on_window, "should_stop": should_stop}
    )  # none reach ZeroGPU's worker
    # On ZeroGPU the reading runs in another process, whose layers no hook here reaches.
    observing = contextlib.nullcontext() if observe is None or _ON_ZERO_GPU else observe(loaded.model)
    with observing as on_pass:
        reading = run_qa(document, question, loaded, settings, limits, on_pass=on_pass, **callbacks)
    report(1.0, "Done")
    return AskView(
        n_best=n_best_rows(reading),
        stats=stats_line(reading, loaded),
        reading=reading,
        document=document,
        device=loaded.device,
    )


def answer_document(
    document: str,
    question: str,
    *,
    checkpoint: str | None = None,
    reading: ReadingOptions = DEFAULT_READING,
    allow_local: bool = False,
    should_stop: Callable[[], bool] | None = None,
) -> dict:
    """What the /answer endpoint returns: ``document`` is text, HTML or an http(s) address.

    A one-line ``document`` that starts with any URL scheme is taken as an address, so "file:///etc/passwd"
    or "ftp://..." is refused like an internal address rather than read as a one-line document.

    Reads with ``reading``: the page's settings as it opens (max length, windows read, n-best, threshold).
    Raises DocumentError or CheckpointError for the user, and ``littlebird.reader.ReadingStopped`` when
    ``should_stop()`` turns True while the model reads.
    """
    source = "url" if looks_like_address(document) else "paste"
    settings = Settings(checkpoint=checkpoint, reading=reading)
    view = ask(
        source,
        question,
        settings,
        pasted=document,
        url=(document or "").strip(),
        allow_local=allow_local,
        should_stop=should_stop,
    )
    return api_payload(view.reading, view.document, view.device)
