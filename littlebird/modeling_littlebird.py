"""LittleBird (Lee et al., 2022): BiALiBi, pack & unpack attention, blocked sliding window.

One file holds everything a forward pass needs, section 3 of the paper read top to bottom:

- ``BiALiBi``: the distance matrix D of eq. 3.1 (alpha for [CLS], beta left, gamma right).
- ``pack_attention``: C_P = Attn(P, X), linear in n (s packed queries).
- ``usw_attention_blocked``: USWAttn(X, C_P), one softmax over [K(C_P); K(X)] with bias [D_P; D],
  where each block of b queries sees its own block, both neighbours, the first (global) block
  and the s packed vectors. Nothing of size n x n is ever built.
- ``LittleBirdLayer``: P' = LN(C_P + P), A = LN(C_X + X), X' = LN(FFN(A) + A); the last layer has no P',
  which no later layer would read.
- ``LittleBirdForQuestionAnswering``: the QA head of appendix A.2.

Shapes: B batch, h heads, n tokens (padded to nb blocks of b), d head size, s pack size, H hidden.
"""

import collections
import contextlib
import functools
import math
import re
import threading
from dataclasses import dataclass, field, replace
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn
from transformers import PreTrainedModel
from transformers.activations import ACT2FN
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.modeling_outputs import BaseModelOutput, QuestionAnsweringModelOutput
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
from transformers.utils import logging

from .configuration_littlebird import LittleBirdConfig

logger = logging.get_logger(__name__)


def alibi_slopes(num_heads: int) -> torch.Tensor:
    """The ALiBi head slopes of Press et al.: 2^(-8/h), 2^(-16/h), ... (interleaved when h is no power of 2)."""

    def power_of_two_slopes(n):
        start = 2 ** (-8 / n)
        return [start ** (i + 1) for i in range(n)]

    if math.log2(num_heads).is_integer():
        slopes = power_of_two_slopes(num_heads)
    else:
        closest = 2 ** math.floor(math.log2(num_heads))
        slopes = power_of_two_slopes(closest) + power_of_two_slopes(2 * closest)[0::2][: num_heads - closest]
    return torch.tensor(slopes, dtype=torch.float32)


# Added to the scores of keys a query may not see. Finite, so a product that meets it in bf16 or fp16 stays
# finite; exp(-1e4) is 0 in every float type, so those keys get exactly no weight, as with -inf.
MASKED_SCORE = -1e4


class BiALiBi(nn.Module):
    """Bidirectional ALiBi: learnable per-head slopes alpha, beta, gamma (section 3.1)."""

    def __init__(self, num_heads: int):
        super().__init__()
        self.alpha = nn.Parameter(torch.empty(num_heads))
        self.beta = nn.Parameter(torch.empty(num_heads))
        self.gamma = nn.Parameter(torch.empty(num_heads))
        self._kept_bias = None  # (terms, slope versions, bias) of the last inference call: see window_bias
        self.reset_parameters()

    def reset_parameters(self):
        # ALiBi's slopes for both directions; [CLS] starts as if it sat next to every token.
        slopes = alibi_slopes(self.alpha.numel())
        with torch.no_grad():
            for p in (self.alpha, self.beta, self.gamma):
                p.copy_(slopes)

    def _slopes(self, like: torch.Tensor):
        shape = (1, -1) + (1,) * (like.dim() - 2)
        return (p.view(shape).to(like.dtype) for p in (self.alpha, self.beta, self.gamma))

    def distance_bias(self, left: torch.Tensor, right: torch.Tensor, touches_cls: torch.Tensor) -> torch.Tensor:
        """D (B, h, ...) from the pair terms of :func:`pair_terms`, each (B, 1, ...).

        D = 0 on the diagonal, alpha for a pair touching position 0 ([CLS]),
        beta * (i - j) for a key j left of query i, gamma * (j - i) for a key to the right.
        """
        alpha, beta, gamma = self._slopes(left)
        return beta * left + gamma * right + alpha * touches_cls

    def bias_coefficients(self) -> torch.Tensor:
        """(h, 4): what multiplies the terms of :func:`bias_terms` ([left, right, touches_cls, masked])
        to give -[D_P; D] plus the mask. One small matrix product then builds every head's bias, and its
        backward gives the slopes' gradients as a product too, not as passes over the scores."""
        masked = torch.full_like(self.alpha, MASKED_SCORE)
        return torch.stack([-self.beta, -self.gamma, -self.alpha, masked], dim=1)

    def pack_bias(self, block_size: int) -> torch.Tensor:
        """D_P = ((beta + gamma) / 2 * b) J: every packed vector sits b tokens away. Shape (h,)."""
        return (self.beta + self.gamma) / 2 * block_size

    def window_bias(self, terms: torch.Tensor, dtype: torch.dtype, keep: bool = True) -> torch.Tensor:
        """-[D_P; D] + mask for every head at once: (h, 4) x (Bt, 4, m, b, K) -> (Bt, h, m, b, K).

        Without gradients, the last result is kept and returned again for the same ``terms`` object and
        unchanged slopes: the reader's windows share one geometry (see :func:`build_block_geometry`), so
        each layer computes its bias once per document, not once per window. ``keep=False`` (a chunk's
        terms, built for one call) keeps nothing: at 8K tokens a chunk's bias is 16 MB a layer.
        """
        Bt, _, m, b, K = terms.shape
        keep = keep and not torch.is_grad_enabled()
        versions = (self.alpha._version, self.beta._version, self.gamma._version, dtype)
        kept = self._kept_bias  # one read: another thread may replace it meanwhile
        if keep and kept is not None and kept[0] is terms and kept[1] == versions:
            return kept[2]
        coefficients = self.bias_coefficients().to(terms.dtype)  # (h, 4)
        bias = torch.matmul(coefficients, terms.reshape(Bt, 4, m * b * K)).view(Bt, -1, m, b, K).to(dtype)
        self._kept_bias = (terms, versions, bias) if keep else None
        return bias


@dataclass
class BlockGeometry:
    """Positions and masks of the blocked window, shared by every layer of one forward pass.

    Built once from position ids, so Padding Insertion (shifted ids) changes distances only.
    ``local_*`` cover the 3b keys of blocks q-1, q, q+1 of each query block q; ``global_*``
    the b keys of block 0 (masked where block 0 already lies in the window, q <= 1).
    """

    block_size: int
    position_ids: torch.Tensor  # (B, n) long
    key_valid: torch.Tensor  # (B, n) bool: a real token, not padding
    query_valid: torch.Tensor  # (B, nb, b) bool
    # The terms below have batch dimension B, or 1 where every row has the same positions and padding.
    local: tuple  # (left, right, touches_cls), each (B, 1, nb, b, 3b): see pair_terms
    local_mask: torch.Tensor  # (B, 1, nb, 1, 3b) additive 0 / very negative
    global_: tuple  # (left, right, touches_cls), each (B, 1, nb, b, b)
    global_mask: torch.Tensor  # (B, 1, nb, 1, b)
    cache: dict = field(default_factory=dict)  # per-forward objects shared by layers (flex block mask)
    # Objects derived from the terms alone (bias terms): shared by every forward pass that reuses the terms.
    shared: dict = field(default_factory=dict)

    @property
    def num_blocks(self) -> int:
        return self.query_valid.shape[1]

    def bias_terms(self, pack_size: int, start: int, end: int) -> torch.Tensor:
        """:func:`bias_terms` of query blocks [start, end). All blocks at once (training) are built once per
        forward pass and shared by the layers; a chunk (inference) is built when read, so memory stays
        bounded by the chunk."""
        if (start, end) != (0, self.num_blocks):
            return bias_terms(self, pack_size, start, end)
        key = ("bias_terms", pack_size)
        if key not in self.shared:
            self.shared[key] = bias_terms(self, pack_size, start, end)
        return self.shared[key]


