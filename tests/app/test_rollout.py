"""Attention rollout through both routes: shapes, distributions, the identity, a dense block-space reference,
and a pack route that carries nothing."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from littlebird import LittleBirdAttentions
from littlebird.app.explorer import reductions, rollout
from tests.app.test_figures import B, S, fake_layer, offsets_for

N, QUESTION, ANSWER = 70, 5, [33, 34, 35]  # 9 blocks of 8, the last ragged; the answer in block 4


def summarize(layers, answer_positions=ANSWER) -> reductions.AttentionSummary:
    text = "".join(f"t{i:02d} " for i in range(N))
    return reductions.summarize_attention(
        layers,
        text=text,
        token_offsets=offsets_for(N, QUESTION),
        answer_positions=answer_positions,
        question_tokens=QUESTION,
        block_size=B,
    )


def identity_layer(n: int, heads: int) -> LittleBirdAttentions:
    """An attention that puts every query's whole weight on itself: the layer only passes its residual on."""
    nb = math.ceil(n / B)
    local = torch.zeros(1, heads, nb, B, 3 * B)
    local[..., torch.arange(B), B + torch.arange(B)] = 1.0  # column b + r of row r is the query itself
    query_valid = (torch.arange(nb * B) < n).view(1, nb, B)
    return LittleBirdAttentions(
        local=local,
        global_=torch.zeros(1, heads, nb, B, B),
        packed=torch.zeros(1, heads, nb, B, S),
        pack=torch.rand(1, heads, S, nb * B).softmax(-1),
        query_valid=query_valid,
    )


def without_pack_route(layer: LittleBirdAttentions) -> LittleBirdAttentions:
    """``layer`` with nothing given to the pack slots: the window and block 0 take the whole weight."""
    tokens = layer.local.sum(-1, keepdim=True) + layer.global_.sum(-1, keepdim=True)
    scale = torch.where(tokens > 0, 1 / tokens, torch.zeros(()))
    return LittleBirdAttentions(
        local=layer.local * scale,
        global_=layer.global_ * scale,
        packed=torch.zeros_like(layer.packed),
        pack=layer.pack,
        query_valid=layer.query_valid,
    )


