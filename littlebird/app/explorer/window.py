"""One window of a reading, laid out and run again with its attention weights, for the explorer.

The reader (``littlebird.reader.read``) never computes attention weights: only a plot needs them. The explorer
builds the window the reader read from a document token ``document_start`` with the reader's own helpers (the
same question prefix, document tokens from ``encode_text``'s cache, the same capacity) and either lays it out
without running the model (:func:`window_layout`: its tokens and their spans in the text) or runs it once more
with weights (:func:`window_attention`), reducing each layer as the model computes it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import torch

from littlebird.modeling_littlebird import LittleBirdLayer
from littlebird.reader import (
    DEFAULT_MAX_LENGTH,
    EncodedText,
    build_windows,
    encode_text,
    model_device,
    question_prefix,
    special_ids,
    tokenize_questions,
    window_capacity,
    window_length,
)


@dataclass
class WindowAttention:
    """What the model attended to in one window: its tokens, their spans in the text, and per layer the
    attention weights or what a ``reduce_layer`` made of them."""

    attentions: (
        tuple  # the model's ``attentions`` for this window (batch of one), or per layer what reduce_layer made of them
    )
    token_spans: list[tuple[int, int]]  # per input token, [start, end) in the shown text; (-1, -1) if none
    tokens: list[str]  # per input token, the tokenizer's piece
    question_length: int  # tokens of [CLS] [QUESTION] question [SEP], before the document
    window: int
    document_tokens: tuple[int, int]  # the window's range of document token indices


def attention_layers(model) -> list:
    """The layers of a LittleBird encoder in ``model``, whose outputs end with their attention weights; []
    for other models (the teacher's BERT encoder, the baselines)."""
    encoder = getattr(getattr(model, "base_model", None), "encoder", None)
    return [layer for layer in getattr(encoder, "layer", ()) if isinstance(layer, LittleBirdLayer)]


def window_tokens(window: WindowAttention, text: str) -> list[str]:
    """The text of each token of ``window`` in ``text``; for the special and question tokens, which have no span
    there, the tokenizer's piece without SentencePiece's word mark."""
    return [
        piece.replace("▁", " ").strip() or piece if start < 0 else text[start:end]
        for piece, (start, end) in zip(window.tokens, window.token_spans)
    ]


def window_attention(
    question: str,
    text: str,
    *,
    model,
    tokenizer,
    document_start: int,
    model_text: str | None = None,
    model_to_text=None,
    max_length: int | None = DEFAULT_MAX_LENGTH,
    reduce_layer: Callable[[WindowAttention, Any], Any] | None = None,
) -> WindowAttention | None:
    """The model's attention over one window of a reading, computed again when someone wants to see it.

    The window is the one ``littlebird.reader.read`` read from document token ``document_start`` (the start of one
    of ``Reading.windows``, read or not) with the same ``question``, document and ``max_length``; the document's
    tokens come from ``encode_text``'s cache. ``reduce_layer(window, weights)``, when given, reduces each layer's
    weights as the model computes them, and ``WindowAttention.attentions`` holds what it made of them: only one
    layer's weights are held at a time. None for a model without attention outputs (the baselines) or a document
    without tokens.
    """
    inputs = _explained_window(
        question,
        text,
        model=model,
        tokenizer=tokenizer,
        document_start=document_start,
        model_text=model_text,
        model_to_text=model_to_text,
        max_length=max_length,
    )
    return None if inputs is None else _window_attention(model, tokenizer, *inputs, reduce_layer)


def window_layout(
    question: str,
    text: str,
    *,
    model,
    tokenizer,
    document_start: int,
    model_text: str | None = None,
    model_to_text=None,
    max_length: int | None = DEFAULT_MAX_LENGTH,
) -> WindowAttention | None:
    """The window of :func:`window_attention` without running the model: its tokens, their spans in ``text`` and
    the question's length, with no ``attentions``. None for a document without tokens."""
    inputs = _explained_window(
        question,
        text,
        model=model,
        tokenizer=tokenizer,
        document_start=document_start,
        model_text=model_text,
        model_to_text=model_to_text,
        max_length=max_length,
    )
    return None if inputs is None else _layout(tokenizer, *inputs)


def _explained_window(
    question: str,
    text: str,
    *,
    model,
    tokenizer,
    document_start: int,
    model_text: str | None,
    model_to_text,
    max_length: int | None,
) -> tuple | None:
    """(input_ids, attention_mask, prefix length, document_start, EncodedText) of the window ``read`` read from
    ``document_start``, as :func:`_window_attention` takes them; None without tokens."""
    max_length = window_length(model, max_length)
    ids = special_ids(tokenizer, model)
    encoded = encode_text(text if model_text is None else model_text, tokenizer, text=text, model_to_text=model_to_text)
    if len(encoded.input_ids) == 0:
        return None
    prefix = question_prefix(tokenize_questions([question], tokenizer)[0], ids, max_length)
    capacity = window_capacity(len(encoded.input_ids), len(prefix), max_length)
    input_ids, attention_mask = build_windows(prefix, encoded.input_ids, [document_start], capacity, ids.pad)
    return input_ids, attention_mask, len(prefix), document_start, encoded


def _layout(
    tokenizer, input_ids, attention_mask, prefix_length: int, document_start: int, encoded: EncodedText
) -> WindowAttention:
    """The one window of ``input_ids`` as a WindowAttention without attentions: its tokens and their spans."""
    n = int(attention_mask[0].sum())
    n_document = n - prefix_length
    spans = [(-1, -1)] * prefix_length + [
        tuple(map(int, s)) for s in encoded.spans[document_start : document_start + n_document]
    ]
    return WindowAttention(
        attentions=(),
        token_spans=spans,
        tokens=tokenizer.convert_ids_to_tokens(input_ids[0, :n].tolist()),
        question_length=prefix_length,
        window=0,
        document_tokens=(document_start, document_start + n_document),
    )


def _window_attention(
    model,
    tokenizer,
    input_ids,
    attention_mask,
    prefix_length: int,
    document_start: int,
    encoded: EncodedText,
    reduce_layer: Callable[[WindowAttention, Any], Any] | None = None,
) -> WindowAttention | None:
    """Run the one window of ``input_ids`` again with attention weights: only a plot needs them, so readings
    never pay.

    With ``reduce_layer``, ``WindowAttention.attentions`` holds ``reduce_layer(window, weights)`` of each layer
    instead of its weights, taken as each layer returns them (a forward hook), so that only one layer's
    weights exist at a time: a layer's compact weights of an 8K-token window take ~150 MB.
    """
    found = _layout(tokenizer, input_ids, attention_mask, prefix_length, document_start, encoded)
    n = len(found.tokens)
    reduced = []
    owner = threading.get_ident()

    def take(layer, args, output):
        x, p, weights = output
        if threading.get_ident() != owner or weights is None:
            return output  # another question on the same model, served meanwhile by another thread
        reduced.append(reduce_layer(found, replace(weights, length=n)))
        return x, p, None  # the encoder keeps nothing of this layer's weights

    layers = attention_layers(model) if reduce_layer is not None else []
    hooks = [layer.register_forward_hook(take) for layer in layers]
    device = model_device(model)
    with torch.inference_mode():
        try:
            out = model(
                input_ids=input_ids[:, :n].to(device),
                attention_mask=attention_mask[:, :n].to(device),
                output_attentions=True,
            )
        except TypeError:  # a model without attention outputs (the baselines): the plot is optional
            return None
        finally:
            for hook in hooks:
                hook.remove()
    if layers:
        found.attentions = tuple(reduced)
    elif not out.attentions:
        return None
    else:
        found.attentions = (
            out.attentions if reduce_layer is None else tuple(reduce_layer(found, a) for a in out.attentions)
        )
    return found
