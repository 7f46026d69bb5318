"""One question about one document, from the settings panel's values to everything the page and the API show.

``ask`` reads the document (``app.documents``), loads the model (``app.models``), runs the reader
within the limits of ``app.limits`` and renders the result (``app.payloads``); ``answer_document``
is the /answer endpoint's version of it. The attention explorer is not part of a question: the
answer shows as soon as the reader is done, and ``explain`` computes the attention of the answer's
window only when the explorer is opened, from the layer inputs the reading kept of that window
(``app.token_view.keeping_reading``), or by running the window again. All take and return plain data,
so tests call them without a browser.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import torch

from littlebird.app import figures, token_view
from littlebird.app.clean import Document
from littlebird.app.documents import Report, read_document, silent
from littlebird.app.explorer import explorer_plots, rollout_figure
from littlebird.app.fetch import looks_like_address
from littlebird.app.limits import Limits
from littlebird.app.models import LoadedModel, load_model
from littlebird.app.payloads import answer_card, api_payload, highlight_document, n_best_rows, stats_line
from littlebird.app.qa import WARM_QUESTION, WARM_SENTENCE, QAResult, answer_question
from littlebird.modeling_littlebird import attention_weights_dtype
from littlebird.reader import (Answer, ReadingOptions, WindowAttention, WindowRecord, window_attention,
                               window_layout)

MAX_LENGTH_CHOICES = (512, 16384)  # the settings slider's range, in tokens
MAX_WINDOWS_CHOICES = (1, 64)  # the settings slider's range: windows the model reads per question
N_BEST_CHOICES = (1, 20)
DEFAULT_APP_READING = ReadingOptions()


@dataclass(frozen=True)
class Settings:
    """The settings panel's values: the checkpoint, and the reading within the sliders' ranges. The time
    budget comes from the limits (``app.limits``) when a question is asked."""

    checkpoint: str | None = None
    reading: ReadingOptions = DEFAULT_APP_READING

    def __post_init__(self):
        for name, (low, high) in (("max_length", MAX_LENGTH_CHOICES), ("max_windows", MAX_WINDOWS_CHOICES),
                                  ("n_best", N_BEST_CHOICES)):
            value = getattr(self.reading, name)
            if value is None or not low <= value <= high:
                raise ValueError(f"{name} must be within {low}..{high}, got {value}")


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
) -> QAResult:
    """``answer_question`` with the UI's settings within ``limits`` (default: from the environment).
    ``on_window(done, total)`` follows the windows; ``should_stop()`` ends the reading between
    windows (``littlebird.reader.ReadingStopped``).

    The one step of a question that needs the accelerator; it returns only CPU data, because on
    ZeroGPU this runs in a worker process whose result is sent back to the app.
    """
    limits = Limits.from_environment() if limits is None else limits
    return answer_question(document, question, model=loaded.model, tokenizer=loaded.tokenizer,
                           options=replace(settings.reading, time_budget=limits.question_seconds),
                           max_tokens=limits.max_tokens, on_window=on_window, should_stop=should_stop)


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
    def of(cls, view: "AskView", question: str, settings: Settings) -> "ExplorerTarget | None":
        """The target of ``view``'s answer to ``question``, aimed at the best answer's window (the
        first window read, without one); None when nothing was read."""
        result = view.result
        if not any(w.read is not None for w in result.windows):
            return None
        target = cls(view.document, question, settings.checkpoint, settings.reading.max_length, tuple(result.windows),
                     tuple(result.answers), window=0, answer=None, no_answer=result.no_answer)
        return target.aimed("answer:0" if result.answers else f"window:{target._window_read(0)}")

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
    def choice(self) -> str:
        """The value of :meth:`choices` this target is aimed by."""
        return f"window:{self.window}" if self.answer is None else f"answer:{self.answer}"

    def _window_read(self, reading_index: int) -> int:
        """The index in ``windows`` of the window read ``reading_index``-th (an ``Answer.window``)."""
        return next(i for i, w in enumerate(self.windows) if w.read == reading_index)

    def aimed(self, choice: str) -> "ExplorerTarget":
        """This target aimed at ``choice``: "answer:K" (the K-th n-best answer and its window) or "window:W"
        (window W of the document, following the best n-best answer read from it, if any)."""
        kind, _, number = (choice or "").partition(":")
        if kind not in ("answer", "window") or not number.isdigit():
            raise ValueError(f"aim the explorer with 'answer:K' or 'window:W', got {choice!r}")
        index = int(number)
        if kind == "answer":
            if index >= len(self.answers):
                raise ValueError(f"there are {len(self.answers)} answers, so no answer:{index}")
            return replace(self, window=self._window_read(self.answers[index].window), answer=index)
        if index >= len(self.windows):
            raise ValueError(f"the document has {len(self.windows)} windows, so no window:{index}")
        reading_index = self.windows[index].read
        answer = next((k for k, a in enumerate(self.answers) if a.window == reading_index), None)
        return replace(self, window=index, answer=None if reading_index is None else answer)

    def choices(self) -> list[tuple[str, str]]:
        """(label, value) of everything the explorer can be aimed at: the n-best answers, then every window."""
        answers = [(f"answer #{k + 1}: “{' '.join(a.text.split())[:48]}” ({a.probability:.0%}), window "
                    f"{self._window_read(a.window)}", f"answer:{k}") for k, a in enumerate(self.answers)]
        return answers + [(figures.window_label(i, w), f"window:{i}") for i, w in enumerate(self.windows)]


def _layout(target: ExplorerTarget, loaded: LoadedModel) -> WindowAttention | None:
    """The tokens of ``target``'s window and their spans in the document, without running the model."""
    document = target.document
    return window_layout(target.question, document.text, model=loaded.model, tokenizer=loaded.tokenizer,
                         document_start=target.document_start, model_text=document.model_text,
                         model_to_text=document.model_to_text, max_length=target.max_length)


