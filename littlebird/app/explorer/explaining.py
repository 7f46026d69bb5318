"""The explorer's work for the page: what a reading leaves for it, and the attention of a window when it opens.

A question's answer shows as soon as the reader is done (``app.asking.ask``); the page asks it to keep the
layer inputs of the windows it reads (``ReadingInputs.keeping`` as ``ask``'s ``observe``) and then, with
:func:`after_reading`, makes the :class:`ExplorerTarget` of the answer and keeps the inputs of its window.
:func:`explain` computes the attention of the target's window only when the explorer is opened: from those
layer inputs where the cache holds them, or by running the window again. All take and return plain data, so
tests call them without a browser.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch

from littlebird.app.asking import AskView, Settings, ask, gpu_task
from littlebird.app.explorer.cache import CAPTURES, capture_key
from littlebird.app.explorer.capture import ReadingInputs, TokenCapture, capturing
from littlebird.app.explorer.keys import TokenKeys, layer_weights, token_keys
from littlebird.app.explorer.plots import explorer_plots, rollout_figure
from littlebird.app.explorer.reductions import AttentionSummary, LayerReduction, answer_positions, summarize_window
from littlebird.app.explorer.target import ExplorerTarget
from littlebird.app.explorer.token_figure import token_figure, token_message
from littlebird.app.explorer.window import WindowAttention, window_attention, window_layout, window_tokens
from littlebird.app.models import LoadedModel, load_model
from littlebird.app.qa import WARM_QUESTION, WARM_SENTENCE
from littlebird.modeling_littlebird import attention_weights_dtype


def after_reading(
    view: AskView, question: str, settings: Settings, kept: ReadingInputs | None = None
) -> ExplorerTarget | None:
    """The explorer's target for ``view``'s answer to ``question`` (aimed at the best answer's window; None when
    nothing was read), with what the reading ``kept`` of that window (``ReadingInputs.keeping`` around the
    reading) put in ``CAPTURES``, where :func:`explain` and :func:`explain_token` find it."""
    target = ExplorerTarget.of(view, question, settings)
    if target is not None and kept is not None:
        loaded = load_model(settings.checkpoint)
        if not loaded.explorer_note:
            _keep_for_explorer(target, kept, loaded)
    return target


def _layout(target: ExplorerTarget, loaded: LoadedModel) -> WindowAttention | None:
    """The tokens of ``target``'s window and their spans in the document, without running the model."""
    document = target.document
    return window_layout(
        target.question,
        document.text,
        model=loaded.model,
        tokenizer=loaded.tokenizer,
        document_start=target.document_start,
        model_text=document.model_text,
        model_to_text=document.model_to_text,
        max_length=target.max_length,
    )


def _keep_for_explorer(target: ExplorerTarget, kept: ReadingInputs, loaded: LoadedModel) -> None:
    """Put what the reading kept of ``target``'s window, if it did, in ``CAPTURES``."""
    place = target.windows[target.window].read
    inputs = None if place is None else kept.window(place)
    window = None if inputs is None else _layout(target, loaded)
    if window is not None:
        capture = inputs.capture(
            window_tokens(window, target.document.text),
            question_length=window.question_length,
            answer_positions=answer_positions(window, target.answer_span),
        )
        CAPTURES.put(capture_key(target), capture)


def _summarize_kept(
    target: ExplorerTarget, loaded: LoadedModel, capture: TokenCapture
) -> tuple[AttentionSummary | None, TokenCapture]:
    """The window's summary from the layer inputs kept of its pass (``keys.layer_weights``), each layer reduced as
    it is rebuilt, and the capture following ``target``'s answer."""
    window = _layout(target, loaded)
    if window is None:
        return None, capture
    reduce = LayerReduction(target.answer_span, loaded.block_size)
    window.attentions = tuple(reduce(window, weights) for weights in layer_weights(capture, loaded.model))
    summary = summarize_window(
        window, text=target.document.text, answer_span=target.answer_span, block_size=loaded.block_size
    )
    return summary, replace(capture, answer_positions=tuple(answer_positions(window, target.answer_span)))


