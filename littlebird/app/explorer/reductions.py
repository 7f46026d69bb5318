"""The explorer's reductions: one window's attention weights, layer by layer, to the small arrays it draws.

``summarize_layer`` turns one layer's attention into small numpy arrays, and ``summarize_attention`` joins the
layers' (``AttentionSummary``). A 16K-token window has ~300 MB of attention weights per layer, far too much to
keep per browser session (or, over 12 layers, at once), so each layer is reduced to block resolution, to the
head atlas's metrics (``explorer.head_metrics``) and to its mixing for the rollout (``explorer.rollout``) as
the model computes it (``LayerReduction``). The figures that draw these arrays are in ``explorer.drawing``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from littlebird.app.explorer.head_metrics import METRICS, head_metrics
from littlebird.app.explorer.rollout import (
    LayerMixing,
    attention_rollout,
    layer_mixing,
    packed_per_block,
    rollout_positions,
)

MAX_CELLS = 128
"""Most heatmap cells along one axis; more blocks than this are average-pooled."""

LABEL_CHARS = 48
"""Characters of document text shown in the hover label of a block."""


@dataclass(frozen=True)
class AttentionSummary:
    """Everything the explorer draws for one window, reduced to block resolution.

    Arrays are float16 (they are only drawn; a 16K-token window with 12 layers x 12
    heads then takes ~12 MB of session state), indexed ``[layer, head, ...]``.
    ``block_maps`` is pooled by ``pool`` blocks per cell on both axes; the other arrays
    keep one column per block.
    """

    block_size: int
    n_tokens: int
    pool: int
    block_maps: np.ndarray  # (L, h, m, m): query cell x key cell, m = ceil(nb / pool)
    answer_blocks: np.ndarray  # (L, h, a, nb): each answer token's weight per key block
    answer_pack: np.ndarray  # (L, h, a, s): each answer token's weight per pack slot
    pack_reads: np.ndarray  # (L, h, s, nb): each pack slot's weight per input block
    answer_tokens: tuple[str, ...]  # a labels, the answer's tokens as text
    answer_block_range: tuple[int, int] | None  # first and last block holding the answer
    question_blocks: int  # blocks covered by [CLS] + question + [SEP]
    block_labels: tuple[str, ...]  # nb hover labels: where each block starts
    head_metrics: dict[str, np.ndarray] = field(default_factory=dict)  # name of explorer.head_metrics.METRICS -> (L, h)
    # explorer.rollout: the chosen tokens' rows down the layers, float32 (small: k <= 3 rows a layer)
    rollout: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 0), np.float32))  # (L, k, nb)
    rollout_pack_share: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.float32))  # (L, k)
    rollout_tokens: tuple[str, ...] = ()  # k labels: [CLS], the answer's first and last tokens
    block_spans: tuple[tuple[int, int] | None, ...] = ()  # nb: the characters of the text each block holds

    @property
    def num_layers(self) -> int:
        """Number of encoder layers summarised."""
        return int(self.block_maps.shape[0])

    @property
    def num_heads(self) -> int:
        """Number of attention heads per layer."""
        return int(self.block_maps.shape[1])


def pool_blocks(matrix: np.ndarray, pool: int) -> np.ndarray:
    """Pool the last two axes of ``matrix`` (..., nq, nk) by ``pool`` x ``pool`` blocks.

    Key blocks are summed and query blocks averaged, so a cell still reads "share of
    its queries' attention that went to these keys". The ragged last row of cells is
    averaged over the query blocks it really has.
    """
    matrix = np.asarray(matrix, dtype=np.float32)
    if pool == 1:
        return matrix
    *lead, nq, nk = matrix.shape
    mq, mk = math.ceil(nq / pool), math.ceil(nk / pool)
    padded = np.zeros((*lead, mq * pool, mk * pool), dtype=np.float32)
    padded[..., :nq, :nk] = matrix
    sums = padded.reshape(*lead, mq, pool, mk, pool).sum(axis=(-1, -3))  # (..., mq, mk)
    queries_per_cell = np.minimum(pool, nq - np.arange(mq) * pool)  # (mq,)
    return sums / queries_per_cell[:, None]


def _block_labels(
    text: str, token_offsets: Sequence[tuple[int, int] | None], block_size: int, n_tokens: int
) -> tuple[str, ...]:
    """Label each block with the start of the document text it holds."""
    labels = []
    for block, span in enumerate(_block_spans(token_offsets, block_size, n_tokens)):
        if span is None:
            labels.append("[CLS] / question" if block == 0 else "(special tokens)")
            continue
        snippet = " ".join(text[span[0] : span[1]].split())
        labels.append(snippet[:LABEL_CHARS] + ("…" if len(snippet) > LABEL_CHARS else ""))
    return tuple(labels)


def _block_spans(
    token_offsets: Sequence[tuple[int, int] | None], block_size: int, n_tokens: int
) -> tuple[tuple[int, int] | None, ...]:
    """Each block's (first character, end) of the text, None for a block of special and question tokens only."""
    spans = []
    for first in range(0, n_tokens, block_size):
        held = [o for o in token_offsets[first : first + block_size] if o is not None]
        spans.append((held[0][0], held[-1][1]) if held else None)
    return tuple(spans)