def _look_around(x: torch.Tensor, block_dim: int, fill) -> torch.Tensor:
    """Concatenate blocks q-1, q, q+1 along the dimension after ``block_dim``; edges get ``fill``."""
    pad_shape = list(x.shape)
    pad_shape[block_dim] = 1
    pad = torch.full(pad_shape, fill, dtype=x.dtype, device=x.device)
    padded = torch.cat([pad, x, pad], dim=block_dim)  # (..., nb + 2, b, ...)
    nb = x.shape[block_dim]
    windows = [padded.narrow(block_dim, offset, nb) for offset in range(3)]
    return torch.cat(windows, dim=block_dim + 1)  # (..., nb, 3b, ...)


def pair_terms(q_pos, q_index, k_pos, k_index, dtype):
    """The three terms D is linear in, for queries (B, nb, b) and keys (B, nb, K): each (B, 1, nb, b, K).

    left = i - j for keys left of the query, right = j - i for keys to its right, touches_cls = 1
    where the pair involves position 0 but is not the diagonal (left and right are 0 there),
    so that D = beta * left + gamma * right + alpha * touches_cls, with no case split per head.
    """
    dist = k_pos.unsqueeze(-2) - q_pos.unsqueeze(-1)  # (B, nb, b, K) key - query position
    same = k_index.unsqueeze(-2) == q_index.unsqueeze(-1)
    cls = ((q_pos == 0).unsqueeze(-1) | (k_pos == 0).unsqueeze(-2)) & ~same
    left = (-dist).clamp(min=0).masked_fill(cls, 0).to(dtype)
    right = dist.clamp(min=0).masked_fill(cls, 0).to(dtype)
    return left.unsqueeze(1), right.unsqueeze(1), cls.to(dtype).unsqueeze(1)


def build_block_geometry(position_ids: torch.Tensor, key_valid: torch.Tensor, block_size: int, dtype) -> BlockGeometry:
    """Distances and masks of the blocked window from position ids (B, n) and validity (B, n), n = nb * b.

    Where every row has the same positions and padding (the reader's windows of one document), the
    distance terms and masks are built for one row (batch dimension 1) and broadcast over the batch,
    so BiALiBi's bias is computed once per layer, not once per window.
    """
    B, n = position_ids.shape
    b = block_size
    nb = n // b
    query_valid = key_valid.view(B, nb, b)
    if B > 1 and bool((position_ids == position_ids[:1]).all()) and bool((key_valid == key_valid[:1]).all()):
        B = 1
    pos = position_ids[:B].view(B, nb, b)
    valid = key_valid[:B].view(B, nb, b)
    key = None
    if B == 1 and position_ids.device.type == "cpu" and not torch.is_grad_enabled():
        key = (b, dtype, n, pos.numpy().tobytes(), valid.numpy().tobytes())
        with _KEPT_TERMS_LOCK:
            kept = _KEPT_TERMS.get(key)
            if kept is not None:
                _KEPT_TERMS.move_to_end(key)
        if kept is not None:
            local, local_mask, global_, global_mask, shared = kept
            return BlockGeometry(
                b, position_ids, key_valid, query_valid, local, local_mask, global_, global_mask, shared=shared
            )
    index = torch.arange(n, device=position_ids.device).view(1, nb, b).expand(B, nb, b)

    window_pos = _look_around(pos, 1, 0)  # (B, nb, 3b)
    window_valid = _look_around(valid, 1, False)
    window_index = _look_around(index, 1, -1)

    local = pair_terms(pos, index, window_pos, window_index, dtype)
    global_ = pair_terms(pos, index, pos[:, :1].expand(B, nb, b), index[:, :1].expand(B, nb, b), dtype)

    neg_inf = torch.finfo(dtype).min
    local_mask = torch.zeros(B, 1, nb, 1, 3 * b, dtype=dtype, device=pos.device)
    local_mask.masked_fill_(~window_valid.view(B, 1, nb, 1, 3 * b), neg_inf)
    # Block 0 is already in the window of blocks 0 and 1: count each key once.
    global_valid = valid[:, :1].expand(B, nb, b).clone()
    global_valid[:, :2] = False
    global_mask = torch.zeros(B, 1, nb, 1, b, dtype=dtype, device=pos.device)
    global_mask.masked_fill_(~global_valid.view(B, 1, nb, 1, b), neg_inf)
    terms = (local, local_mask, global_, global_mask, {})
    if key is not None:
        with _KEPT_TERMS_LOCK:
            _KEPT_TERMS[key] = terms
            while len(_KEPT_TERMS) > _KEEP_TERMS:
                _KEPT_TERMS.popitem(last=False)
    return BlockGeometry(
        b, position_ids, key_valid, query_valid, local, local_mask, global_, global_mask, shared=terms[4]
    )


# Inference on CPU reads window after window with the same positions and padding: their distance terms
# (and, through BlockGeometry.shared, the bias terms) are built once and kept for the next windows.
_KEEP_TERMS = 2
_KEPT_TERMS: "collections.OrderedDict[tuple, tuple]" = collections.OrderedDict()
_KEPT_TERMS_LOCK = threading.Lock()


def bias_terms(geometry: BlockGeometry, pack_size: int, start: int, end: int) -> torch.Tensor:
    """(B, 4, m, b, s + 4b) for the m query blocks [start, end): per query and key of the blocked window,
    the terms [left, right, touches_cls, masked] that BiALiBi's bias and the mask are linear in, for the
    keys [C_P (s); block 0 (b); blocks q-1, q, q+1 (3b)] in that order. A packed vector counts as b/2 to
    the left and b/2 to the right, so beta * b/2 + gamma * b/2 = D_P."""
    take = lambda t: t[:, :, start:end]  # noqa: E731
    left, right, cls = (
        torch.cat([take(global_term), take(local_term)], dim=-1)  # (B, 1, m, b, 4b)
        for global_term, local_term in zip(geometry.global_, geometry.local)
    )
    B, _, m, b, _ = left.shape
    masks = torch.cat([take(geometry.global_mask), take(geometry.local_mask)], dim=-1) < 0  # (B, 1, m, 1, 4b)
    tokens = torch.cat([left, right, cls, masks.to(left.dtype).expand_as(left)], dim=1)  # (B, 4, m, b, 4b)
    packed = tokens.new_zeros(B, 4, m, b, pack_size)
    packed[:, :2] = b / 2
    return torch.cat([packed, tokens], dim=-1)


