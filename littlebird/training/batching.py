"""Batches of features, with Padding Insertion (paper section 3.4).

Padding Insertion makes a short input look long to BiALiBi: after a sentence end, the position
ids of every later token jump by a random number of "virtual padding" positions that hold no
token at all, so nothing has to be masked or computed for them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from .data import Feature


def padding_insertion_positions(length: int, sentence_ends: Sequence[int], *, probability: float,
                                max_padding: int, generator: torch.Generator) -> torch.Tensor:
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


@dataclass
class QACollator:
    """Pads features to the longest in the batch; optionally adds Padding Insertion position ids."""

    pad_id: int
    pi_probability: float = 0.0
    pi_max_padding: int = 256
    seed: int = 0

    def __post_init__(self):
        self.generator = torch.Generator().manual_seed(self.seed)

    def __call__(self, features: list[Feature]) -> dict[str, torch.Tensor]:
        B = len(features)
        n = max(len(f.input_ids) for f in features)
        input_ids = torch.full((B, n), self.pad_id, dtype=torch.long)
        attention_mask = torch.zeros((B, n), dtype=torch.long)
        position_ids = torch.arange(n).repeat(B, 1)
        for row, feature in enumerate(features):
            m = len(feature.input_ids)
            input_ids[row, :m] = torch.as_tensor(feature.input_ids)
            attention_mask[row, :m] = 1
            if self.pi_probability > 0:
                shifted = padding_insertion_positions(m, feature.sentence_ends, probability=self.pi_probability,
                                                      max_padding=self.pi_max_padding, generator=self.generator)
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
        return batch