def _keep_for_explorer(target: ExplorerTarget, kept: token_view.ReadingInputs, loaded: LoadedModel) -> None:
    """Put what the reading kept of ``target``'s window, if it did, in ``token_view.CAPTURES``, where ``explain``
    and the token view find it."""
    place = target.windows[target.window].read
    inputs = None if place is None else kept.window(place)
    window = None if inputs is None else _layout(target, loaded)
    if window is not None:
        capture = inputs.capture(token_view.window_tokens(window, target.document.text),
                                 question_length=window.question_length,
                                 answer_positions=figures.answer_positions(window, target.answer_span))
        token_view.CAPTURES.put(token_view.capture_key(target), capture)


def _summarize_kept(target: ExplorerTarget, loaded: LoadedModel,
                    capture: token_view.TokenCapture) -> tuple[figures.AttentionSummary | None, token_view.TokenCapture]:
    """The window's summary from the layer inputs kept of its pass (``token_view.layer_weights``), each layer
    reduced as it is rebuilt, and the capture following ``target``'s answer."""
    window = _layout(target, loaded)
    if window is None:
        return None, capture
    reduce = figures.LayerReduction(target.answer_span, loaded.block_size)
    window.attentions = tuple(reduce(window, weights) for weights in token_view.layer_weights(capture, loaded.model))
    summary = figures.summarize_window(window, text=target.document.text, answer_span=target.answer_span,
                                       block_size=loaded.block_size)
    return summary, replace(capture, answer_positions=tuple(figures.answer_positions(window, target.answer_span)))


