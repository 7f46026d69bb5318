"""Document + question -> n-best answer spans in the shown text (appendix A.2 input and decoding).

Input per window: [CLS] [QUESTION] question [SEP] document tokens. A document that fits in
``max_length`` tokens is read in one pass; a longer one in windows of ``max_length`` tokens
whose document parts start ``stride`` tokens apart. The model picks its best starts, then
ends conditioned on each start; spans from all windows are merged in the shown text, tidied
(punctuation, Korean particles), and scored with a softmax over the n-best.
"""

import math
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import torch

from app.answer_span import tidy_answer_span
from app.clean import Document, neutralize_special_strings
from app.language import detect_language

QUESTION_TOKEN = "[QUESTION]"
MAX_QUESTION_TOKENS = 128
_CACHE_SIZE = 4  # documents whose tokenization is kept for the next question
_CANDIDATES_PER_ANSWER = 4  # spans decoded per requested answer, before merging and trimming
_NO_SPAN = np.iinfo(np.int64).max


@dataclass
class Answer:
    """One answer: ``text == document.text[start:end]``."""

    text: str
    start: int
    end: int
    score: float  # start logit + end logit (conditioned on the start)
    probability: float  # softmax of ``score`` over the returned n-best
    window: int  # index of the window the span was read from


@dataclass
class WindowAttention:
    """What the model attended to in the window holding the best answer, for plotting."""

    attentions: tuple  # the model's ``attentions`` output for this window (batch of one)
    token_spans: list[tuple[int, int]]  # per input token, [start, end) in Document.text; (-1, -1) if none
    tokens: list[str]  # per input token, the tokenizer's piece
    question_length: int  # tokens of [CLS] [QUESTION] question [SEP], before the document
    window: int
    document_tokens: tuple[int, int]  # the window's range of document token indices


@dataclass
class QAResult:
    """Everything the UI shows for one question."""

    answers: list[Answer]  # n-best, best first; kept even when ``no_answer`` so nothing is lost
    no_answer: bool
    answerable_probability: float
    timings: dict[str, float]  # seconds: "fetch", "clean", "tokenize", "model", "decode" (+ "attention")
    n_tokens: int  # document tokens
    n_windows: int
    question_language: str
    device: str
    window_token_spans: list[tuple[int, int]]  # document token range [start, end) of each window
    message: str | None = None  # a sentence for the user when there is no clear answer
    attention: WindowAttention | None = None


@dataclass
class EncodedDocument:
    """A document's tokens, computed once and reused across windows and questions."""

    input_ids: np.ndarray  # (n,) token ids of the model text, no special tokens
    spans: np.ndarray  # (n, 2) [start, end) of each token in Document.text; -1 for tag tokens


_encoded_cache: "OrderedDict[tuple, EncodedDocument]" = OrderedDict()
_encoded_cache_lock = threading.Lock()  # the app answers several questions at once


