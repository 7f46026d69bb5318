"""A token's keys, scores and weights, and every layer's attention weights, recomputed from a window's capture.

:func:`token_keys` projects one query and its <= s + 4b keys through the layer's own modules and computes the
bias with the model's own :func:`pair_terms` and ``BiALiBi``: milliseconds, for any layer, head and token, from
the layer inputs an ``explorer.capture.TokenCapture`` holds. :func:`layer_weights` rebuilds every layer's
weights from the same inputs, for the explorer's summary.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

from littlebird.app.explorer.capture import TokenCapture
from littlebird.app.explorer.window import attention_layers
from littlebird.modeling_littlebird import attention_weights_dtype, build_block_geometry, pair_terms
from littlebird.reader import model_device


def layer_weights(capture: TokenCapture, model: Any) -> Iterator[Any]:
    """Each layer's attention weights (``LittleBirdAttentions``, local, global and packed in float16) rebuilt from
    the layer inputs ``capture`` holds with ``model``'s own layers, one layer at a time: what the window's pass
    made, without its outputs or feed-forwards (``LittleBirdLayer.attention_weights``)."""
    layers = attention_layers(model)
    device, dtype = model_device(model), capture.compute_dtype
    with torch.inference_mode():
        geometry = build_block_geometry(
            capture.position_ids[None].to(device), capture.key_valid[None].to(device), capture.block_size, dtype
        )
    for layer, x, p, c_p in zip(layers, capture.hidden, capture.pack_inputs, capture.packed):
        with torch.inference_mode(), attention_weights_dtype(torch.float16):
            weights = layer.attention_weights(
                x[None].to(device, dtype), p[None].to(device, dtype), c_p[None].to(device, dtype), geometry
            )
        yield replace(weights, length=capture.n_tokens)


@dataclass(frozen=True)
class TokenKeys:
    """One token's keys in one layer and head, in the model's order: the pack slots, then the tokens of
    block 0 and of its sliding window, by position. Each score is ``content + bias``; ``weight`` is their
    softmax over these keys, the attention the token paid them."""

    layer: int
    head: int
    token: int
    text: str  # the token's text
    n_tokens: int  # tokens of the window
    block_size: int
    slots: int  # the first ``slots`` keys are the pack slots C_P
    positions: np.ndarray  # (K,) int: slot number for the pack slots, then the window token of each key
    labels: tuple[str, ...]  # (K,) each key's text
    content: np.ndarray  # (K,) float32: q·k/√d
    bias: np.ndarray  # (K,) float32: -D_P for a slot, -D (BiALiBi, eq. 3.1) for a token
    weight: np.ndarray  # (K,) float32

    @property
    def score(self) -> np.ndarray:
        """The logit each key got: content + bias."""
        return self.content + self.bias

    def groups(self) -> list[tuple[str, str, int, int]]:
        """(kind, name, first, last + 1) of the keys' runs, kind "pack", "block0" or "window": the pack
        slots, block 0 where it is no neighbour of the token's block, and the blocks of its sliding window."""
        q = self.token // self.block_size
        last = (self.n_tokens - 1) // self.block_size
        tokens = self.positions[self.slots :]
        window = self.slots + (int(np.sum(tokens < self.block_size)) if q >= 2 else 0)
        runs = [
            ("pack", "pack slots (C_P)", 0, self.slots),
            ("block0", "block 0: [CLS], question", self.slots, window),
            ("window", f"blocks {max(q - 1, 0)}–{min(q + 1, last)}: its window", window, len(self.positions)),
        ]
        return [run for run in runs if run[3] > run[2]]


def _key_tokens(capture: TokenCapture, token: int) -> torch.Tensor:
    """The window tokens that ``token`` may read, by position: block 0, then blocks q-1, q, q+1, no padding."""
    b = capture.block_size
    n_padded = capture.position_ids.numel()
    q = token // b
    window = torch.arange(max(q - 1, 0) * b, min((q + 2) * b, n_padded))
    keys = torch.cat([torch.arange(b), window]).unique()  # sorted; block 0 once where it is in the window
    return keys[capture.key_valid[keys]]


def token_keys(capture: TokenCapture, model: Any, *, layer: int, head: int, token: int) -> TokenKeys:
    """Token ``token``'s keys in ``layer`` and ``head``, each score split into content and bias.

    The scores are computed with ``model``'s own query and key projections and BiALiBi slopes, from the
    layer's input and C_P in ``capture`` (which ``model`` left). Out-of-range numbers are clamped.
    """
    layer = min(max(int(layer), 0), capture.num_layers - 1)
    module = attention_layers(model)[layer]
    att, bialibi = module.attention, module.bialibi
    head = min(max(int(head), 0), att.num_heads - 1)
    token = min(max(int(token), 0), capture.n_tokens - 1)
    keys = _key_tokens(capture, token)
    weight = att.query.weight
    x = capture.hidden[layer]
    with torch.inference_mode():
        rows = x[torch.cat([torch.tensor([token]), keys])].to(weight.device, capture.compute_dtype).unsqueeze(0)
        c_p = capture.packed[layer].to(weight.device, capture.compute_dtype).unsqueeze(0)  # (1, s, H)
        q = att.split_heads(att.query(rows[:, :1]))[0, head]  # (1, d)
        k = att.split_heads(att.key(rows[:, 1:]))[0, head]  # (K_x, d)
        packed_k = att.split_heads(att.key(c_p))[0, head]  # (s, d)
        q = q * (1.0 / math.sqrt(q.shape[-1]))  # as usw_attention_blocked scales it
        content = torch.cat([q @ packed_k.T, q @ k.T], dim=-1)[0].float()  # (s + K_x,)
        positions = capture.position_ids
        one = lambda t: t.view(1, 1, -1)  # noqa: E731  (B = 1, one block, its queries or keys)
        left, right, cls = pair_terms(
            one(positions[token : token + 1]),
            one(torch.tensor([token])),
            one(positions[keys]),
            one(keys),
            torch.float32,
        )
        terms = (t.to(bialibi.alpha.device) for t in (left, right, cls))
        distance = bialibi.distance_bias(*terms)[0, head, 0, 0].float()  # D (K_x,)
        pack = bialibi.pack_bias(capture.block_size)[head].float().expand(packed_k.shape[0])  # D_P (s,)
        bias = -torch.cat([pack, distance])
        probability = torch.softmax(content + bias.to(content.device), dim=-1)
    slots = packed_k.shape[0]
    return TokenKeys(
        layer=layer,
        head=head,
        token=token,
        text=capture.tokens[token],
        n_tokens=capture.n_tokens,
        block_size=capture.block_size,
        slots=slots,
        positions=np.concatenate([np.arange(slots), keys.numpy()]),
        labels=tuple(f"slot {i}" for i in range(slots)) + tuple(capture.tokens[j] for j in keys.tolist()),
        content=content.cpu().numpy(),
        bias=bias.cpu().numpy(),
        weight=probability.float().cpu().numpy(),
    )