def _window_keys(shared: torch.Tensor, blocks: torch.Tensor, start: int, end: int) -> torch.Tensor:
    """(B, h, m, s + 4b, d): for query blocks [start, end), the keys (or values) [C_P; block 0; blocks
    q-1, q, q+1]. ``shared`` is C_P's (B, h, s, d); ``blocks`` (B, h, nb, b, d) the tokens' blocks. A block
    before the first or after the last is zeros (its keys are masked); only the chunk's slices are padded,
    so the window's keys are never copied whole."""
    B, h, nb, b, d = blocks.shape
    m = end - start
    parts = [shared.unsqueeze(2).expand(B, h, m, shared.shape[2], d), blocks[:, :, :1].expand(B, h, m, b, d)]
    for offset in (-1, 0, 1):
        first, last = start + offset, end + offset
        lo, hi = max(first, 0), min(last, nb)
        part = blocks[:, :, lo:hi]
        if (lo, hi) != (first, last):
            part = F.pad(part, (0, 0, 0, 0, lo - first, last - hi))
        parts.append(part)
    return torch.cat(parts, dim=3)


@dataclass
class LittleBirdAttentions:
    """One layer's attention weights in compact form (never n x n).

    - ``local`` (B, h, nb, b, 3b): what each query of block q gave to the keys of blocks q-1, q, q+1
      (zeros where a block does not exist).
    - ``global_`` (B, h, nb, b, b): what it gave to block 0 beyond its window (zeros for q <= 1).
    - ``packed`` (B, h, nb, b, s): what it gave to the s packed vectors C_P.
    - ``pack`` (B, h, s, n): the pack attention of each packed slot over the tokens.
    - ``query_valid`` (B, nb, b): which queries are real tokens.
    - ``length``: the input's n before padding to blocks (None: nb * b).
    - ``position_ids`` (B, nb * b) and ``bias_coefficients`` (h, 4): what the layer's BiALiBi bias was made
      from (:meth:`BlockGeometry.bias_terms` times :meth:`BiALiBi.bias_coefficients`), so a reader can rebuild
      the prior the scores were added to; None in records made by hand.
    Each query's local + global + packed weights sum to one.

    Where code expects a (B, h, n, n) tensor, ``shape`` is that of :meth:`to_dense`, which builds it
    (for short inputs), and ``retain_grad()`` / ``grad`` act on the compact tensors. All four are the
    tensors the layer's output is computed from, so after ``retain_grad()`` a backward pass from the
    output gives each a gradient (as do :meth:`block_map` and :meth:`to_dense`, built from them).
    """

    local: torch.Tensor
    global_: torch.Tensor
    packed: torch.Tensor
    pack: torch.Tensor
    query_valid: torch.Tensor
    length: Optional[int] = None
    position_ids: Optional[torch.Tensor] = None
    bias_coefficients: Optional[torch.Tensor] = None

    _TENSORS = ("local", "global_", "packed", "pack")

    @property
    def block_size(self) -> int:
        return self.local.shape[-2]

    @property
    def shape(self) -> torch.Size:
        """(B, h, n, n): the shape of :meth:`to_dense`, the dense matrix these weights stand for."""
        B, h, nb, b, _ = self.local.shape
        n = nb * b if self.length is None else self.length
        return torch.Size((B, h, n, n))

    def retain_grad(self) -> None:
        """``Tensor.retain_grad`` on each compact tensor that takes part in autograd."""
        for name in self._TENSORS:
            tensor = getattr(self, name)
            if tensor.requires_grad:
                tensor.retain_grad()

    @property
    def grad(self) -> Optional["LittleBirdAttentions"]:
        """The compact tensors' gradients after ``retain_grad()`` and a backward pass (None where a tensor
        got none), or None when none did."""
        grads = {name: getattr(self, name).grad for name in self._TENSORS}
        if all(g is None for g in grads.values()):
            return None
        return replace(self, **grads)

    def block_map(self) -> torch.Tensor:
        """(B, h, nb, nb): per query block, the weight each key block received, averaged over real queries."""
        B, h, nb, b, _ = self.local.shape
        # float16 weights give float32 maps; sum(dtype=) would first copy the weights whole into that dtype
        dtype = torch.promote_types(self.local.dtype, torch.float32)
        weights = self.query_valid.to(dtype).view(B, 1, nb, b, 1)
        count = weights.sum(dim=3).clamp(min=1)  # (B, 1, nb, 1)
        per_block = (self.local.view(B, h, nb, b, 3, b).sum(-1).to(dtype) * weights).sum(3) / count  # (B, h, nb, 3)
        padded = torch.zeros(B, h, nb, nb + 2, dtype=dtype, device=self.local.device)
        rows = torch.arange(nb, device=self.local.device)
        for offset in range(3):
            padded[:, :, rows, rows + offset] = per_block[..., offset]
        block_map = padded[..., 1:-1].clone()
        block_map[..., 0] += (self.global_.sum(-1).to(dtype) * weights[..., 0]).sum(3) / count[..., 0]
        return block_map

    def to_dense(self, n: Optional[int] = None) -> torch.Tensor:
        """(B, h, n, n) token-to-token weights (the packed share left out), n the input's length unless
        given. For tests and short inputs."""
        B, h, nb, b, _ = self.local.shape
        size = nb * b
        n = self.length if n is None else n
        dense = self.local.new_zeros(B, h, size, size + 2 * b)  # one spare block on each side
        for q in range(nb):
            dense[:, :, q * b : (q + 1) * b, q * b : q * b + 3 * b] = self.local[:, :, q]
        dense = dense[..., b:-b].clone()
        dense[..., :b] = dense[..., :b] + self.global_.reshape(B, h, size, b)
        n = size if n is None else n
        return dense[:, :, :n, :n]


_RETURNED_WEIGHTS = threading.local()


@contextlib.contextmanager
def attention_weights_dtype(dtype: torch.dtype):
    """Within it, this thread's forwards return their (local, global, packed) attention weights in ``dtype``
    (float16: half the memory, 63 MB a layer at 8K tokens), for viewers of the weights; the weights are
    computed, and the output read from them, as before. Not for training: gradients reach fp32 weights only."""
    previous = getattr(_RETURNED_WEIGHTS, "dtype", None)
    _RETURNED_WEIGHTS.dtype = dtype
    try:
        yield
    finally:
        _RETURNED_WEIGHTS.dtype = previous