def token_spans_in_text(offsets: np.ndarray, model_text: str, model_to_text: np.ndarray) -> np.ndarray:
    """(n, 2) spans in the shown text of tokens with ``offsets`` (n, 2) into the model text.

    A token's span runs from the first to the last shown character its model characters map
    to, ignoring whitespace (tokenizers attach the preceding space to a piece) and inserted tag
    characters. Tokens with no such character get (-1, -1).
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


def encode_document(document: Document, tokenizer) -> EncodedDocument:
    """Tokenize ``document.model_text`` once (cached per tokenizer for the last few documents)."""
    # Equal model texts can come from different shown texts ("# a" and "a" both give "<h1> a"
    # or "<p> a"), so the key holds everything the spans depend on.
    key = (id(tokenizer), document.model_text, document.text, hash(np.asarray(document.model_to_text).tobytes()))
    with _encoded_cache_lock:
        cached = _encoded_cache.get(key)
        if cached is not None:
            _encoded_cache.move_to_end(key)
            return cached
    encoding = tokenizer(document.model_text, add_special_tokens=False, return_offsets_mapping=True,
                         return_attention_mask=False, verbose=False)
    input_ids = np.asarray(encoding["input_ids"], dtype=np.int64)
    offsets = np.asarray(encoding["offset_mapping"], dtype=np.int64).reshape(-1, 2)
    encoded = EncodedDocument(input_ids, token_spans_in_text(offsets, document.model_text, document.model_to_text))
    with _encoded_cache_lock:
        _encoded_cache[key] = encoded
        while len(_encoded_cache) > _CACHE_SIZE:
            _encoded_cache.popitem(last=False)
    return encoded


def special_token_ids(tokenizer, model=None) -> dict[str, int]:
    """Ids of [CLS], [QUESTION], [SEP] and padding for this tokenizer."""
    question_id = tokenizer.convert_tokens_to_ids(QUESTION_TOKEN)
    if question_id is None or question_id == tokenizer.unk_token_id:
        question_id = getattr(getattr(model, "config", None), "question_token_id", None)
    if question_id is None:
        raise ValueError(f"the tokenizer has no {QUESTION_TOKEN} token and the model config names none")
    return {"cls": tokenizer.cls_token_id, "question": question_id, "sep": tokenizer.sep_token_id,
            "pad": tokenizer.pad_token_id}


def encode_question(question: str, tokenizer, ids: dict[str, int], max_question_tokens: int) -> list[int]:
    """[CLS] [QUESTION] question [SEP] as ids; long questions keep their first tokens."""
    tokens = tokenizer(neutralize_special_strings(question), add_special_tokens=False, verbose=False)["input_ids"]
    return [ids["cls"], ids["question"], *tokens[:max_question_tokens], ids["sep"]]


def window_starts(n_document: int, capacity: int, stride: int) -> list[int]:
    """Start of each window's document part: the fewest windows whose starts are at most
    ``stride`` apart, spread evenly, the first at 0 and the last flush with the end."""
    if n_document <= capacity:
        return [0]
    stride = max(1, min(stride, capacity))  # a stride beyond the window would skip tokens
    span = n_document - capacity
    steps = -(-span // stride)  # ceil
    return [round(i * span / steps) for i in range(steps + 1)]


def build_window_inputs(prefix: list[int], document_ids: np.ndarray, starts: list[int], capacity: int,
                        pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(W, L) input ids and attention mask: the prefix, then each window's document slice."""
    length = len(prefix) + min(capacity, len(document_ids))
    input_ids = torch.full((len(starts), length), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(starts), length), dtype=torch.long)
    prefix_tensor = torch.as_tensor(prefix, dtype=torch.long)
    for row, start in enumerate(starts):
        piece = torch.from_numpy(document_ids[start : start + capacity])
        n = len(prefix) + len(piece)
        input_ids[row, : len(prefix)] = prefix_tensor
        input_ids[row, len(prefix) : n] = piece
        attention_mask[row, :n] = 1
    return input_ids, attention_mask


@dataclass
class _Candidate:
    score: float
    start: int
    end: int
    window: int


def span_candidates(top_start_indices: np.ndarray, top_start_logits: np.ndarray, top_end_logits: np.ndarray,
                    spans: np.ndarray, prefix_length: int, starts: list[int], limit: int) -> list[_Candidate]:
    """The ``limit`` best (start, end) pairs over all windows, as shown-text spans.

    Inputs are the model's (W, k), (W, k) and (W, k, L) outputs. A pair counts if both ends
    are document tokens with text (not the question, a tag token or padding).
    """
    W, k, L = top_end_logits.shape
    scores = top_start_logits[:, :, None] + top_end_logits  # (W, k, L)
    start_doc = top_start_indices[:, :, None] - prefix_length + np.asarray(starts)[:, None, None]  # (W, k, 1)
    end_doc = start_doc + np.arange(L)[None, None, :]  # (W, k, L)
    # The model gives -inf to ends past its window or on padding; the question is excluded here.
    inside = (top_start_indices[:, :, None] >= prefix_length) & (end_doc < len(spans)) & np.isfinite(scores)
    start_doc = np.broadcast_to(start_doc, end_doc.shape)
    safe_start = np.clip(start_doc, 0, len(spans) - 1)
    safe_end = np.clip(end_doc, 0, len(spans) - 1)
    char_start = spans[safe_start, 0]
    char_end = spans[safe_end, 1]
    valid = inside & (char_start >= 0) & (char_end > char_start)
    flat = np.flatnonzero(valid)
    if flat.size == 0:
        return []
    order = flat[np.argsort(-scores.reshape(-1)[flat], kind="stable")][:limit]
    window_index = order // (k * L)
    return [_Candidate(float(scores.reshape(-1)[i]), int(char_start.reshape(-1)[i]), int(char_end.reshape(-1)[i]),
                       int(window_index[j])) for j, i in enumerate(order)]