@_gpu_task
def _summarize_target(target: ExplorerTarget,
                      loaded: LoadedModel) -> tuple[figures.AttentionSummary | None, token_view.TokenCapture | None]:
    """The window's summary and, kept by forward hooks in the same pass, what the token view needs."""
    document = target.document
    # The weights are reduced as each layer makes them, kept in float16 meanwhile (app.figures.LayerReduction)
    with token_view.capturing(loaded.model) as inputs, attention_weights_dtype(torch.float16):
        window = window_attention(target.question, document.text, model=loaded.model, tokenizer=loaded.tokenizer,
                                  document_start=target.document_start, model_text=document.model_text,
                                  model_to_text=document.model_to_text, max_length=target.max_length,
                                  reduce_layer=figures.LayerReduction(target.answer_span, loaded.block_size))
    if window is None:
        return None, None
    summary = figures.summarize_window(window, text=document.text, answer_span=target.answer_span,
                                       block_size=loaded.block_size)
    capture = inputs.capture(token_view.window_tokens(window, document.text), question_length=window.question_length,
                             answer_positions=figures.answer_positions(window, target.answer_span))
    return summary, capture


def explain(target: ExplorerTarget | None, *, layer: int = 0, head: int = 0, metric: str = "pack",
            remember: bool = True) -> tuple[figures.AttentionSummary | None, dict[str, Any], float]:
    """The explorer for ``target``: its window's attention weights, each layer reduced as it is computed
    (``figures.LayerReduction``), drawn for ``layer`` and ``head`` (the head atlas for ``metric``, a key of
    ``app.head_metrics.METRICS``). Where ``token_view.CAPTURES`` holds the window's layer inputs (kept by the
    reading for its best answer's window, or by an earlier open) each layer's weights are rebuilt from them,
    without the layers' outputs and feed-forwards: a quarter of the work of running the window again, which is
    done otherwise, keeping the layer inputs that the token view reads from the same pass.

    Returns (summary, plots, seconds taken): the plots of ``figures.explorer_figures`` and ``rollout``. A model
    without attention to show (a baseline), or no target, gives no summary and the explorer's empty or
    explanatory plots. ``remember=False`` keeps nothing for the token view (the app's warm-up).
    """
    clock = time.perf_counter()
    loaded = load_model(target.checkpoint if target else None)
    summary = None
    if target is not None and not loaded.explorer_note:
        key = token_view.capture_key(target)
        capture = token_view.CAPTURES.get(key)
        if capture is not None:
            summary, capture = _summarize_kept(target, loaded, capture)
        else:
            summary, capture = _summarize_target(target, loaded)
        if capture is not None and remember:
            token_view.CAPTURES.put(key, capture)
    plots = explorer_plots(summary, loaded, layer=layer, head=head, metric=metric)
    plots["rollout"] = rollout_figure(summary, loaded)  # drawn once a window: no slider changes it
    return summary, plots, time.perf_counter() - clock


def warm_explorer(checkpoint: str | None = None) -> figures.AttentionSummary | None:
    """Ask one question of a one-window text and open its explorer both ways (from the layer inputs the reading
    kept, then by a pass of the window), keeping nothing for the token view, so that the first user's explorer
    does not pay for the attention-weights pass's and plotly's first calls (0.2-0.5 s of a 1K-token window's
    first open on 2 cores). Returns the summary drawn (None for a baseline)."""
    text = " ".join([WARM_SENTENCE] * 40)  # ~700 tokens: one window
    view = ask("paste", WARM_QUESTION, Settings(checkpoint=checkpoint), pasted=text)
    summary, _, _ = explain(view.explorer, remember=False)  # from the layer inputs the reading kept
    key = None if view.explorer is None else token_view.capture_key(view.explorer)
    if key is not None and token_view.CAPTURES.get(key) is not None:
        token_view.CAPTURES.forget(key)
        summary, _, _ = explain(view.explorer, remember=False)  # by a pass of the window, as for a window not kept
    return summary


