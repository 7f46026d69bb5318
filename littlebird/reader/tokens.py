"""A document's tokens, computed once: the token ids of its model text and each token's span in the shown text.

A document is tokenized once and kept for the next questions (:func:`encode_text`, the last few documents). A long
one goes to the tokenizer in pieces, as one batch (:func:`tokenize_in_pieces`): a fast tokenizer encodes a batch on
every core and gives the same tokens and offsets.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

_CACHE_SIZE = 4  # documents whose tokenization is kept for the next question
_NO_SPAN = np.iinfo(np.int64).max


@dataclass
class EncodedText:
    """A document's tokens, computed once and reused across windows and questions."""

    input_ids: np.ndarray  # (n,) token ids of the model text, no special tokens
    spans: np.ndarray  # (n, 2) [start, end) of each token in the shown text; -1 for tokens without text


# key -> (the tokenizer, weakly; its tokens). The key holds id(tokenizer), which Python gives to a new object once
# the old one is gone: an entry counts only while its own tokenizer is the one asking.
_encoded_cache: "OrderedDict[tuple, tuple[weakref.ref, EncodedText]]" = OrderedDict()
_encoded_cache_lock = threading.Lock()  # the app answers several questions at once


def token_spans_in_text(offsets: np.ndarray, model_text: str, model_to_text: np.ndarray) -> np.ndarray:
    """(n, 2) spans in the shown text of tokens with ``offsets`` (n, 2) into the model text.

    A token's span runs from the first to the last shown character its model characters map
    to, ignoring whitespace (tokenizers attach the preceding space to a piece) and inserted tag
    characters (map -1). Tokens with no such character get (-1, -1).
    """
    n = len(offsets)
    spans = np.full((n, 2), -1, dtype=np.int64)
    if n == 0 or not model_text:
        return spans
    is_space = np.frombuffer(model_text.encode("utf-32-le"), dtype=np.uint32)
    is_space = np.isin(is_space, [9, 10, 11, 12, 13, 32, 0xA0, 0x3000])
    mapped = np.where(is_space, -1, model_to_text)
    low = np.append(np.where(mapped >= 0, mapped, _NO_SPAN), _NO_SPAN)  # sentinel keeps indices in range
    high = np.append(mapped, -1)
    starts = np.clip(offsets[:, 0], 0, len(model_text))
    ends = np.clip(offsets[:, 1], 0, len(model_text))
    # reduceat over interleaved (start, end) indices reduces each [start, end); the odd rows are gaps.
    bounds = np.empty(2 * n, dtype=np.int64)
    bounds[0::2], bounds[1::2] = starts, ends
    first = np.minimum.reduceat(low, bounds)[0::2]
    last = np.maximum.reduceat(high, bounds)[0::2]
    ok = (ends > starts) & (first != _NO_SPAN)
    spans[ok, 0] = first[ok]
    spans[ok, 1] = last[ok] + 1
    return spans


TOKENIZE_PIECE_CHARS = 32_000  # a long text is tokenized in pieces of about this many characters


def piece_starts(text: str, piece_chars: int = TOKENIZE_PIECE_CHARS) -> list[int]:
    """Where the pieces of ``text`` start: the first is 0, each other one at a single space between two letters
    or digits about ``piece_chars`` after the last. Every tokenizer here starts a word at such a space and
    normalizes character by character (collapsing runs of spaces, which a cut never touches); the added tokens
    that take the space before them ([QUESTION], the HTML tags) start with a bracket, never a letter. So the
    pieces' tokens are the whole text's, their offsets shifted by the piece's start."""
    starts = [0]
    while len(text) - starts[-1] > 2 * piece_chars:
        cut = text.find(" ", starts[-1] + piece_chars)
        while cut != -1 and not (text[cut - 1].isalnum() and text[cut + 1 : cut + 2].isalnum()):
            cut = text.find(" ", cut + 1)
        if cut == -1:
            break
        starts.append(cut)
    return starts


def tokenize_in_pieces(text: str, tokenizer, piece_chars: int = TOKENIZE_PIECE_CHARS) -> tuple[np.ndarray, np.ndarray]:
    """``text``'s token ids (n,) and character offsets (n, 2), as one call of ``tokenizer`` gives them.

    A fast tokenizer encodes a batch on every core but a single text on one, which at 128K tokens is half a
    second on 2 cores; so a long text goes in pieces (:func:`piece_starts`) as one batch."""
    starts = piece_starts(text, piece_chars) if tokenizer.is_fast else [0]
    pieces = [text[start:end] for start, end in zip(starts, [*starts[1:], len(text)])]
    encoding = tokenizer(
        pieces, add_special_tokens=False, return_offsets_mapping=True, return_attention_mask=False, verbose=False
    )
    input_ids = np.fromiter((i for ids in encoding["input_ids"] for i in ids), dtype=np.int64)
    offsets = np.concatenate(
        [
            np.asarray(piece, dtype=np.int64).reshape(-1, 2) + start
            for piece, start in zip(encoding["offset_mapping"], starts)
        ]
    )
    return input_ids, offsets


def encode_text(model_text: str, tokenizer, *, text: str | None = None, model_to_text=None) -> EncodedText:
    """Tokenize ``model_text`` once (cached per tokenizer for the last few documents).

    ``model_to_text[i]`` is the index in the shown ``text`` of ``model_text[i]`` (-1 for inserted
    tag tokens); without them the model text is the shown text. Special tokens (the HTML tags of
    a rendered page) get no span either way, so no answer starts or ends on one.
    """
    text = model_text if text is None else text
    mapping = np.arange(len(model_text), dtype=np.int64) if model_to_text is None else np.asarray(model_to_text)
    # Equal model texts can come from different shown texts, so the key holds all the spans depend on.
    key = (id(tokenizer), model_text, text, hash(mapping.tobytes()))
    with _encoded_cache_lock:
        cached = _encoded_cache.get(key)
        if cached is not None and cached[0]() is tokenizer:
            _encoded_cache.move_to_end(key)
            return cached[1]
    input_ids, offsets = tokenize_in_pieces(model_text, tokenizer)
    spans = token_spans_in_text(offsets, model_text, mapping)
    # Tag tokens in a raw text are structure, never answers; <unk> stands for real text.
    structure = [i for i in tokenizer.all_special_ids if i != tokenizer.unk_token_id]
    spans[np.isin(input_ids, structure)] = -1
    encoded = EncodedText(input_ids, spans)
    with _encoded_cache_lock:
        _encoded_cache[key] = (weakref.ref(tokenizer), encoded)
        _encoded_cache.move_to_end(key)
        while len(_encoded_cache) > _CACHE_SIZE:
            _encoded_cache.popitem(last=False)
    return encoded


def forget_encodings() -> None:
    """Empty :func:`encode_text`'s cache, so the next reading of any document tokenizes it afresh (benchmarks)."""
    with _encoded_cache_lock:
        _encoded_cache.clear()