def _local_to_blocks(local: np.ndarray, q: np.ndarray, nb: int) -> np.ndarray:
    """Scatter local weights (..., a, 3b) of queries in blocks ``q`` into (..., a, nb) key blocks."""
    *lead, a, three_b = local.shape
    per_neighbour = local.reshape(*lead, a, 3, three_b // 3).sum(-1)  # (..., a, 3): blocks q-1, q, q+1
    out = np.zeros((*lead, a, nb + 2), dtype=np.float32)
    rows = np.arange(a)
    for k in range(3):
        # column q-1+k, shifted by one so q-1 = -1 lands in a spare column that is dropped
        out[..., rows, q + k] += per_neighbour[..., k]
    return out[..., 1 : nb + 1]


@dataclass(frozen=True)
class LayerSummary:
    """One layer's share of an ``AttentionSummary`` (its arrays without the layer axis), in float32."""

    pool: int
    block_map: np.ndarray  # (h, m, m)
    answer_blocks: np.ndarray  # (h, a, nb)
    answer_pack: np.ndarray  # (h, a, s)
    pack_reads: np.ndarray  # (h, s, nb)
    head_metrics: dict[str, np.ndarray]  # (h,) per metric
    mixing: LayerMixing | None = None  # the layer's block-level mixing, for the rollout (explorer.rollout)


def summarize_layer(
    layer: Any, *, answer_positions: Sequence[int], question_tokens: int, block_size: int, max_cells: int = MAX_CELLS
) -> LayerSummary:
    """Reduce one layer's ``LittleBirdAttentions`` (batch row 0) to what the explorer draws of it.

    ``layer`` has ``local`` (B, h, nb, b, 3b), ``global_`` (B, h, nb, b, b), ``packed`` (B, h, nb, b, s),
    ``pack`` (B, h, s, n_padded) and a ``block_map()`` method (B, h, nb, nb); see ``summarize_attention``
    for the other arguments.
    """
    positions = np.asarray(answer_positions, dtype=np.int64)
    # kept as the model gave them (float16 from the explorer's pass): only the rows read become float32 arrays
    local, global_, packed = layer.local[0], layer.global_[0], layer.packed[0]
    nb = local.shape[1]
    pool = max(1, math.ceil(nb / max_cells))
    pack = _numpy(layer.pack[0])  # (h, s, n) with n padded to blocks (as the model gives it) or not
    h, s, n = pack.shape
    padded = pack
    if n != nb * block_size:  # a copy only then: at 8K tokens one is 25 MB
        padded = np.zeros((h, s, nb * block_size), dtype=np.float32)
        padded[..., : min(n, nb * block_size)] = pack[..., : nb * block_size]
    pack_reads = padded.reshape(h, s, nb, block_size).sum(-1)  # (h, s, nb)
    block_map = _numpy(layer.block_map()[0])  # (h, nb, nb)
    chosen = np.asarray(rollout_positions(positions), dtype=np.int64)
    mixing = layer_mixing(
        block_map=block_map,
        packed_blocks=packed_per_block(layer),
        pack_reads=pack_reads,
        token_window=_token_blocks(local, global_, chosen, nb),
        token_packed=_numpy(packed[:, chosen // block_size, chosen % block_size]),
        token_blocks=chosen // block_size,
    )
    return LayerSummary(
        pool=pool,
        block_map=pool_blocks(block_map, pool),
        answer_blocks=_token_blocks(local, global_, positions, nb),
        answer_pack=_numpy(packed[:, positions // block_size, positions % block_size]),  # (h, a, s)
        pack_reads=pack_reads,
        head_metrics=head_metrics(layer, question_tokens=question_tokens, answer_positions=positions),
        mixing=mixing,
    )


def _token_blocks(local: Any, global_: Any, positions: np.ndarray, nb: int) -> np.ndarray:
    """(h, a, nb): where the tokens at ``positions`` looked, per key block: their local neighbours and block 0.
    ``local`` (h, nb, b, 3b) and ``global_`` (h, nb, b, b) are tensors or arrays of any float dtype."""
    block_size = local.shape[2]
    q_blocks, rows = positions // block_size, positions % block_size
    out = _local_to_blocks(_numpy(local[:, q_blocks, rows]), q_blocks, nb)
    out[..., 0] += _numpy(global_[:, q_blocks, rows]).sum(-1)
    return out


def summarize_attention(
    attentions: Sequence[Any],
    *,
    text: str,
    token_offsets: Sequence[tuple[int, int] | None],
    answer_positions: Sequence[int],
    question_tokens: int,
    block_size: int,
    max_cells: int = MAX_CELLS,
) -> AttentionSummary:
    """Reduce one window's per-layer ``LittleBirdAttentions`` to an ``AttentionSummary``.

    Args:
        attentions: one object per layer with tensors ``local`` (B, h, nb, b, 3b),
            ``global_`` (B, h, nb, b, b), ``packed`` (B, h, nb, b, s), ``pack``
            (B, h, s, n_padded) and a ``block_map()`` method (B, h, nb, nb), batch row 0
            used; or each layer's ``LayerSummary``, already reduced (``LayerReduction``).
        text: the document text that ``token_offsets`` index into.
        token_offsets: per window token, its (start, end) in ``text``, or None for
            special and question tokens.
        answer_positions: token positions (in the window) of the best answer.
        question_tokens: tokens before the context starts ([CLS], question, [SEP]).
        block_size: the model's block size b.
        max_cells: pool the block map so neither axis exceeds this many cells.
    """
    layers = [
        layer
        if isinstance(layer, LayerSummary)
        else summarize_layer(
            layer,
            answer_positions=answer_positions,
            question_tokens=question_tokens,
            block_size=block_size,
            max_cells=max_cells,
        )
        for layer in attentions
    ]
    n_tokens = len(token_offsets)
    positions = np.asarray(answer_positions, dtype=np.int64)
    answer_tokens = tuple(
        text[token_offsets[p][0] : token_offsets[p][1]] if token_offsets[p] else "?" for p in positions
    )
    q_blocks = positions // block_size
    answer_range = (int(q_blocks.min()), int(q_blocks.max())) if len(positions) else None

    def stacked(name: str) -> np.ndarray:
        return np.stack([getattr(layer, name) for layer in layers]).astype(np.float16)

    rollout = {}
    if all(layer.mixing is not None for layer in layers):
        rows, shares = attention_rollout([layer.mixing for layer in layers])
        chosen = rollout_positions(positions)
        names = ["[CLS]", "answer start", "answer end"][: len(chosen)]
        labels = tuple(
            name
            if p == 0
            else f"{name} “{text[token_offsets[p][0] : token_offsets[p][1]]}”"
            if token_offsets[p]
            else name
            for name, p in zip(names, chosen)
        )
        rollout = {"rollout": rows, "rollout_pack_share": shares, "rollout_tokens": labels}

    return AttentionSummary(
        block_size=block_size,
        n_tokens=n_tokens,
        pool=layers[-1].pool,
        block_maps=stacked("block_map"),
        answer_blocks=stacked("answer_blocks"),
        answer_pack=stacked("answer_pack"),
        pack_reads=stacked("pack_reads"),
        answer_tokens=answer_tokens,
        answer_block_range=answer_range,
        question_blocks=math.ceil(question_tokens / block_size),
        block_labels=_block_labels(text, token_offsets, block_size, n_tokens),
        head_metrics={name: np.stack([layer.head_metrics[name] for layer in layers]) for name in METRICS},
        block_spans=_block_spans(token_offsets, block_size, n_tokens),
        **rollout,
    )


def _offsets(window: Any) -> list[tuple[int, int] | None]:
    """Each window token's (start, end) in the shown text, None for special and question tokens."""
    return [None if start < 0 else (start, end) for start, end in window.token_spans]


def answer_positions(window: Any, answer_span: tuple[int, int] | None) -> list[int]:
    """The window's tokens that overlap ``answer_span`` of the shown text (none without a span)."""
    if answer_span is None:
        return []
    first, last = answer_span
    return [i for i, o in enumerate(_offsets(window)) if o is not None and o[0] < last and o[1] > first]


@dataclass(frozen=True)
class LayerReduction:
    """``reduce_layer`` for ``explorer.window.window_attention``: ``summarize_layer`` of each layer as the
    model computes it, so the window's summary never needs more than one layer's weights at a time."""

    answer_span: tuple[int, int] | None
    block_size: int
    max_cells: int = MAX_CELLS

    def __call__(self, window: Any, layer: Any) -> LayerSummary:
        return summarize_layer(
            layer,
            answer_positions=answer_positions(window, self.answer_span),
            question_tokens=window.question_length,
            block_size=self.block_size,
            max_cells=self.max_cells,
        )


def summarize_window(
    window: Any, *, text: str, answer_span: tuple[int, int] | None, block_size: int
) -> AttentionSummary:
    """``summarize_attention`` for the ``explorer.window.WindowAttention`` of one window of a reading.

    ``window.token_spans`` gives each window token's [start, end) in ``text`` ((-1, -1) for
    special and question tokens); the answer's tokens are the document tokens overlapping
    ``answer_span`` (none when there is no answer). ``window.attentions`` are the layers' weights or,
    reduced as the model ran (``LayerReduction``), their ``LayerSummary``.
    """
    return summarize_attention(
        window.attentions,
        text=text,
        token_offsets=_offsets(window),
        answer_positions=answer_positions(window, answer_span),
        question_tokens=window.question_length,
        block_size=block_size,
    )


def _numpy(tensor: Any) -> np.ndarray:
    """float32 numpy view of a torch tensor (any device, any dtype) or array."""
    if hasattr(tensor, "detach"):
        tensor = tensor.detach().float().cpu().numpy()
    return np.asarray(tensor, dtype=np.float32)