def explain_token(target: ExplorerTarget | None, *, layer: int = 0, head: int = 0,
                  token: int | None = None) -> tuple[token_view.TokenKeys | None, Any]:
    """The token view of ``target``'s window: ``token``'s keys in ``layer`` and ``head`` (None: the answer's
    first token) and their figure. The window's layer inputs come from ``token_view.CAPTURES``, or from
    running it again once the cache has let them go. Without a target or for a baseline: None and a note."""
    if target is None:
        return None, token_view.token_message("Ask a question, then open the explorer to see this.")
    loaded = load_model(target.checkpoint)
    if loaded.explorer_note:
        return None, token_view.token_message(loaded.explorer_note)
    key = token_view.capture_key(target)
    capture = token_view.CAPTURES.get(key)
    if capture is None:
        _, capture = _summarize_target(target, loaded)
        if capture is None:
            return None, token_view.token_message("The window has no tokens to show.")
        token_view.CAPTURES.put(key, capture)
    keys = token_view.token_keys(capture, loaded.model, layer=layer, head=head,
                                 token=capture.default_token if token is None else token)
    return keys, token_view.token_figure(keys)


@dataclass
class AskView:
    """What the page shows after a question, as plain data."""

    answer_html: str
    n_best: list[list[Any]]  # rows of app.payloads.N_BEST_HEADERS
    document_html: str
    stats: str
    result: QAResult
    document: Document
    explorer: ExplorerTarget | None = None  # for ``explain``, when the user opens the explorer


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
    explorable: bool = True,
) -> AskView:
    """Answer ``question`` about the document from ``source``, with everything the page shows.

    Stages are reported through ``report(fraction, message)``: fetching or reading,
    cleaning, each window the model reads. The document and the time are bounded by
    ``Limits.from_environment()`` (see ``app.limits``). Raises DocumentError or CheckpointError,
    whose text is for the user, and ``littlebird.reader.ReadingStopped`` when ``should_stop()``
    turns True while the model reads.

    ``explorable``: keep the layer inputs of the window the explorer opens on (``token_view.keeping_reading``),
    so that opening it does not run that window again; False for a caller without an explorer (the API).
    """
    limits = Limits.from_environment()
    document = read_document(source, pasted=pasted, url=url, upload=upload, allow_local=allow_local, report=report,
                             limits=limits)
    report(0.25, "Loading the model")
    loaded = load_model(settings.checkpoint)
    running = f"Running the model on {loaded.device}"
    report(0.3, running)

    def on_window(done: int, total: int) -> None:
        report(0.3 + 0.65 * done / total, f"{running}: window {done} of {total} read")

    callbacks = {} if _ON_ZERO_GPU else {"on_window": on_window, "should_stop": should_stop}  # none reach ZeroGPU's worker
    # On ZeroGPU the reading runs in another process, whose layers no hook here reaches.
    keeping = token_view.keeping_reading(loaded.model) if explorable and not _ON_ZERO_GPU else contextlib.nullcontext()
    with keeping as kept:
        result = run_qa(document, question, loaded, settings, limits, **callbacks)
    report(1.0, "Done")
    view = AskView(
        answer_html=answer_card(result, document.page_starts),
        n_best=n_best_rows(result),
        document_html=highlight_document(document.text, result, document.page_starts),
        stats=stats_line(result, loaded),
        result=result,
        document=document,
    )
    view.explorer = ExplorerTarget.of(view, question, settings)
    if kept is not None and view.explorer is not None and not loaded.explorer_note:
        _keep_for_explorer(view.explorer, kept, loaded)
    return view


def answer_document(
    document: str, question: str, *, checkpoint: str | None = None, allow_local: bool = False,
    should_stop: Callable[[], bool] | None = None,
) -> dict:
    """What the /answer endpoint returns: ``document`` is text, HTML or an http(s) address.

    A one-line ``document`` that starts with any URL scheme is taken as an address, so "file:///etc/passwd"
    or "ftp://..." is refused like an internal address rather than read as a one-line document.

    Uses the default settings (max length, windows read, n-best, threshold), as the page does. Raises DocumentError or CheckpointError for the user, and
    ``littlebird.reader.ReadingStopped`` when ``should_stop()`` turns True while the model reads.
    """
    source = "url" if looks_like_address(document) else "paste"
    settings = Settings(checkpoint=checkpoint)
    view = ask(source, question, settings, pasted=document, url=(document or "").strip(), allow_local=allow_local,
               should_stop=should_stop, explorable=False)
    return api_payload(view.result, view.document)
