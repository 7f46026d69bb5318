"""What each head of one layer does, in one number per head: the head atlas's metrics.

Each metric is reduced from the layer's compact attention (``LittleBirdAttentions``: ``local`` (B, h, nb, b, 3b),
``global_`` (B, h, nb, b, b), ``packed`` (B, h, nb, b, s)) and averaged over the window's real query tokens:

- ``pack``: the share of a query's attention that goes to the s pack slots C_P;
- ``question``: the share to the question block, the window's first tokens [CLS] [QUESTION] question [SEP];
- ``answer``: the share to the answer's tokens (NaN when the window holds no answer);
- ``distance``: how far a query looks, the mean |key - query| in tokens over its token keys (the pack slots
  have no position: their share is left out and the rest renormalised);
- ``entropy``: the entropy of the query's whole distribution (window, block 0 and pack slots), in nats:
  0 for a head that reads one key, log(keys) for one that reads all alike;
- ``prior``: how far the head's weights sit from its BiALiBi prior, KL(weights || prior) in nats, where the
  prior is the softmax of the bias -[D_P; D] alone over the same keys (the weights a query would give with
  zero content scores q.k): 0 for a head that only follows distance, large for one whose content overrides
  it (NaN for a record without the bias it was made from).

Each is an average over queries, so it is estimated on a fixed sample of the layer's query blocks: every block
of a window up to :data:`SAMPLED_BLOCKS` blocks (1,024 tokens at b = 64), else that many spread evenly over the
window (:func:`sampled_blocks`), the same for every layer and head, so the atlas compares like with like. At 8K
tokens that reads one block in eight, which keeps the heads close to their full averages at a fraction of the
cost (docs/training-log.md, 2026-12-05).

The key of column c in query block q's ``local`` row is token (q - 1) b + c and of its ``global_`` row token c
(block 0), so every metric is a weighted sum over the compact tensors: no n x n matrix is formed. The sampled
blocks go ``chunk_blocks`` at a time, so the temporaries stay a fraction of the layer's weights.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from littlebird.modeling_littlebird import build_block_geometry

METRICS = {
    "pack": "share of attention to the pack slots",
    "question": "share of attention to the question block",
    "answer": "share of attention to the answer span",
    "distance": "mean attention distance (tokens)",
    "entropy": "attention entropy (nats)",
    "prior": "KL divergence from the BiALiBi prior (nats)",
}
"""Each metric's name and what its value means, in the order the atlas offers them."""

SHARES = ("pack", "question", "answer")  # the metrics that are shares of attention, 0..1

SAMPLED_BLOCKS = 16
"""How many query blocks of a layer the metrics are averaged over (every block of a shorter window)."""


def sampled_blocks(num_blocks: int, count: int | None = SAMPLED_BLOCKS) -> torch.Tensor:
    """The query blocks the metrics read, in order: all ``num_blocks`` when ``count`` is None or covers them, else
    the middle block of each of ``count`` equal runs of blocks, so each stands for as many blocks as the others
    (a sample that took the first and last blocks would weigh the question's queries several times over)."""
    if count is None or num_blocks <= count:
        return torch.arange(num_blocks)
    return ((torch.arange(count) + 0.5) * num_blocks / count).long()