def block_space_reference(layers, chosen, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The rollout from the dense (n x n) matrices: each layer's A = window + block 0 + packed x pack, head-averaged,
    A_eff = 0.5 A + 0.5 I; the chosen tokens' rows through the top layer, then block rows through
    U A_eff S (U averages a block's real query tokens, S sums the key tokens of a block)."""
    b, s, nb = layers[0].block_size, layers[0].packed.shape[-1], layers[0].local.shape[2]
    size = nb * b
    sums = np.zeros((size, nb))
    sums[np.arange(size), np.arange(size) // b] = 1.0
    means = np.zeros((nb, size))
    counts = np.bincount(np.arange(n) // b, minlength=nb)
    means[np.arange(n) // b, np.arange(n)] = 1.0 / counts[np.arange(n) // b]
    window, through_pack = [], []
    for layer in layers:
        window.append(layer.to_dense(size)[0].double().mean(0).numpy())
        h = layer.packed.shape[1]
        through_pack.append((layer.packed[0].reshape(h, size, s).double() @ layer.pack[0].double()).mean(0).numpy())
    rows = np.zeros((len(layers), len(chosen), nb))
    shares = np.zeros((len(layers), len(chosen)))
    token = np.eye(size)[chosen]  # (k, size)
    top = len(layers) - 1
    shares[top] = (token @ through_pack[top]).sum(-1) / (token @ (window[top] + through_pack[top])).sum(-1)
    row = (0.5 * token + 0.5 * token @ (window[top] + through_pack[top])) @ sums
    rows[top] = row
    for layer in range(top - 1, -1, -1):
        moved_window, moved_pack = row @ means @ window[layer] @ sums, row @ means @ through_pack[layer] @ sums
        shares[layer] = moved_pack.sum(-1) / (moved_window + moved_pack).sum(-1)
        row = 0.5 * row + 0.5 * (moved_window + moved_pack)
        rows[layer] = row
    return rows, shares


@pytest.fixture(scope="module")
def layers():
    return [fake_layer(N, heads=3, seed=s) for s in range(3)]


def test_the_rollout_follows_cls_and_the_answers_ends_down_every_layer(layers):
    summary = summarize(layers)
    assert summary.rollout.shape == (3, 3, 9) and summary.rollout.dtype == np.float32
    assert summary.rollout_pack_share.shape == (3, 3)
    assert summary.rollout_tokens == ("[CLS]", "answer start “t33”", "answer end “t35”")
    np.testing.assert_allclose(summary.rollout.sum(-1), 1.0, rtol=1e-5)  # every row a distribution over blocks
    assert (summary.rollout >= 0).all()
    assert ((summary.rollout_pack_share >= 0) & (summary.rollout_pack_share <= 1)).all()
    assert (summary.rollout_pack_share > 0).all()  # the fake layers give the pack slots some weight everywhere
    assert summarize(layers, answer_positions=[40]).rollout.shape == (3, 2, 9)  # one answer token: start only
    assert summarize(layers, answer_positions=[]).rollout_tokens == ("[CLS]",)


def test_the_rollout_matches_a_dense_block_space_reference(layers):
    summary = summarize(layers)
    rows, shares = block_space_reference(layers, rollout.rollout_positions(ANSWER), N)
    np.testing.assert_allclose(summary.rollout, rows, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(summary.rollout_pack_share, shares, rtol=1e-4, atol=1e-6)


def test_an_identity_attention_model_rolls_out_to_the_identity():
    layers = [identity_layer(N, heads=2) for _ in range(4)]
    summary = summarize(layers)
    own = np.zeros((3, 9))
    own[[0, 1, 2], [0, 33 // B, 35 // B]] = 1.0  # [CLS] in block 0, the answer's ends in block 4
    for layer in range(4):
        np.testing.assert_allclose(summary.rollout[layer], own, atol=1e-7)
    np.testing.assert_array_equal(summary.rollout_pack_share, 0.0)
    mixings = [
        reductions.summarize_layer(layer, answer_positions=ANSWER, question_tokens=QUESTION, block_size=B).mixing
        for layer in layers
    ]
    composed = np.linalg.multi_dot([rollout.effective_mixing(m) for m in reversed(mixings)])
    np.testing.assert_allclose(composed, np.eye(9), atol=1e-7)  # every block's row stays where it is


def test_a_pack_route_that_carries_nothing_has_no_share(layers):
    silent = [without_pack_route(layer) for layer in layers]
    summary = summarize(silent)
    np.testing.assert_array_equal(summary.rollout_pack_share, 0.0)
    np.testing.assert_allclose(summary.rollout.sum(-1), 1.0, rtol=1e-5)
    rows, _ = block_space_reference(silent, rollout.rollout_positions(ANSWER), N)
    np.testing.assert_allclose(summary.rollout, rows, rtol=1e-4, atol=1e-6)


def test_a_tiny_models_rollout_matches_the_reference_and_is_a_distribution():
    from tests.support.models import tiny_qa_model

    model = tiny_qa_model(3, block_size=16, pack_size=8)
    ids = torch.randint(5, 300, (1, 150), generator=torch.Generator().manual_seed(2))
    with torch.inference_mode():
        layers = model(input_ids=ids, output_attentions=True).attentions
    offsets = [None] * 10 + [(i, i + 1) for i in range(140)]
    summary = reductions.summarize_attention(
        layers, text="x" * 140, token_offsets=offsets, answer_positions=[60, 61], question_tokens=10, block_size=16
    )
    assert summary.rollout.shape == (2, 3, 10)
    np.testing.assert_allclose(summary.rollout.sum(-1), 1.0, rtol=1e-5)
    assert ((summary.rollout_pack_share > 0) & (summary.rollout_pack_share < 1)).all()
    rows, shares = block_space_reference(layers, [0, 60, 61], 150)  # the model's padding queries left out too
    np.testing.assert_allclose(summary.rollout, rows, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(summary.rollout_pack_share, shares, rtol=1e-4, atol=1e-6)
    assert summary.block_spans[0] == (0, 6) and summary.block_spans[9] == (134, 140)


def test_the_top_blocks_are_the_answers_strongest_blocks_of_document_text(layers):
    summary = summarize(layers)
    top = rollout.top_blocks(summary.rollout, summary.rollout_tokens, summary.block_spans, count=4)
    shares = summary.rollout[0, 1:].mean(0)
    assert len(top) == 4 and [share for _, share in top] == sorted((share for _, share in top), reverse=True)
    assert all(summary.block_spans[block] is not None for block, _ in top)
    np.testing.assert_allclose([share for _, share in top], [shares[block] for block, _ in top])
    assert top[0][0] == int(np.argmax(shares))
    assert rollout.top_blocks(np.zeros((0, 0, 0)), (), ()) == []
