"""One question about one document, from the settings panel's values to everything the page and the API show.

``ask`` reads the document (``app.documents``), loads the model (``app.models``), runs the reader
within the limits of ``app.limits`` and renders the result (``app.payloads``, ``app.explorer``);
``answer_document`` is the /answer endpoint's version of it. Both take and return plain data, so
tests call them without a browser.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from app import figures
from app.clean import Document
from app.documents import Report, read_document, silent
from app.explorer import explorer_plots
from app.fetch import looks_like_address
from app.limits import Limits
from app.models import LoadedModel, load_model
from app.payloads import answer_card, api_payload, highlight_document, n_best_rows, stats_line
from app.qa import QAResult, answer_with_attention
from littlebird.reader import DEFAULT_MAX_LENGTH

MAX_LENGTH_CHOICES = (512, 16384)  # the settings slider's range, in tokens
DEFAULT_N_BEST = 5
DEFAULT_THRESHOLD = 0.5


@dataclass(frozen=True)
class Settings:
    """The settings panel's values."""

    checkpoint: str | None = None
    max_length: int = DEFAULT_MAX_LENGTH
    n_best: int = DEFAULT_N_BEST
    no_answer_threshold: float = DEFAULT_THRESHOLD
    explore: bool = True

    def __post_init__(self):
        low, high = MAX_LENGTH_CHOICES
        if not low <= self.max_length <= high:
            raise ValueError(f"max_length must be within {low}..{high} tokens, got {self.max_length}")
        if not 1 <= self.n_best <= 20:
            raise ValueError(f"n_best must be within 1..20, got {self.n_best}")
        if not 0.0 <= self.no_answer_threshold <= 1.0:
            raise ValueError(f"no_answer_threshold must be within 0..1, got {self.no_answer_threshold}")


_ON_ZERO_GPU = False  # set by _gpu_task: run_qa then runs in a worker process, where callbacks do not reach the page


def _gpu_task(fn: Callable) -> Callable:
    """``spaces.GPU`` around ``fn`` on a ZeroGPU Space (the package exists only there), else ``fn``."""
    global _ON_ZERO_GPU
    try:
        import spaces  # type: ignore[import-not-found]
    except ImportError:
        return fn
    _ON_ZERO_GPU = True
    return spaces.GPU(duration=120)(fn)


@_gpu_task
def run_qa(
    document: Document, question: str, loaded: LoadedModel, settings: Settings, limits: Limits | None = None,
    on_window: Callable[[int, int], None] | None = None, should_stop: Callable[[], bool] | None = None,
) -> tuple[QAResult, figures.AttentionSummary | None]:
    """``answer_with_attention`` with the UI's settings within ``limits`` (default: from the environment),
    and the explorer's summary of its attention. ``on_window(done, total)`` follows the windows;
    ``should_stop()`` ends the reading between windows (``littlebird.reader.ReadingStopped``).

    The one step that needs the accelerator. It returns only CPU data (the reader hands the
    raw attention to the summary and drops it), because on ZeroGPU this runs in a worker process
    whose result is sent back to the app; reducing early also frees the weights at once.
    """

    def summarize(window, best):
        span = None if best is None else (best.start, best.end)
        return figures.summarize_window(window, text=document.text, answer_span=span, block_size=loaded.block_size)

    limits = Limits.from_environment() if limits is None else limits
    # The reader keeps a baseline within its position embeddings and steps half a window.
    return answer_with_attention(
        document, question, model=loaded.model, tokenizer=loaded.tokenizer, max_length=settings.max_length,
        n_best=settings.n_best, no_answer_threshold=settings.no_answer_threshold,
        attention_summary=summarize if settings.explore and not loaded.explorer_note else None,
        max_tokens=limits.max_tokens, time_budget=limits.question_seconds, on_window=on_window,
        should_stop=should_stop,
    )  # fmt: skip


@dataclass
class AskView:
    """What the page shows after a question, as plain data."""

    answer_html: str
    n_best: list[list[Any]]  # rows of app.payloads.N_BEST_HEADERS
    document_html: str
    stats: str
    summary: figures.AttentionSummary | None
    result: QAResult
    document: Document
    plot_seconds: float = 0.0
    figures: dict[str, Any] = field(default_factory=dict)


def ask(
    source: str,
    question: str,
    settings: Settings,
    *,
    pasted: str = "",
    url: str = "",
    upload: str | None = None,
    layer: int = 0,
    head: int = 0,
    allow_local: bool = False,
    report: Report = silent,
    should_stop: Callable[[], bool] | None = None,
) -> AskView:
    """Answer ``question`` about the document from ``source``, with everything the page shows.

    Stages are reported through ``report(fraction, message)``: fetching or reading,
    cleaning, each window the model reads, the plots. The document and the time are bounded by
    ``Limits.from_environment()`` (see ``app.limits``). Raises DocumentError or CheckpointError,
    whose text is for the user, and ``littlebird.reader.ReadingStopped`` when ``should_stop()``
    turns True while the model reads.
    """
    limits = Limits.from_environment()
    document = read_document(source, pasted=pasted, url=url, upload=upload, allow_local=allow_local, report=report,
                             limits=limits)
    report(0.25, "Loading the model")
    loaded = load_model(settings.checkpoint)
    running = f"Running the model on {loaded.device}"
    report(0.3, running + (" and collecting its attention" if settings.explore else ""))

    def on_window(done: int, total: int) -> None:
        report(0.3 + 0.5 * done / total, f"{running}: window {done} of {total} read")  # up to 0.8, before the plots

    callbacks = {} if _ON_ZERO_GPU else {"on_window": on_window, "should_stop": should_stop}  # none reach ZeroGPU's worker
    result, summary = run_qa(document, question, loaded, settings, limits, **callbacks)
    report(0.85, "Drawing the plots")
    clock = time.perf_counter()
    plots = explorer_plots(summary, loaded, layer=layer, head=head)
    plot_seconds = time.perf_counter() - clock
    report(1.0, "Done")
    return AskView(
        answer_html=answer_card(result),
        n_best=n_best_rows(result),
        document_html=highlight_document(document.text, result),
        stats=stats_line(result, loaded, plot_seconds),
        summary=summary,
        result=result,
        document=document,
        plot_seconds=plot_seconds,
        figures=plots,
    )


def answer_document(
    document: str, question: str, *, checkpoint: str | None = None, allow_local: bool = False,
    should_stop: Callable[[], bool] | None = None,
) -> dict:
    """What the /answer endpoint returns: ``document`` is text, HTML or an http(s) address.

    A one-line ``document`` that starts with any URL scheme is taken as an address, so "file:///etc/passwd"
    or "ftp://..." is refused like an internal address rather than read as a one-line document.

    Uses the default settings (max length, n-best, threshold) and no attention, so it is
    as fast as the model allows. Raises DocumentError or CheckpointError for the user, and
    ``littlebird.reader.ReadingStopped`` when ``should_stop()`` turns True while the model reads.
    """
    source = "url" if looks_like_address(document) else "paste"
    settings = Settings(checkpoint=checkpoint, explore=False)
    view = ask(source, question, settings, pasted=document, url=(document or "").strip(), allow_local=allow_local,
               should_stop=should_stop)
    return api_payload(view.result, view.document)