@gpu_task
def _summarize_target(
    target: ExplorerTarget, loaded: LoadedModel
) -> tuple[AttentionSummary | None, TokenCapture | None]:
    """The window's summary and, kept by forward hooks in the same pass, what the token view needs."""
    document = target.document
    # The weights are reduced as each layer makes them, kept in float16 meanwhile (reductions.LayerReduction)
    with capturing(loaded.model) as inputs, attention_weights_dtype(torch.float16):
        window = window_attention(
            target.question,
            document.text,
            model=loaded.model,
            tokenizer=loaded.tokenizer,
            document_start=target.document_start,
            model_text=document.model_text,
            model_to_text=document.model_to_text,
            max_length=target.max_length,
            reduce_layer=LayerReduction(target.answer_span, loaded.block_size),
        )
    if window is None:
        return None, None
    summary = summarize_window(window, text=document.text, answer_span=target.answer_span, block_size=loaded.block_size)
    capture = inputs.capture(
        window_tokens(window, document.text),
        question_length=window.question_length,
        answer_positions=answer_positions(window, target.answer_span),
    )
    return summary, capture


def explain(
    target: ExplorerTarget | None, *, layer: int = 0, head: int = 0, metric: str = "pack", remember: bool = True
) -> tuple[AttentionSummary | None, dict[str, Any], float]:
    """The explorer for ``target``: its window's attention weights, each layer reduced as it is computed
    (``reductions.LayerReduction``), drawn for ``layer`` and ``head`` (the head atlas for ``metric``, a key of
    ``head_metrics.METRICS``). Where ``CAPTURES`` holds the window's layer inputs (kept by the reading for its
    best answer's window, or by an earlier open) each layer's weights are rebuilt from them, without the layers'
    outputs and feed-forwards: a quarter of the work of running the window again, which is done otherwise,
    keeping the layer inputs that the token view reads from the same pass.

    Returns (summary, plots, seconds taken): the plots of ``drawing.explorer_figures`` and ``rollout``. A model
    without attention to show (a baseline), or no target, gives no summary and the explorer's empty or
    explanatory plots. ``remember=False`` keeps nothing for the token view (the app's warm-up).
    """
    clock = time.perf_counter()
    loaded = load_model(target.checkpoint if target else None)
    summary = None
    if target is not None and not loaded.explorer_note:
        key = capture_key(target)
        capture = CAPTURES.get(key)
        if capture is not None:
            summary, capture = _summarize_kept(target, loaded, capture)
        else:
            summary, capture = _summarize_target(target, loaded)
        if capture is not None and remember:
            CAPTURES.put(key, capture)
    plots = explorer_plots(summary, loaded, layer=layer, head=head, metric=metric)
    plots["rollout"] = rollout_figure(summary, loaded)  # drawn once a window: no slider changes it
    return summary, plots, time.perf_counter() - clock


def warm_explorer(
    checkpoint: str | None = None, should_stop: Callable[[], bool] | None = None
) -> AttentionSummary | None:
    """Ask one question of a one-window text and open its explorer both ways (from the layer inputs the reading
    kept, then by a pass of the window), keeping nothing for the token view, so that the first user's explorer
    does not pay for the attention-weights pass's and plotly's first calls (a 1K-token window's first open).
    ``should_stop`` ends it early (the app shutting down). Returns the summary drawn (None for a baseline)."""
    text = " ".join([WARM_SENTENCE] * 40)  # ~700 tokens: one window
    settings = Settings(checkpoint=checkpoint)
    kept = ReadingInputs()
    view = ask("paste", WARM_QUESTION, settings, pasted=text, observe=kept.keeping, should_stop=should_stop)
    target = after_reading(view, WARM_QUESTION, settings, kept)
    summary, _, _ = explain(target, remember=False)  # from the layer inputs the reading kept
    key = None if target is None else capture_key(target)
    if key is not None and CAPTURES.get(key) is not None and not (should_stop and should_stop()):
        CAPTURES.forget(key)
        summary, _, _ = explain(target, remember=False)  # by a pass of the window, as for a window not kept
    return summary


def explain_token(
    target: ExplorerTarget | None, *, layer: int = 0, head: int = 0, token: int | None = None
) -> tuple[TokenKeys | None, Any]:
    """The token view of ``target``'s window: ``token``'s keys in ``layer`` and ``head`` (None: the answer's
    first token) and their figure. The window's layer inputs come from ``CAPTURES``, or from running it again
    once the cache has let them go. Without a target or for a baseline: None and a note."""
    if target is None:
        return None, token_message("Ask a question, then open the explorer to see this.")
    loaded = load_model(target.checkpoint)
    if loaded.explorer_note:
        return None, token_message(loaded.explorer_note)
    key = capture_key(target)
    capture = CAPTURES.get(key)
    if capture is None:
        _, capture = _summarize_target(target, loaded)
        if capture is None:
            return None, token_message("The window has no tokens to show.")
        CAPTURES.put(key, capture)
    keys = token_keys(
        capture, loaded.model, layer=layer, head=head, token=capture.default_token if token is None else token
    )
    return keys, token_figure(keys)