def usw_attention_blocked(
    q,
    k,
    v,
    packed_k,
    packed_v,
    geometry: BlockGeometry,
    bialibi: BiALiBi,
    dropout_p: float = 0.0,
    output_attentions: bool = False,
    chunk_blocks: Optional[int] = None,
):
    """USWAttn(X, C_P) on blocks: softmax(Q [K(C_P); K(X)]^T / sqrt(d) - [D_P; D]) [V(C_P); V(X)].

    q, k, v: (B, h, n, d); packed_k, packed_v: (B, h, s, d). Returns (B, h, n, d) and the
    (local, global, packed) weights when asked. Each block of b queries reads its s + 4b keys
    [C_P; block 0; blocks q-1, q, q+1]; the bias and mask come from the geometry's terms times the
    slopes (one small product for every head at once). Without weights asked for, each block is one
    fused ``scaled_dot_product_attention`` with that bias as its float mask, so the (b, s + 4b) scores
    never reach memory; with them, the scores are formed, biased and softmaxed in place, and the output
    is read from the three weight tensors returned, so gradients reach them (``retain_grad``). Query
    blocks are processed ``chunk_blocks`` at a time, which bounds the temporaries at O(chunk * (4b + s))
    without changing the result; weights of several chunks are written into the returned tensors chunk by
    chunk (never held twice), off that path, as the layer only chunks without gradients. ``v`` and ``packed_v``
    None: the weights alone, no output (``LittleBirdLayer.attention_weights``).
    """
    B, h, n, d = q.shape
    b = geometry.block_size
    nb = n // b
    s = packed_k.shape[2]
    K = s + 4 * b  # keys per query block
    scale = 1.0 / math.sqrt(d)
    weights_only = v is None
    q, k = (t.reshape(B, h, nb, b, d) for t in (q, k))  # views: each chunk copies only its own part
    v = None if weights_only else v.reshape(B, h, nb, b, d)
    chunk_blocks = nb if chunk_blocks is None else max(1, chunk_blocks)
    # Without gradients, weights are softmaxed in place and several chunks' outputs are written into one
    # (B, n, h, d) tensor, which merge_heads then reads without a copy (at 8K tokens each copy is 12.6 MB).
    in_place = not torch.is_grad_enabled()
    context = q.new_empty(B, n, h, d).transpose(1, 2) if chunk_blocks < nb and not weights_only else None
    weights = None
    stored = getattr(_RETURNED_WEIGHTS, "dtype", None) if in_place else None  # see attention_weights_dtype
    stored = q.dtype if stored is None else stored
    if output_attentions and chunk_blocks < nb:  # (packed, global, local) of every query block, filled per chunk
        weights = tuple(q.new_empty(B, h, nb, b, width, dtype=stored) for width in (s, b, 3 * b))
    for start in range(0, nb, chunk_blocks):
        end = min(nb, start + chunk_blocks)
        m = end - start
        keys = _window_keys(packed_k, k, start, end).view(B, h * m, K, d)
        values = None if weights_only else _window_keys(packed_v, v, start, end).view(B, h * m, K, d)
        queries = q[:, :, start:end].reshape(B, h * m, b, d)
        terms = geometry.bias_terms(s, start, end)  # (Bt, 4, m, b, K), Bt = B or 1
        bias = bialibi.window_bias(terms, q.dtype, keep=m == nb).view(terms.shape[0], h * m, b, K)  # -[D_P; D] + mask
        if output_attentions:
            probs = torch.matmul(queries * scale, keys.transpose(-1, -2)).add_(bias)  # (B, h m, b, K)
            # Softmax kernels accumulate in fp32 internally; a dtype=float32 round trip only adds two copies.
            probs = torch.softmax(probs, dim=-1, out=probs) if in_place else torch.softmax(probs, dim=-1)
            parts = probs.view(B, h, m, b, K).split([s, b, 3 * b], dim=-1)  # (B, h, m, b, s), (.., b), (.., 3b)
            if weights is None:
                # The output reads the [packed (s); global (b); local (3b)] weights returned, joined again, so a
                # gradient retained on them is the whole one (views split off beside the product would get none).
                weights = parts
                if not in_place:
                    probs = torch.cat(parts, dim=-1).view(B, h * m, b, K)
            else:
                for returned, part in zip(weights, parts):
                    returned[:, :, start:end] = part
            if weights_only:
                continue
            out = torch.matmul(F.dropout(probs, p=dropout_p) if dropout_p else probs, values)  # (B, h m, b, d)
        else:
            out = F.scaled_dot_product_attention(
                queries, keys, values, attn_mask=bias, dropout_p=dropout_p, scale=scale
            )
        if context is None:
            context = out.reshape(B, h, n, d)  # a view on CPU; CUDA kernels may return (B, b, h m, d) strides
        else:
            context[:, :, start * b : end * b] = out.reshape(B, h, m * b, d)
    if not output_attentions:
        return context, None
    p_packed, p_global, p_local = (w.to(stored) for w in weights)  # copies only where one chunk's weights differ
    return context, (p_local, p_global, p_packed)