def merge_candidates(candidates: list[_Candidate], text: str, n_best: int) -> list[Answer]:
    """Tidy each span, keep the best score per distinct span, softmax over the ``n_best`` kept."""
    best: dict[tuple[int, int], _Candidate] = {}
    for candidate in candidates:
        start, end = tidy_answer_span(text, candidate.start, candidate.end)
        key = (start, end)
        if key not in best or candidate.score > best[key].score:
            best[key] = _Candidate(candidate.score, start, end, candidate.window)
    kept = sorted(best.values(), key=lambda c: -c.score)[:n_best]
    if not kept:
        return []
    top = kept[0].score
    weights = [math.exp(c.score - top) for c in kept]
    total = sum(weights)
    return [Answer(text[c.start : c.end], c.start, c.end, c.score, w / total, c.window) for c, w in zip(kept, weights)]


def _model_device(model) -> torch.device:
    try:
        return next(model.parameters()).device
    except StopIteration:
        return torch.device("cpu")


def _run_model(model, input_ids, attention_mask, top_k: int, max_answer_length: int, batch_size: int):
    """One forward per batch of windows; returns numpy (W, k), (W, k), (W, k, L) and (W,)."""
    device = _model_device(model)
    outputs = []
    with torch.inference_mode():
        for first in range(0, len(input_ids), batch_size):
            out = model(input_ids=input_ids[first : first + batch_size].to(device),
                        attention_mask=attention_mask[first : first + batch_size].to(device),
                        top_k_starts=top_k, max_answer_length=max_answer_length)
            outputs.append([out.top_start_indices, out.top_start_logits, out.top_end_logits, out.answerable_logits])
    indices, start_logits, end_logits, answerable = (torch.cat(parts).cpu() for parts in zip(*outputs))
    # bf16 logits have no numpy type; float32 is exact for them.
    return indices.numpy(), start_logits.float().numpy(), end_logits.float().numpy(), answerable.float().numpy()


def _window_attention(model, tokenizer, input_ids, attention_mask, window: int, prefix_length: int,
                      document_start: int, encoded: EncodedDocument) -> WindowAttention | None:
    """Run one window again with attention weights: only the plot needs them, so others never pay."""
    device = _model_device(model)
    n = int(attention_mask[window].sum())
    ids = input_ids[window : window + 1, :n]
    with torch.inference_mode():
        try:
            out = model(input_ids=ids.to(device), attention_mask=attention_mask[window : window + 1, :n].to(device),
                        output_attentions=True)
        except TypeError:  # a model without attention outputs: the plot is optional
            return None
    n_document = n - prefix_length
    spans = [(-1, -1)] * prefix_length + [tuple(map(int, s)) for s in encoded.spans[document_start : document_start + n_document]]
    return WindowAttention(attentions=out.attentions, token_spans=spans,
                           tokens=tokenizer.convert_ids_to_tokens(ids[0].tolist()), question_length=prefix_length,
                           window=window, document_tokens=(document_start, document_start + n_document))


def _empty_result(message: str, timings: dict[str, float], question_language: str, device: str,
                  n_tokens: int = 0) -> QAResult:
    return QAResult(answers=[], no_answer=True, answerable_probability=0.0, timings=timings, n_tokens=n_tokens,
                    n_windows=0, question_language=question_language, device=device, window_token_spans=[],
                    message=message)


