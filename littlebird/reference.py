"""A plain dense reference of LittleBird's attention, for tests only.

It builds the full n x n score matrix with the paper's case-by-case distance matrix D and
the window pattern written as a mask, so the blocked and flex paths can be checked against
the definition rather than against themselves. :func:`register_dense_reference` adds it to the
attention backends as ``"dense_reference"``; tests call it where they need it.
"""

import math

import torch

from .modeling_littlebird import USW_ATTENTION_BACKENDS, BiALiBi, BlockGeometry

DENSE_REFERENCE = "dense_reference"


def bialibi_matrix(position_ids: torch.Tensor, bialibi: BiALiBi) -> torch.Tensor:
    """D (B, h, n, n) exactly as section 3.1 states it, from position ids (B, n)."""
    B, n = position_ids.shape
    h = bialibi.alpha.numel()
    i = position_ids[:, :, None].expand(B, n, n)  # query positions
    j = position_ids[:, None, :].expand(B, n, n)  # key positions
    diagonal = torch.eye(n, dtype=torch.bool, device=position_ids.device).expand(B, n, n)
    D = torch.empty(B, h, n, n, dtype=bialibi.alpha.dtype, device=position_ids.device)
    for head in range(h):
        a, b_, g = bialibi.alpha[head], bialibi.beta[head], bialibi.gamma[head]
        left = b_ * (i - j).to(D.dtype)
        right = g * (j - i).to(D.dtype)
        d = torch.where(i > j, left, right)
        d = torch.where((i == 0) | (j == 0), a.expand_as(d), d)
        D[:, head] = torch.where(diagonal, torch.zeros_like(d), d)
    return D


def window_allowed(n: int, block_size: int, device=None) -> torch.Tensor:
    """(n, n) bool: query i may see key j (same or neighbouring block, or the first block)."""
    block = torch.arange(n, device=device) // block_size
    return ((block[:, None] - block[None, :]).abs() <= 1) | (block[None, :] == 0)


def dense_usw_attention(q, k, v, packed_k, packed_v, position_ids, key_valid, bialibi: BiALiBi, block_size: int):
    """USWAttn with full matrices: returns the output (B, h, n, d) and probabilities (B, h, n, s + n)."""
    B, h, n, d = q.shape
    scale = 1.0 / math.sqrt(d)
    allowed = window_allowed(n, block_size, q.device)[None, None] & key_valid[:, None, None, :]
    scores = q @ k.transpose(-1, -2) * scale - bialibi_matrix(position_ids, bialibi).to(q.dtype)
    scores = scores.masked_fill(~allowed, float("-inf"))
    d_p = ((bialibi.beta + bialibi.gamma) / 2 * block_size).to(q.dtype).view(1, h, 1, 1)
    scores_packed = q @ packed_k.transpose(-1, -2) * scale - d_p  # (B, h, n, s)
    probs = torch.softmax(torch.cat([scores_packed, scores], dim=-1).float(), dim=-1).to(q.dtype)
    s = packed_k.shape[2]
    out = probs[..., :s] @ packed_v + probs[..., s:] @ v
    return out, probs


def dense_reference_backend(
    q,
    k,
    v,
    packed_k,
    packed_v,
    geometry: BlockGeometry,
    bialibi: BiALiBi,
    dropout_p: float = 0.0,
    output_attentions: bool = False,
    chunk_blocks=None,
):
    """:func:`dense_usw_attention` behind the attention backends' interface (no dropout, no compact weights)."""
    if dropout_p or output_attentions:
        raise ValueError("the dense reference has no dropout and gives no compact attention weights")
    out, _ = dense_usw_attention(
        q, k, v, packed_k, packed_v, geometry.position_ids, geometry.key_valid, bialibi, geometry.block_size
    )
    return out, None


def register_dense_reference() -> str:
    """Make ``attention_backend="dense_reference"`` run :func:`dense_reference_backend`; returns the name."""
    USW_ATTENTION_BACKENDS[DENSE_REFERENCE] = dense_reference_backend
    return DENSE_REFERENCE


def window_visibility(n: int, block_size: int, key_valid: torch.Tensor) -> torch.Tensor:
    """(B, 1, n, n) bool: the token keys a LittleBird query sees (own and neighbouring blocks, block 0)."""
    blocks = torch.arange(n, device=key_valid.device) // block_size
    local = (blocks.view(-1, 1) - blocks.view(1, -1)).abs() <= 1
    seen = local | (blocks == 0).view(1, -1)
    return seen.view(1, 1, n, n) & key_valid.view(-1, 1, 1, n)


def dense_attention_distillation_loss(student_attentions, teacher_attentions, layer_map, attention_mask, block_size):
    """The attention-distillation KL on n x n maps, as :mod:`littlebird.training.objectives` first computed it.

    The student's weights are expanded by ``to_dense``, both sides masked to the window and renormalised:
    the reference the compact loss is tested against, and the benchmark's "dense attention KL" row.
    """
    B, n = attention_mask.shape
    visible = window_visibility(n, block_size, attention_mask.bool())
    rows = attention_mask.view(B, 1, n).float()
    total, eps = 0.0, 1e-8
    for student, index in zip(student_attentions, layer_map):
        s = student.to_dense(n).float() * visible
        t = teacher_attentions[index].float() * visible
        s = s / s.sum(-1, keepdim=True).clamp(min=eps)
        t = t / t.sum(-1, keepdim=True).clamp(min=eps)
        kl = (t * (torch.log(t + eps) - torch.log(s + eps))).sum(-1)
        total = total + (kl * rows).sum() / (rows.sum() * kl.shape[1])
    return total / len(layer_map)