def usw_attention_flex(
    q,
    k,
    v,
    packed_k,
    packed_v,
    geometry: BlockGeometry,
    bialibi: BiALiBi,
    dropout_p: float = 0.0,
    output_attentions: bool = False,
    chunk_blocks: Optional[int] = None,
):
    """USWAttn through PyTorch FlexAttention: a block mask for the window pattern, BiALiBi as score_mod.

    Keys are [K(C_P); K(X)]: kv index < s is a packed vector. Fast on CUDA (and compiled on CPU);
    eager FlexAttention on CPU builds the full score matrix, so it is never a silent fallback.
    FlexAttention returns no weights: when they are asked for, :func:`usw_attention_blocked`
    computes the same attention and gives them (``chunk_blocks`` is its option).
    """
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    if output_attentions:
        return usw_attention_blocked(q, k, v, packed_k, packed_v, geometry, bialibi, dropout_p, True, chunk_blocks)
    if dropout_p:
        raise ValueError("the flex attention backend has no attention dropout; set attention_probs_dropout_prob=0")
    B, h, n, d = q.shape
    b = geometry.block_size
    s = packed_k.shape[2]
    keys = torch.cat([packed_k, k], dim=2)  # (B, h, s + n, d)
    values = torch.cat([packed_v, v], dim=2)
    key_valid, position_ids = geometry.key_valid, geometry.position_ids
    alpha, beta, gamma = bialibi.alpha.to(q.dtype), bialibi.beta.to(q.dtype), bialibi.gamma.to(q.dtype)
    pack_bias = bialibi.pack_bias(b).to(q.dtype)

    def mask_mod(batch, head, q_idx, kv_idx):
        k_idx = (kv_idx - s).clamp(min=0)
        in_window = ((q_idx // b - k_idx // b).abs() <= 1) | (k_idx // b == 0)
        return (kv_idx < s) | (in_window & key_valid[batch, k_idx])

    def score_mod(score, batch, head, q_idx, kv_idx):
        k_idx = (kv_idx - s).clamp(min=0)
        q_pos, k_pos = position_ids[batch, q_idx], position_ids[batch, k_idx]
        dist = (k_pos - q_pos).to(score.dtype)
        d_x = torch.where(dist > 0, gamma[head] * dist, -beta[head] * dist)
        touches_cls = ((q_pos == 0) | (k_pos == 0)) & (q_idx != k_idx)
        d_x = torch.where(touches_cls, alpha[head], d_x)
        return score - torch.where(kv_idx < s, pack_bias[head], d_x)

    if "flex_block_mask" not in geometry.cache:  # the pattern is the same in every layer
        geometry.cache["flex_block_mask"] = create_block_mask(
            mask_mod, B, None, n, s + n, device=q.device, BLOCK_SIZE=b
        )
    attend = _compiled_flex_attention() if q.is_cuda else flex_attention
    out = attend(
        q, keys, values, score_mod=score_mod, block_mask=geometry.cache["flex_block_mask"], scale=1.0 / math.sqrt(d)
    )
    return out, None


@functools.lru_cache(maxsize=1)
def _compiled_flex_attention():
    """FlexAttention only fuses (and stays linear in memory) under torch.compile."""
    from torch.nn.attention.flex_attention import flex_attention

    return torch.compile(flex_attention, dynamic=True)


# Every implementation of USWAttn(X, C_P), by ``config.attention_backend``. Each is called as
# (q, k, v, packed_k, packed_v, geometry, bialibi, dropout_p, output_attentions, chunk_blocks) and returns
# the output (B, h, n, d) and, when output_attentions, the (local, global, packed) weights, else None.
USW_ATTENTION_BACKENDS = {"blocked": usw_attention_blocked, "flex": usw_attention_flex}


def attention_backend(name: str):
    """The USWAttn implementation registered as ``name`` in :data:`USW_ATTENTION_BACKENDS`."""
    try:
        return USW_ATTENTION_BACKENDS[name]
    except KeyError:
        raise ValueError(f"attention_backend must be one of {sorted(USW_ATTENTION_BACKENDS)}, got {name!r}") from None


def check_config(config: LittleBirdConfig) -> None:
    """Raise a ValueError naming what does not fit in ``config`` before a model is built from it.

    The config takes any values, as transformers' configs do (its ``ConfigTester`` builds them with a hidden
    size of 37 and 12 heads); only a model needs the sizes to fit together.
    """
    if config.num_attention_heads < 1 or config.hidden_size % config.num_attention_heads:
        raise ValueError(
            f"hidden_size ({config.hidden_size}) must be a multiple of num_attention_heads "
            f"({config.num_attention_heads}): every head gets hidden_size / num_attention_heads dimensions"
        )
    if config.block_size < 1 or config.pack_size < 1:
        raise ValueError(f"block_size and pack_size must be >= 1, got {config.block_size} and {config.pack_size}")
    attention_backend(config.attention_backend)


class LittleBirdEmbeddings(nn.Module):
    """Word + token type embeddings, LayerNorm, dropout. No absolute positions: BiALiBi carries them."""

    def __init__(self, config: LittleBirdConfig):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids, token_type_ids):
        x = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        return self.dropout(self.LayerNorm(x))


class AttentionProjections(nn.Module):
    """Q, K, V and output projections of one multi-head attention (pack or unpack)."""

    def __init__(self, config: LittleBirdConfig):
        super().__init__()
        H = config.hidden_size
        self.num_heads = config.num_attention_heads
        self.query = nn.Linear(H, H)
        self.key = nn.Linear(H, H)
        self.value = nn.Linear(H, H)
        self.output = nn.Linear(H, H)

    def split_heads(self, x):
        B, L, H = x.shape
        return x.view(B, L, self.num_heads, H // self.num_heads).transpose(1, 2)  # (B, h, L, d)

    def merge_heads(self, x):
        B, h, L, d = x.shape
        return self.output(x.transpose(1, 2).reshape(B, L, h * d))  # (B, L, H)

    def key_value(self, x):
        """K(x), V(x): (B, L, H) -> 2 x (B, h, L, d). Module calls, so littlebird.inference can swap the layers."""
        return self.split_heads(self.key(x)), self.split_heads(self.value(x))


def pack_attention(projections: AttentionProjections, p, x, key_valid, dropout_p=0.0, output_attentions=False):
    """C_P = Attn(P, X): the s packed queries read the whole (unpadded part of the) input. O(s n)."""
    q = projections.split_heads(projections.query(p))  # (B, h, s, d)
    k, v = projections.key_value(x)  # (B, h, n, d)
    if output_attentions:
        weights = pack_weights(q, k, key_valid)
        out = F.dropout(weights, p=dropout_p) @ v
    else:
        weights = None
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=key_valid[:, None, None, :], dropout_p=dropout_p)
    return projections.merge_heads(out), weights


def pack_weights(q, k, key_valid):
    """softmax(Q(P) K(X)^T / sqrt(d)) over the real tokens: (B, h, s, n), the pack attention's weights."""
    # in place: at 8K tokens each (B, h, s, n) copy is 25 MB more at the layer's peak
    scores = (q @ k.transpose(-1, -2)).div_(math.sqrt(q.shape[-1]))
    scores = scores.masked_fill_(~key_valid[:, None, None, :], torch.finfo(scores.dtype).min)
    if torch.is_grad_enabled() or scores.dtype != torch.float32:
        return torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
    return torch.softmax(scores, dim=-1, out=scores)


def _drop_unused_pack_layer_norm(layer, state_dict, prefix, *args):
    """Load-state-dict pre-hook of a layer without P': checkpoints from before it had none hold its pack
    LayerNorm, never trained (P' fed no later layer); drop it rather than report it unexpected."""
    for name in LittleBirdLayer.PACK_UPDATE_KEYS:
        state_dict.pop(prefix + name, None)


class LittleBirdLayer(nn.Module):
    """One LittleBird layer (figure 1): pack, unpack & sliding window, feed-forward.

    ``updates_pack=False`` makes the last layer: it still packs (its unpack attention reads C_P) but computes
    no P' = LN(C_P + P), which no later layer would read, so it holds no ``pack_layer_norm``, whose weights
    would never get a gradient (and DDP would need ``find_unused_parameters``).
    """

    # The tensors of P' = LN(C_P + P) that a layer without it leaves out of its state dict.
    PACK_UPDATE_KEYS = ("pack_layer_norm.weight", "pack_layer_norm.bias")

    def __init__(self, config: LittleBirdConfig, *, updates_pack: bool = True):
        super().__init__()
        H, eps = config.hidden_size, config.layer_norm_eps
        self.config = config
        self.pack_attention = AttentionProjections(config)
        self.pack_layer_norm = nn.LayerNorm(H, eps=eps) if updates_pack else None
        if not updates_pack:
            self.register_load_state_dict_pre_hook(_drop_unused_pack_layer_norm)
        self.attention = AttentionProjections(config)
        self.attention_layer_norm = nn.LayerNorm(H, eps=eps)
        self.bialibi = BiALiBi(config.num_attention_heads)
        self.intermediate = nn.Linear(H, config.intermediate_size)
        self.activation = ACT2FN[config.hidden_act]
        self.output = nn.Linear(config.intermediate_size, H)
        self.output_layer_norm = nn.LayerNorm(H, eps=eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, x, p, geometry: BlockGeometry, output_attentions=False):
        """(X (B, n, H), P (B, s, H)) -> (X', P' or None in the last layer, attentions or None)."""
        attn_dropout = self.config.attention_probs_dropout_prob if self.training else 0.0
        # C_P = Attn(P, X);  P' = LayerNorm(C_P + P), for the next layer
        c_p, pack_w = pack_attention(self.pack_attention, p, x, geometry.key_valid, attn_dropout, output_attentions)
        c_p = self.dropout(c_p)
        p_next = None if self.pack_layer_norm is None else self.pack_layer_norm(c_p + p)
        # C_X = USWAttn(X, C_P): the unpack attention's own K and V read both C_P and X
        att = self.attention
        q = att.split_heads(att.query(x))  # (B, h, n, d)
        k, v = att.key_value(x)
        packed_k, packed_v = att.key_value(c_p)  # (B, h, s, d)
        usw_attention = attention_backend(self.config.attention_backend)
        context, weights = usw_attention(
            q,
            k,
            v,
            packed_k,
            packed_v,
            geometry,
            self.bialibi,
            attn_dropout,
            output_attentions,
            self._query_chunk(geometry, output_attentions),
        )
        c_x = self.dropout(att.merge_heads(context))
        # A = LayerNorm(C_X + X);  X' = LayerNorm(FFN(A) + A)
        a = self.attention_layer_norm(c_x + x)
        x_next = self.feed_forward(a)
        attentions = self._attentions(weights, pack_w, geometry) if output_attentions else None
        return x_next, p_next, attentions

    def attention_weights(self, x, p, c_p, geometry: BlockGeometry) -> LittleBirdAttentions:
        """The weights ``forward(x, p, geometry, output_attentions=True)`` returns, from the layer's inputs X and P
        and the C_P its pack attention made of them, without the layer's output: for a viewer of a pass already
        run, 3 of a token's 14 H x H products in the layer (the pack and unpack keys, the queries), no feed-forward."""
        pack, att = self.pack_attention, self.attention
        pack_w = pack_weights(pack.split_heads(pack.query(p)), pack.split_heads(pack.key(x)), geometry.key_valid)
        q, k = att.split_heads(att.query(x)), att.split_heads(att.key(x))  # (B, h, n, d)
        packed_k = att.split_heads(att.key(c_p))  # (B, h, s, d)
        _, weights = usw_attention_blocked(
            q,
            k,
            None,
            packed_k,
            None,
            geometry,
            self.bialibi,
            output_attentions=True,
            chunk_blocks=self._query_chunk(geometry, True),
        )
        return self._attentions(weights, pack_w, geometry)

    def _query_chunk(self, geometry: BlockGeometry, output_attentions: bool) -> Optional[int]:
        """Query blocks per chunk of the unpack attention: all at once with gradients."""
        if torch.is_grad_enabled():
            return None
        chunk = max(1, self.config.query_chunk_tokens // geometry.block_size)
        if output_attentions and chunk < geometry.num_blocks:
            # With weights each chunk also forms its scores and bias (16 MB each for 1,024 tokens): half the chunk
            # bounds them, and is no slower on CPU.
            chunk = max(1, chunk // 2)
        return chunk

    def _attentions(self, weights, pack_w, geometry: BlockGeometry) -> LittleBirdAttentions:
        local, global_, packed = weights
        return LittleBirdAttentions(
            local,
            global_,
            packed,
            pack_w,
            geometry.query_valid,
            position_ids=geometry.position_ids,
            bias_coefficients=self.bialibi.bias_coefficients().detach(),
        )

    def feed_forward(self, a):
        """X' = LayerNorm(FFN(A) + A). Without gradients, in chunks of ``query_chunk_tokens`` tokens: the
        (n, intermediate) activations of an 8K-token window would take 50 MB, twice over while GELU runs."""

        def block(part):
            return self.output_layer_norm(self.dropout(self.output(self.activation(self.intermediate(part)))) + part)

        n = a.shape[1]
        chunk = n if torch.is_grad_enabled() else max(1, self.config.query_chunk_tokens)
        if chunk >= n:
            return block(a)
        out = torch.empty_like(a)
        for start in range(0, n, chunk):
            out[:, start : start + chunk] = block(a[:, start : start + chunk])
        return out


class LittleBirdCheckpointedLayer(GradientCheckpointingLayer, LittleBirdLayer):
    """A LittleBirdLayer (same weights and forward) that ``model.gradient_checkpointing_enable()`` recomputes
    in the backward pass instead of keeping its activations."""


def expose_tokens(x, n):
    """x (B, nb * b, H) -> (its first n tokens (B, n, H), x rebuilt from them). What follows reads the returned
    tokens themselves, not x, so a gradient retained on them (``retain_grad``) is the whole gradient; a slice
    of x that nothing reads would get none. Without padding both are x: no copy."""
    if n == x.shape[1]:
        return x, x
    tokens = x[:, :n]
    return tokens, torch.cat([tokens, x[:, n:]], dim=1)  # (B, nb * b, H)


class LittleBirdEncoder(nn.Module):
    """The stack of layers and the initial packed sequence P (s learned vectors)."""

    def __init__(self, config: LittleBirdConfig):
        super().__init__()
        self.pack_embeddings = nn.Parameter(torch.empty(config.pack_size, config.hidden_size))
        last = config.num_hidden_layers - 1
        self.layer = nn.ModuleList(
            LittleBirdCheckpointedLayer(config, updates_pack=index < last) for index in range(config.num_hidden_layers)
        )

    def unused_checkpoint_keys(self) -> list[str]:
        """Patterns of the tensors old checkpoints hold and this encoder has no use for: the last layer's pack
        LayerNorm. For ``from_pretrained``, which loads tensors without the layer's load_state_dict hook."""
        return [
            rf"encoder\.layer\.{index}\.{re.escape(name)}$"
            for index, layer in enumerate(self.layer)
            if layer.pack_layer_norm is None
            for name in LittleBirdLayer.PACK_UPDATE_KEYS
        ]

    def initial_pack(self, x):
        """P of the first layer: the s learned vectors, for each of x's B rows -> (B, s, H)."""
        return self.pack_embeddings.unsqueeze(0).expand(x.shape[0], -1, -1).to(x.dtype)

    def forward(self, x, geometry, output_attentions=False, output_hidden_states=False, length=None):
        """x (B, nb * b, H) -> (x', hidden states, attentions). Hidden states cover the first ``length``
        tokens (the input before padding to blocks) and are the tensors the next layer reads, so gradients
        reach them (``retain_grad``)."""
        n = x.shape[1] if length is None else length
        p = self.initial_pack(x)  # (B, s, H)
        hidden_states = () if output_hidden_states else None
        attentions = () if output_attentions else None
        for layer in self.layer:
            if output_hidden_states:
                tokens, x = expose_tokens(x, n)
                hidden_states += (tokens,)
            x, p, layer_attentions = layer(x, p, geometry, output_attentions)
            # A forward hook may take a layer's weights and return None in their place, so that a caller reducing
            # each layer as it is computed (the app's explorer) never holds more than one layer's.
            if output_attentions and layer_attentions is not None:
                attentions += (layer_attentions,)
        if output_hidden_states:
            # No layer follows: the model returns this slice as last_hidden_state and the QA head reads it.
            hidden_states += (x[:, :n],)
        return x, hidden_states, attentions


@dataclass
class LittleBirdModelOutput(BaseModelOutput):
    """BaseModelOutput whose ``attentions`` hold one :class:`LittleBirdAttentions` per layer (compact, never
    n x n)."""


class LittleBirdPreTrainedModel(PreTrainedModel):
    """What LittleBirdModel and LittleBirdForQuestionAnswering share: the config class and weight init.

    Only modelling lives here. A checkpoint whose ``config.word_embeddings_source`` is set may leave
    the word embeddings out; the classes that ``littlebird`` exports (and registers with the Auto
    classes) rebuild them when loading, see :mod:`littlebird.checkpoint`.
    """

    config_class = LittleBirdConfig
    base_model_prefix = "littlebird"
    supports_gradient_checkpointing = True
    _no_split_modules = ["LittleBirdLayer", "LittleBirdCheckpointedLayer"]
    _supports_sdpa = True
    _supports_flex_attn = True
    # attn_implementation -> config.attention_backend. BiALiBi adds a bias to every score, which flash
    # attention kernels cannot take; "eager" and "sdpa" are the blocked backend (SDPA where no weights are asked).
    ATTN_IMPLEMENTATIONS = {"eager": "blocked", "sdpa": "blocked", "flex_attention": "flex"}

    def get_correct_attn_implementation(self, requested_attention: Optional[str], is_init_check: bool = False) -> str:
        """Map transformers' ``attn_implementation`` onto ``config.attention_backend``.

        None keeps the config's backend; "eager" and "sdpa" choose "blocked", "flex_attention" "flex". Any other
        implementation transformers knows (the flash attention kernels) falls back to "sdpa" with a warning naming the
        ones that exist; an unknown name raises, as in transformers.
        """
        if requested_attention is None:
            return "flex_attention" if self.config.attention_backend == "flex" else "sdpa"
        if requested_attention not in ["eager", *ALL_ATTENTION_FUNCTIONS.valid_keys()]:
            return super().get_correct_attn_implementation(requested_attention, is_init_check)  # raises, listing them
        if requested_attention not in self.ATTN_IMPLEMENTATIONS:
            logger.warning_once(
                f"LittleBird has no attn_implementation={requested_attention!r} (BiALiBi's bias needs a kernel that "
                f"takes one); it has {sorted(self.ATTN_IMPLEMENTATIONS)}. Falling back to 'sdpa'."
            )
            requested_attention = "sdpa"
        self.config.attention_backend = self.ATTN_IMPLEMENTATIONS[requested_attention]
        return requested_attention

    @torch.no_grad()
    def _init_weights(self, module):
        std = self.config.initializer_range
        if isinstance(module, nn.Linear):
            module.weight.normal_(mean=0.0, std=std)
            if module.bias is not None:
                module.bias.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.normal_(mean=0.0, std=std)
            if module.padding_idx is not None:
                module.weight[module.padding_idx].zero_()
        elif isinstance(module, nn.LayerNorm):
            module.weight.fill_(1.0)
            module.bias.zero_()
        elif isinstance(module, BiALiBi):
            module.reset_parameters()
        elif isinstance(module, LittleBirdEncoder):
            module.pack_embeddings.normal_(mean=0.0, std=std)

    def bialibi_slopes(self) -> dict[str, torch.Tensor]:
        """BiALiBi's learnt alpha, beta and gamma (eq. 3.1) of every layer: "alpha" -> (layers, heads), detached."""
        layers = self.base_model.encoder.layer
        return {
            name: torch.stack([getattr(layer.bialibi, name).detach() for layer in layers])
            for name in ("alpha", "beta", "gamma")
        }


def pad_to_blocks(inputs, attention_mask, token_type_ids, position_ids, block_size, pad_token_id):
    """Pad inputs on the right to a multiple of the block size; padding is masked inside.

    ``inputs`` are token ids (B, n), padded with ``pad_token_id``, or embeddings (B, n, H), padded with zeros.
    """
    n = inputs.shape[1]
    extra = (-n) % block_size
    if extra == 0:
        return inputs, attention_mask, token_type_ids, position_ids
    last = position_ids[:, -1:]
    tail = last + torch.arange(1, extra + 1, device=position_ids.device)
    return (
        F.pad(inputs, (0, extra), value=pad_token_id) if inputs.dim() == 2 else F.pad(inputs, (0, 0, 0, extra)),
        F.pad(attention_mask, (0, extra), value=0),
        F.pad(token_type_ids, (0, extra), value=0),
        torch.cat([position_ids, tail], dim=1),
    )


class LittleBirdModel(LittleBirdPreTrainedModel):
    """The bare LittleBird encoder: token ids of any length -> hidden states, in linear time and memory."""

    def __init__(self, config: LittleBirdConfig):
        check_config(config)  # sizes that do not fit and an unknown backend fail here, not at the first forward
        super().__init__(config)
        self.embeddings = LittleBirdEmbeddings(config)
        self.encoder = LittleBirdEncoder(config)
        # Old checkpoints' last pack LayerNorm; a QA model's post_init gathers these from this child.
        self._keys_to_ignore_on_load_unexpected = self.encoder.unused_checkpoint_keys()
        self.post_init()

    def get_input_embeddings(self):
        return self.embeddings.word_embeddings

    def set_input_embeddings(self, value):
        self.embeddings.word_embeddings = value

    def embed(self, inputs, token_type_ids):
        """The embedding layer's output (B, n, H) from token ids (B, n) or from word embeddings (B, n, H)."""
        if inputs.dim() == 2:
            return self.embeddings(inputs, token_type_ids)
        embeddings = self.embeddings
        return embeddings.dropout(embeddings.LayerNorm(inputs + embeddings.token_type_embeddings(token_type_ids)))

    def forward(
        self,
        input_ids=None,
        attention_mask=None,
        token_type_ids=None,
        position_ids=None,
        inputs_embeds=None,
        output_attentions=None,
        output_hidden_states=None,
        return_dict=None,
        **kwargs,
    ):
        """Encode ``input_ids`` (B, n), or ``inputs_embeds`` (B, n, H) in place of the word embeddings.

        ``attention_mask`` (B, n): 1 for tokens, 0 for padding. ``position_ids`` (B, n): the
        positions BiALiBi measures distances with (default 0..n-1; Padding Insertion passes
        shifted ones; position 0 is the global [CLS]). Returns hidden states (B, n, H).
        """
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("give exactly one of input_ids (B, n) and inputs_embeds (B, n, H)")
        inputs = input_ids if input_ids is not None else inputs_embeds
        output_attentions = self.config.output_attentions if output_attentions is None else output_attentions
        output_hidden_states = (
            self.config.output_hidden_states if output_hidden_states is None else output_hidden_states
        )
        return_dict = self.config.return_dict if return_dict is None else return_dict
        x, geometry, n = self.prepare(inputs, attention_mask, token_type_ids, position_ids)
        x, hidden_states, attentions = self.encoder(x, geometry, output_attentions, output_hidden_states, n)
        x = x[:, :n] if hidden_states is None else hidden_states[-1]  # (B, n, H)
        if attentions is not None:
            attentions = tuple(replace(a, length=n) for a in attentions)
        if not return_dict:
            return tuple(t for t in (x, hidden_states, attentions) if t is not None)
        return LittleBirdModelOutput(last_hidden_state=x, hidden_states=hidden_states, attentions=attentions)

    def prepare(self, inputs, attention_mask=None, token_type_ids=None, position_ids=None):
        """What the first layer reads: (embeddings (B, nb * b, H) padded to whole blocks, their BlockGeometry,
        the input length n before padding), from token ids (B, n) or word embeddings (B, n, H)."""
        B, n = inputs.shape[:2]
        if n == 0:
            raise ValueError("the input must hold at least one token")
        device = inputs.device
        if attention_mask is None:
            attention_mask = torch.ones(B, n, dtype=torch.long, device=device)
        if token_type_ids is None:
            token_type_ids = torch.zeros(B, n, dtype=torch.long, device=device)
        if position_ids is None:
            position_ids = torch.arange(n, device=device).unsqueeze(0).expand(B, n)
        b = self.config.block_size
        inputs, mask, types, positions = pad_to_blocks(
            inputs, attention_mask, token_type_ids, position_ids, b, self.config.pad_token_id
        )
        x = self.embed(inputs, types)  # (B, nb * b, H)
        return x, build_block_geometry(positions, mask.bool(), b, x.dtype), n


@dataclass
class LittleBirdQuestionAnsweringOutput(QuestionAnsweringModelOutput):
    """QuestionAnsweringModelOutput plus what the conditional end and the no-answer classifier add.

    - ``end_logits`` (B, n): conditioned on the gold start in training, on the best start otherwise.
    - ``answerable_logits`` (B,): logit that the input holds an answer ([CLS] classifier).
    - ``top_start_indices``, ``top_start_logits`` (B, k): the k best starts.
    - ``top_end_logits`` (B, k, L): end logits of end = start + offset, offset in [0, L); the float32 minimum
      where impossible (past the input or on padding): finite, as transformers' outputs are.
    """

    answerable_logits: Optional[torch.Tensor] = None
    top_start_indices: Optional[torch.Tensor] = None
    top_start_logits: Optional[torch.Tensor] = None
    top_end_logits: Optional[torch.Tensor] = None


class LittleBirdQAHead(nn.Module):
    """Appendix A.2: start = Linear(h_i); end = Linear(GELU(Linear([h_start; h_j]))); answerable from [CLS]."""

    def __init__(self, config: LittleBirdConfig):
        super().__init__()
        H = config.hidden_size
        self.start = nn.Linear(H, 1)
        # Linear([h_start; h_j]) = W_s h_start + W_e h_j + b, kept as two layers so each is computed once
        self.end_dense_start = nn.Linear(H, H)
        self.end_dense_token = nn.Linear(H, H, bias=False)
        self.end_activation = nn.GELU()
        self.end = nn.Linear(H, 1)
        self.answerable_dense = nn.Linear(H, H)
        self.answerable_activation = nn.GELU()
        self.answerable = nn.Linear(H, 1)

    def start_logits(self, hidden):
        return self.start(hidden).squeeze(-1)  # (B, n)

    def answerable_logits(self, hidden):
        return self.answerable(self.answerable_activation(self.answerable_dense(hidden[:, 0]))).squeeze(-1)  # (B,)

    def end_logits(self, hidden, starts, ends=None):
        """End logits for each start in ``starts`` (B, k) over ``ends`` (B, k, L) or every position -> (B, k, L)."""
        H = hidden.shape[-1]
        start_hidden = torch.gather(hidden, 1, starts.unsqueeze(-1).expand(-1, -1, H))  # (B, k, H)
        start_part = self.end_dense_start(start_hidden)  # (B, k, H)
        if ends is None:
            end_part = self.end_dense_token(hidden).unsqueeze(1)  # (B, 1, n, H)
        else:
            B, k, L = ends.shape
            end_hidden = torch.gather(hidden, 1, ends.reshape(B, k * L, 1).expand(-1, -1, H))
            end_part = self.end_dense_token(end_hidden).view(B, k, L, H)
        return self.end(self.end_activation(start_part.unsqueeze(2) + end_part)).squeeze(-1)  # (B, k, L)


class LittleBirdForQuestionAnswering(LittleBirdPreTrainedModel):
    """LittleBird with the extractive QA head of appendix A.2.

    Input as in the paper: [CLS] [QUESTION] question [SEP] document. In training, pass
    ``start_positions``/``end_positions`` (index 0, the [CLS], for "no answer here"); the end is
    teacher-forced on the gold start. The answerable head learns ``start_positions > 0`` unless
    ``answerable`` (B,) gives other targets; it is no "label" argument, so ``Trainer`` needs only the
    two positions to report ``eval_loss``.
    """

    max_input_length = None  # BiALiBi has no position table: any length (what littlebird.reader asks)

    def __init__(self, config: LittleBirdConfig):
        super().__init__(config)
        self.littlebird = LittleBirdModel(config)
        self.qa_head = LittleBirdQAHead(config)
        self.post_init()

    def decode(
        self, hidden, valid, *, top_k_starts=None, max_answer_length=None
    ) -> "LittleBirdQuestionAnsweringOutput":
        """The QA head's decoding outputs (the k best starts, their ends, answerable) from the last hidden
        states (B, n, H) and the mask of real tokens (B, n)."""
        B, n, _ = hidden.shape
        start_logits = self.qa_head.start_logits(hidden)
        start_logits = start_logits.masked_fill(~valid, torch.finfo(start_logits.dtype).min)
        k = min(top_k_starts or self.config.top_k_starts, n)
        L = max_answer_length or self.config.max_answer_length
        top_start_logits, top_starts = start_logits.topk(k, dim=-1)  # (B, k)
        ends = top_starts.unsqueeze(-1) + torch.arange(L, device=hidden.device)  # (B, k, L)
        end_ok = (ends < n) & torch.gather(valid, 1, ends.clamp(max=n - 1).view(B, -1)).view(B, k, L)
        top_end_logits = self.qa_head.end_logits(hidden, top_starts, ends.clamp(max=n - 1))
        top_end_logits = top_end_logits.float().masked_fill(~end_ok, torch.finfo(torch.float32).min)
        end_logits = self.qa_head.end_logits(hidden, top_starts[:, :1]).squeeze(1)
        positions = torch.arange(n, device=hidden.device)
        end_logits = end_logits.masked_fill(~valid | (positions < top_starts[:, :1]), torch.finfo(end_logits.dtype).min)
        return LittleBirdQuestionAnsweringOutput(
            start_logits=start_logits,
            end_logits=end_logits,
            answerable_logits=self.qa_head.answerable_logits(hidden),
            top_start_indices=top_starts,
            top_start_logits=top_start_logits,
            top_end_logits=top_end_logits,
        )

    def forward(
        self,
        input_ids=None,
        attention_mask=None,
        token_type_ids=None,
        position_ids=None,
        start_positions=None,
        end_positions=None,
        answerable=None,
        top_k_starts=None,
        max_answer_length=None,
        inputs_embeds=None,
        output_attentions=None,
        output_hidden_states=None,
        return_dict=None,
        **kwargs,
    ):
        return_dict = self.config.return_dict if return_dict is None else return_dict
        # only when given: the teacher (training/teacher_model.py) shares this forward with a BERT encoder
        embeds = {} if inputs_embeds is None else {"inputs_embeds": inputs_embeds}
        encoded = self.littlebird(
            input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            position_ids=position_ids,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=True,
            **embeds,
        )
        hidden = encoded.last_hidden_state  # (B, n, H)
        B, n, _ = hidden.shape
        valid = (
            torch.ones(B, n, dtype=torch.bool, device=hidden.device)
            if attention_mask is None
            else attention_mask.bool()
        )
        if start_positions is None or end_positions is None:
            output = self.decode(hidden, valid, top_k_starts=top_k_starts, max_answer_length=max_answer_length)
            output.hidden_states, output.attentions = encoded.hidden_states, encoded.attentions
            return output if return_dict else output.to_tuple()
        start_logits = self.qa_head.start_logits(hidden)
        # the logits' own dtype: under autocast they are bf16 while ``hidden`` (after LayerNorm) is fp32
        start_logits = start_logits.masked_fill(~valid, torch.finfo(start_logits.dtype).min)
        answerable_logits = self.qa_head.answerable_logits(hidden)
        positions = torch.arange(n, device=hidden.device)
        starts = start_positions.clamp(0, n - 1).view(B, 1)
        end_logits = self.qa_head.end_logits(hidden, starts).squeeze(1)  # (B, n)
        end_logits = end_logits.masked_fill(~valid | (positions < starts), torch.finfo(end_logits.dtype).min)
        if answerable is None:
            answerable = (start_positions > 0).to(hidden.dtype)
        loss = (
            F.cross_entropy(start_logits.float(), start_positions.clamp(0, n - 1))
            + F.cross_entropy(end_logits.float(), end_positions.clamp(0, n - 1))
        ) / 2
        loss = loss + F.binary_cross_entropy_with_logits(answerable_logits.float(), answerable.float())
        output = LittleBirdQuestionAnsweringOutput(
            loss=loss,
            start_logits=start_logits,
            end_logits=end_logits,
            hidden_states=encoded.hidden_states,
            attentions=encoded.attentions,
            answerable_logits=answerable_logits,
        )
        return output if return_dict else output.to_tuple()