def answer_question(document: Document, question: str, *, model, tokenizer, max_length: int = 8192,
                    stride: int = 4096, n_best: int = 5, max_answer_length: int = 30,
                    no_answer_threshold: float = 0.5, output_attentions: bool = False,
                    window_batch_size: int = 1, max_question_tokens: int = MAX_QUESTION_TOKENS) -> QAResult:
    """Answer ``question`` from ``document`` with an extractive LittleBird QA model.

    Returns up to ``n_best`` answers as spans of ``document.text``, the [CLS] classifier's
    probability that the text holds an answer (``no_answer`` when below
    ``no_answer_threshold`` or when no span qualifies), per-stage timings, token and window
    counts. An empty question or a question without an answer gives a result with a
    ``message``, never an exception. ``window_batch_size`` windows go through the model per call
    (1 by default: on 2 CPU cores a 32K document took 8.4 s in single windows, 8.8 s in pairs).
    """
    if max_length < 8 or stride < 1 or n_best < 1 or max_answer_length < 1:
        raise ValueError(f"need max_length >= 8, stride >= 1, n_best >= 1, max_answer_length >= 1; got "
                         f"{max_length}, {stride}, {n_best}, {max_answer_length}")
    timings = {"fetch": document.fetch_seconds, "clean": document.clean_seconds}
    question = (question or "").strip()
    question_language = detect_language(question)
    device = str(_model_device(model))
    if not any(ch.isalnum() for ch in question):
        timings.update(tokenize=0.0, model=0.0, decode=0.0)
        return _empty_result("Please type a question about the document.", timings, question_language, device)

    clock = time.perf_counter()
    ids = special_token_ids(tokenizer, model)
    encoded = encode_document(document, tokenizer)
    prefix = encode_question(question, tokenizer, ids, min(max_question_tokens, max_length // 4))
    capacity = max_length - len(prefix)
    starts = window_starts(len(encoded.input_ids), capacity, stride)
    input_ids, attention_mask = build_window_inputs(prefix, encoded.input_ids, starts, capacity, ids["pad"])
    timings["tokenize"] = time.perf_counter() - clock
    n_tokens = len(encoded.input_ids)
    if n_tokens == 0 or (encoded.spans[:, 0] < 0).all():
        timings.update(model=0.0, decode=0.0)
        return _empty_result("The document has no text to search.", timings, question_language, device)

    clock = time.perf_counter()
    top_k = min(max(5, 2 * n_best), input_ids.shape[1])
    top_starts, top_start_logits, top_end_logits, answerable_logits = _run_model(
        model, input_ids, attention_mask, top_k, max_answer_length, max(1, window_batch_size))
    timings["model"] = time.perf_counter() - clock

    clock = time.perf_counter()
    candidates = span_candidates(top_starts, top_start_logits, top_end_logits, encoded.spans, len(prefix), starts,
                                 limit=n_best * _CANDIDATES_PER_ANSWER)
    answers = merge_candidates(candidates, document.text, n_best)
    answerable = float(1 / (1 + math.exp(-float(np.max(answerable_logits)))))
    no_answer = not answers or answerable < no_answer_threshold
    timings["decode"] = time.perf_counter() - clock

    message = None
    if not answers:
        message = "No answer to this question was found in the text."
    elif no_answer:
        message = (f"The text may not answer this question (the model is {answerable:.0%} sure it does); "
                   f"its best guesses are listed anyway.")
    if document.language == "unknown" or question_language == "unknown":
        note = "The language was not recognised; answers may be unreliable (the model reads Korean and English)."
        message = f"{message} {note}" if message else note

    result = QAResult(answers=answers, no_answer=no_answer, answerable_probability=answerable, timings=timings,
                      n_tokens=n_tokens, n_windows=len(starts), question_language=question_language, device=device,
                      window_token_spans=[(s, min(s + capacity, n_tokens)) for s in starts], message=message)
    if output_attentions:
        clock = time.perf_counter()
        window = answers[0].window if answers else 0
        result.attention = _window_attention(model, tokenizer, input_ids, attention_mask, window, len(prefix),
                                             starts[window], encoded)
        timings["attention"] = time.perf_counter() - clock
    return result
