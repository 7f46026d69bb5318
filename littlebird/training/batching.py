"""Batches of features, with Padding Insertion (paper section 3.4).

Padding Insertion makes a short input look long to BiALiBi: after a sentence end, the position
ids of every later token jump by a random number of "virtual padding" positions that hold no
token at all, so nothing has to be masked or computed for them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator, Sequence

import torch
from torch.utils.data import Sampler

from .data import Feature


def padding_insertion_positions(
    length: int, sentence_ends: Sequence[int], *, probability: float, max_padding: int, generator: torch.Generator
) -> torch.Tensor:
    """Position ids (length,) where, after each sentence-end token with ``probability``,
    0..``max_padding`` virtual paddings are inserted (later positions shift by that many)."""
    positions = torch.arange(length)
    if probability <= 0 or max_padding <= 0 or not sentence_ends:
        return positions
    ends = torch.as_tensor([e for e in sentence_ends if e < length - 1], dtype=torch.long)
    if ends.numel() == 0:
        return positions
    chosen = torch.rand(ends.numel(), generator=generator) < probability
    gaps = torch.randint(0, max_padding + 1, (ends.numel(),), generator=generator) * chosen
    shift = torch.zeros(length, dtype=torch.long)
    shift.index_add_(0, ends + 1, gaps)
    return positions + shift.cumsum(0)


class _Epoch:
    """The epoch a :class:`LengthGroupedBatchSampler` draws for. Under data parallelism accelerate
    wraps the batch sampler and forwards ``set_epoch`` only to ``batch_sampler.sampler``."""

    def __init__(self):
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch


class LengthGroupedBatchSampler(Sampler[list[int]]):
    """Batches of features of similar length, in random order.

    Most SQuAD features are far shorter than the window, and a batch is padded to its longest
    feature: drawn at random, almost every batch holds one near the window's length. Here the
    features are shuffled, each pool of ``pool_batches`` batches is sorted by length and cut
    into batches, and the batches are shuffled. The same seed and epoch give the same batches
    (resuming skips the batches already seen).
    """

    def __init__(self, lengths: Sequence[int], batch_size: int, *, pool_batches: int = 64, seed: int = 0):
        if batch_size < 1 or pool_batches < 1:
            raise ValueError(f"batch_size and pool_batches must be >= 1, got {batch_size} and {pool_batches}")
        self.lengths = list(lengths)
        self.batch_size, self.pool_batches, self.seed = batch_size, pool_batches, seed
        self.sampler = _Epoch()

    def set_epoch(self, epoch: int) -> None:
        self.sampler.set_epoch(epoch)

    def __len__(self) -> int:
        return math.ceil(len(self.lengths) / self.batch_size)

    def __iter__(self) -> Iterator[list[int]]:
        generator = torch.Generator().manual_seed(self.seed * 100_003 + self.sampler.epoch)
        order = torch.randperm(len(self.lengths), generator=generator).tolist()
        pool = self.batch_size * self.pool_batches
        batches = []
        for first in range(0, len(order), pool):
            chunk = sorted(order[first : first + pool], key=self.lengths.__getitem__)
            batches += [chunk[i : i + self.batch_size] for i in range(0, len(chunk), self.batch_size)]
        for index in torch.randperm(len(batches), generator=generator).tolist():
            yield batches[index]


def padded_width(longest: int, multiple: int, max_length: int | None = None) -> int:
    """A batch's width: its longest sequence rounded up to ``multiple``, but never past ``max_length``
    (a BERT's 512 positions) unless the longest itself is.

    Why 64: LittleBird pads to its 64-token blocks inside the model anyway, so padding there in the
    batch costs the student nothing and leaves a handful of widths (384-token windows: 6 instead of 48
    at a multiple of 8), so fewer distinct tensor sizes for the allocator to keep apart. It does not by
    itself bound a process's memory: the allocator's own settings decide that (``benchmarks/bench_training.py
    --rss-minutes``; the training log's 2026-12-01 entry). For the teacher (full attention) the wider padding
    is real extra work.
    """
    width = -(-longest // multiple) * multiple
    return width if max_length is None else max(longest, min(width, max_length))


@dataclass
class QACollator:
    """Pads features to the longest in the batch, rounded up to ``pad_to_multiple_of`` (LittleBird's
    64-token blocks; see :func:`padded_width`) and capped at ``max_length``; optionally adds Padding
    Insertion position ids. Padding is masked and never moves the start/end labels."""

    pad_id: int
    pi_probability: float = 0.0
    pi_max_padding: int = 256
    seed: int = 0
    pad_to_multiple_of: int = 64
    max_length: int | None = None

    def __post_init__(self):
        if self.pad_to_multiple_of < 1:
            raise ValueError(f"pad_to_multiple_of must be >= 1, got {self.pad_to_multiple_of}")
        self.generator = torch.Generator().manual_seed(self.seed)

    def __call__(self, features: list[Feature]) -> dict[str, torch.Tensor]:
        B = len(features)
        n = padded_width(max(len(f.input_ids) for f in features), self.pad_to_multiple_of, self.max_length)
        input_ids = torch.full((B, n), self.pad_id, dtype=torch.long)
        attention_mask = torch.zeros((B, n), dtype=torch.long)
        position_ids = torch.arange(n).repeat(B, 1)
        for row, feature in enumerate(features):
            m = len(feature.input_ids)
            input_ids[row, :m] = torch.as_tensor(feature.input_ids)
            attention_mask[row, :m] = 1
            if self.pi_probability > 0:
                shifted = padding_insertion_positions(
                    m,
                    feature.sentence_ends,
                    probability=self.pi_probability,
                    max_padding=self.pi_max_padding,
                    generator=self.generator,
                )
                position_ids[row, :m] = shifted
                position_ids[row, m:] = shifted[-1] + 1 + torch.arange(n - m)
        batch = {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
            "start_positions": torch.as_tensor([f.start for f in features]),
            "end_positions": torch.as_tensor([f.end for f in features]),
        }
        if self.pi_probability > 0:
            batch["position_ids"] = position_ids
        if any(getattr(f, "soft", False) for f in features):
            batch["soft"] = torch.as_tensor([bool(getattr(f, "soft", False)) for f in features])
        return batch