def head_metrics(
    attentions: Any,
    *,
    question_tokens: int,
    answer_positions: Sequence[int],
    sample_blocks: int | None = SAMPLED_BLOCKS,
    chunk_blocks: int = 4,
) -> dict[str, np.ndarray]:
    """Every metric of :data:`METRICS` for each head of one layer: name -> (h,) float32, from batch row 0.

    ``question_tokens``: tokens of [CLS] [QUESTION] question [SEP] at the window's start;
    ``answer_positions``: the answer's token positions in the window (none: ``answer`` is NaN);
    ``sample_blocks``: how many query blocks to average over (:func:`sampled_blocks`; None: every block).
    """
    local, global_, packed = attentions.local[0], attentions.global_[0], attentions.packed[0]
    h, nb, b, _ = local.shape
    device = local.device
    valid = attentions.query_valid[0].to(device)  # (nb, b)
    is_answer = torch.zeros((nb + 2) * b, dtype=torch.bool, device=device)  # tokens -b .. (nb + 1) b - 1
    answer = torch.as_tensor(np.asarray(answer_positions, dtype=np.int64), device=device)
    is_answer[answer + b] = True
    column = torch.arange(3 * b, device=device)
    row = torch.arange(b, device=device)
    local_distance = (column[None, :] - b - row[:, None]).abs().float()  # (b, 3b): |key - query|, any block
    totals = {name: torch.zeros(h, device=device) for name in METRICS}
    prior = _PriorLogits.of(attentions)
    chosen = sampled_blocks(nb, sample_blocks).to(device)
    for first in range(0, len(chosen), chunk_blocks):
        blocks = chosen[first : first + chunk_blocks]  # (m,) query blocks, in order
        consecutive = int(blocks[-1] - blocks[0]) + 1 == len(blocks)
        pick = slice(int(blocks[0]), int(blocks[-1]) + 1) if consecutive else blocks  # a view where it can be
        window = local[:, pick].float()  # (h, m, b, 3b)
        block0 = global_[:, pick].float()  # (h, m, b, b)
        slots = packed[:, pick].float()  # (h, m, b, s)
        keys = (blocks[:, None] - 1) * b + column[None, :]  # (m, 3b): the token each local column reads
        queries = blocks[:, None] * b + row[None, :]  # (m, b)
        pack_share = slots.sum(-1)  # (h, m, b)
        question = (window * (keys < question_tokens)[None, :, None, :]).sum(-1) + block0[..., :question_tokens].sum(-1)
        on_answer = (window * is_answer[keys + b][None, :, None, :]).sum(-1) + (block0 * is_answer[b : 2 * b]).sum(-1)
        block0_distance = (queries[:, :, None] - row[None, None, :]).float()  # (m, b, b): block 0 is to the left
        reach = (window * local_distance).sum(-1) + (block0 * block0_distance).sum(-1)
        distance = reach / (1.0 - pack_share).clamp(min=1e-12)
        entropy = -(_p_log_p(window) + _p_log_p(block0) + _p_log_p(slots))
        weight = valid[blocks].to(window.dtype)  # (m, b): padding queries count for nothing
        values = {
            "pack": pack_share,
            "question": question,
            "answer": on_answer,
            "distance": distance,
            "entropy": entropy,
        }
        if prior is not None:
            # KL = sum p log p - sum p (logits - logsumexp(logits)), with sum p = 1: no log-softmax or joined weights
            # are formed. Clamped, as rounding leaves it a hair below 0 where p = prior.
            logits = prior.logits(blocks.tolist())  # (h, m, b, s + 4b): keys [C_P; block 0; window], as the weights
            s = slots.shape[-1]
            cross = (
                (slots * logits[..., :s]).sum(-1)
                + (block0 * logits[..., s : s + b]).sum(-1)
                + (window * logits[..., s + b :]).sum(-1)
            )
            # logsumexp by hand, faster than torch's on CPU; masked keys (-1e4) clamped to -80 first, as exp's
            # underflow path is slow, and exp(-80) adds nothing to a sum of at least 1
            peak = logits.amax(-1, keepdim=True)
            normaliser = (logits - peak).clamp_(min=-80.0).exp_().sum(-1).log_() + peak[..., 0]
            values["prior"] = (normaliser - entropy - cross).clamp(min=0)
        for name, value in values.items():
            totals[name] += (value * weight).sum(dim=(1, 2))
    count = max(float(valid[chosen].sum()), 1.0)
    out = {name: (total / count).float().cpu().numpy() for name, total in totals.items()}
    if len(answer_positions) == 0:
        out["answer"] = np.full(h, np.nan, dtype=np.float32)
    if prior is None:
        out["prior"] = np.full(h, np.nan, dtype=np.float32)
    return out


def _p_log_p(weights: torch.Tensor) -> torch.Tensor:
    """sum p log p over the last axis, 0 log 0 = 0: p times the log of p clamped to a tiny positive, faster on CPU
    than ``torch.xlogy`` (whose every element takes its 0 test)."""
    return (weights * weights.clamp(min=1e-30).log()).sum(-1)


class _PriorLogits:
    """The BiALiBi prior of one layer's queries: the model's own bias terms (``BlockGeometry.bias_terms``, keys
    [C_P; block 0; blocks q-1, q, q+1]) times the layer's coefficients, as ``BiALiBi.window_bias`` forms them."""

    def __init__(self, geometry: Any, coefficients: torch.Tensor, pack_size: int):
        self.geometry, self.coefficients, self.pack_size = geometry, coefficients, pack_size

    @classmethod
    def of(cls, attentions: Any) -> "_PriorLogits | None":
        """The prior of batch row 0 of ``attentions``; None when the record does not say how its bias was made."""
        positions = getattr(attentions, "position_ids", None)
        coefficients = getattr(attentions, "bias_coefficients", None)
        if positions is None or coefficients is None:
            return None
        valid = attentions.query_valid[:1].reshape(1, -1).to(positions.device)
        geometry = build_block_geometry(positions[:1], valid, attentions.local.shape[-2], torch.float32)
        return cls(geometry, coefficients.float(), attentions.packed.shape[-1])

    def logits(self, blocks: Sequence[int]) -> torch.Tensor:
        """The prior's logits -[D_P; D] + mask (h, m, b, s + 4b) for the m query blocks ``blocks`` (in order)."""
        terms = self.terms(blocks)  # (4, m, b, K)
        _, m, b, K = terms.shape
        return torch.matmul(self.coefficients.to(terms.device), terms.reshape(4, -1)).view(-1, m, b, K)

    def terms(self, blocks: Sequence[int]) -> torch.Tensor:
        """The bias terms (4, m, b, s + 4b) of ``blocks``, from each run of consecutive blocks as the model builds
        them for a chunk. They depend on the positions alone, so the last blocks' are kept in the geometry, which
        the window's layers share: each layer of a window reads the same sample."""
        key = (self.pack_size, tuple(blocks))
        kept = self.geometry.shared.get("prior_terms")  # one read: another thread may replace it meanwhile
        if kept is not None and kept[0] == key:
            return kept[1]
        runs, start = [], 0
        for i in range(1, len(blocks) + 1):
            if i == len(blocks) or blocks[i] != blocks[i - 1] + 1:
                runs.append(self.geometry.bias_terms(self.pack_size, blocks[start], blocks[i - 1] + 1)[0])
                start = i
        terms = (runs[0] if len(runs) == 1 else torch.cat(runs, dim=1)).float()
        self.geometry.shared["prior_terms"] = (key, terms)
        return terms
