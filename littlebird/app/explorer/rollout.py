"""Attention rollout through both of LittleBird's routes, at the model's block resolution.

A token's representation after layer l mixes the tokens of layer l's input along two routes: the window and
block 0 (``local``, ``global_``), and the pack slots, each of which read the whole sequence (C_P = Attn(P, X)),
so that the weight a query gives slot j reaches token t as ``packed[j] * pack[j, t]``. With the residual,
attention rollout (Abnar & Zuidema, 2020) takes each layer's effective mixing as A_eff = 0.5 A + 0.5 I, A
averaged over heads, and follows a token's row down the layers: r_l = r_{l+1} A_eff_l.

Here a row is carried over blocks, not tokens: each layer keeps only its (blocks x blocks) mixing per route
(``LayerMixing``, ~64 KB per route at 8K tokens and b = 64), computed as the layer is reduced, and the rows
are composed at the end, top layer first. Below the top layer a block's mass is taken as spread evenly over
its real tokens (the block map's query average); the rows start from the chosen tokens' own weights: [CLS]
and the answer's first and last tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

RESIDUAL = 0.5
"""The share of a row that stays in place at each layer (the identity in A_eff = 0.5 A + 0.5 I)."""

TINTED_BLOCKS = 5
"""How many of the rollout's top blocks the document view tints."""


@dataclass(frozen=True)
class LayerMixing:
    """One layer's attention as the rollout needs it, averaged over heads: (blocks x blocks) per route, and the
    chosen tokens' own rows. Each query block's two rows together sum to one, as do each chosen token's."""

    window: np.ndarray  # (nb, nb): per query block, its tokens' mean weight to each key block (window + block 0)
    pack: np.ndarray  # (nb, nb): the same through the pack slots, sum_j packed[q, j] * read[j, k]
    token_window: np.ndarray  # (k, nb): each chosen token's weight to each key block (window + block 0)
    token_pack: np.ndarray  # (k, nb): each chosen token's weight through the pack slots to each block
    token_blocks: np.ndarray  # (k,) int: the block holding each chosen token


def rollout_positions(answer_positions: Sequence[int]) -> list[int]:
    """The tokens the rollout follows: [CLS] (position 0), and the answer's first and last tokens if any."""
    if len(answer_positions) == 0:
        return [0]
    first, last = int(min(answer_positions)), int(max(answer_positions))
    return [0, first] + ([last] if last != first else [])


def packed_per_block(layer: Any) -> np.ndarray:
    """(h, nb, s): each query block's mean weight to each pack slot over its real tokens (batch row 0), summed
    in place: at 8K tokens one more copy of ``packed`` is 25 MB."""
    packed = layer.packed[0]  # (h, nb, b, s)
    valid = layer.query_valid[0].to(packed.device)  # (nb, b)
    sums = packed.sum(2).float()  # (h, nb, s); sum(dtype=) would copy float16 weights whole into float32 first
    blocks, rows = (~valid).nonzero(as_tuple=True)  # the padding queries, fewer than b
    if len(blocks):
        sums.index_add_(1, blocks, -packed[:, blocks, rows].float())
    count = valid.sum(-1).clamp(min=1).to(sums.dtype)  # (nb,)
    return (sums / count[None, :, None]).cpu().numpy()


def layer_mixing(
    *,
    block_map: np.ndarray,
    packed_blocks: np.ndarray,
    pack_reads: np.ndarray,
    token_window: np.ndarray,
    token_packed: np.ndarray,
    token_blocks: Sequence[int],
) -> LayerMixing:
    """``LayerMixing`` from one layer's per-head arrays: ``block_map`` (h, nb, nb) (``block_map()``),
    ``packed_blocks`` (h, nb, s) (:func:`packed_per_block`), ``pack_reads`` (h, s, nb) (each slot's weight per
    input block), and for the chosen tokens ``token_window`` (h, k, nb) and ``token_packed`` (h, k, s)."""
    reads = torch.as_tensor(np.asarray(pack_reads, dtype=np.float32))

    def through_pack(weights: np.ndarray) -> np.ndarray:  # (h, q, s) x (h, s, nb) -> (q, nb), heads averaged
        return torch.matmul(torch.as_tensor(np.asarray(weights, dtype=np.float32)), reads).mean(0).numpy()

    return LayerMixing(
        window=np.asarray(block_map, dtype=np.float32).mean(0),
        pack=through_pack(packed_blocks),
        token_window=np.asarray(token_window, dtype=np.float32).mean(0),
        token_pack=through_pack(token_packed),
        token_blocks=np.asarray(token_blocks, dtype=np.int64),
    )


def effective_mixing(mixing: LayerMixing) -> np.ndarray:
    """(nb, nb) A_eff = 0.5 A + 0.5 I of one layer in block space, A through both routes."""
    nb = mixing.window.shape[0]
    return RESIDUAL * np.eye(nb, dtype=np.float32) + (1 - RESIDUAL) * (mixing.window + mixing.pack)


def attention_rollout(mixings: Sequence[LayerMixing]) -> tuple[np.ndarray, np.ndarray]:
    """The chosen tokens' rows propagated down the layers: (rows (L, k, nb), pack share (L, k)), float32.

    ``rows[l]`` is where the token's representation after the last layer draws from in layer l's input,
    over blocks (each row sums to 1); ``pack share[l]`` is the share of what layer l's attention moved of it
    that went through the pack slots (the residual moves nothing).
    """
    top = mixings[-1]
    k, nb = top.token_window.shape
    rows = np.zeros((len(mixings), k, nb), dtype=np.float32)
    shares = np.zeros((len(mixings), k), dtype=np.float32)
    own = np.zeros((k, nb), dtype=np.float32)
    own[np.arange(k), top.token_blocks] = 1.0
    through_window, through_pack = top.token_window, top.token_pack
    row = None
    for layer in range(len(mixings) - 1, -1, -1):
        if row is not None:  # below the top layer: the block rows, mass spread over each block's tokens
            through_window, through_pack = row @ mixings[layer].window, row @ mixings[layer].pack
            own = row
        moved = through_window.sum(-1) + through_pack.sum(-1)
        shares[layer] = np.divide(through_pack.sum(-1), moved, out=np.zeros(k, dtype=np.float32), where=moved > 0)
        row = RESIDUAL * own + (1 - RESIDUAL) * (through_window + through_pack)
        rows[layer] = row
    return rows, shares


def top_blocks(
    rollout: np.ndarray, rollout_tokens: Sequence[str], block_spans: Sequence[Any], count: int = TINTED_BLOCKS
) -> list[tuple[int, float]]:
    """(block, share) of the ``count`` blocks of document text that the answer's tokens draw most from once
    propagated to the embeddings (``rollout[0]``, the answer's rows averaged; [CLS]'s without an answer),
    best first. Blocks without document text (the question's) are left out."""
    if rollout.size == 0:
        return []
    chosen = slice(1, None) if len(rollout_tokens) > 1 else slice(0, 1)
    shares = rollout[0, chosen].mean(0)
    ranked = [int(b) for b in np.argsort(-shares, kind="stable") if block_spans[b] is not None and shares[b] > 0]
    return [(b, float(shares[b])) for b in ranked[:count]]
