"""The head atlas's metrics: a hand-made attention worked by hand, random ones and a tiny model's against a dense
reference (windows of at most ``SAMPLED_BLOCKS`` blocks, which the metrics read whole), and the sampled blocks of a
longer window against all of them."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from littlebird import LittleBirdAttentions
from littlebird.app.explorer.head_metrics import METRICS, SAMPLED_BLOCKS, SHARES, head_metrics, sampled_blocks
from littlebird.reference import bialibi_matrix, window_allowed
from tests.app.test_figures import fake_layer
from tests.support.models import tiny_qa_model


def test_a_hand_made_attention_gives_the_hand_computed_metrics():
    b, nb, s = 2, 3, 1  # six tokens in three blocks, one pack slot, one head
    local = torch.zeros(1, 1, nb, b, 3 * b)
    global_ = torch.zeros(1, 1, nb, b, b)
    packed = torch.zeros(1, 1, nb, b, s)
    for token in range(nb * b):
        local[0, 0, token // b, token % b, b + token % b] = 1.0  # every token reads itself ...
    # ... but token 2 (block 1), which gives 0.5 to token 0 (its left block), 0.25 to itself, 0.25 to the pack slot
    local[0, 0, 1, 0] = torch.tensor([0.5, 0, 0.25, 0, 0, 0])
    packed[0, 0, 1, 0, 0] = 0.25
    # ... and token 4 (block 2), which gives 0.5 to token 1 (block 0, beyond its window) and 0.5 to itself
    local[0, 0, 2, 0] = torch.tensor([0, 0, 0.5, 0, 0, 0])
    global_[0, 0, 2, 0, 1] = 0.5
    layer = LittleBirdAttentions(
        local, global_, packed, torch.zeros(1, 1, s, nb * b), torch.ones(1, nb, b, dtype=torch.bool)
    )
    metrics = head_metrics(layer, question_tokens=2, answer_positions=[3])  # the question is tokens 0-1, the answer 3
    assert set(metrics) == set(METRICS) and all(v.shape == (1,) for v in metrics.values())
    # per token: pack 0.25 (token 2); question 1, 1, 0.5, 0, 0.5, 0; answer 1 (token 3, reading itself);
    # distance 2 x 0.5 / 0.75 (token 2) and 3 x 0.5 (token 4); entropy 1.5 ln 2 (token 2) and ln 2 (token 4)
    assert metrics["pack"][0] == pytest.approx(0.25 / 6)
    assert metrics["question"][0] == pytest.approx(3 / 6)
    assert metrics["answer"][0] == pytest.approx(1 / 6)
    assert metrics["distance"][0] == pytest.approx((4 / 3 + 3 / 2) / 6)
    assert metrics["entropy"][0] == pytest.approx(2.5 * math.log(2) / 6, rel=1e-6)
    assert np.isnan(metrics["prior"][0])  # a record made by hand does not say how its bias was made
    assert np.isnan(head_metrics(layer, question_tokens=2, answer_positions=[])["answer"][0])  # no answer here


def dense_prior_divergence(layer: LittleBirdAttentions, bialibi, n_queries: int) -> torch.Tensor:
    """KL(weights || softmax(-[D_P; D])) per head from the dense weights and the paper's D (``littlebird.reference``),
    the window pattern written as a mask, averaged over the first ``n_queries`` queries."""
    b, s = layer.block_size, layer.packed.shape[-1]
    dense = layer.to_dense(layer.local.shape[2] * b)[0].double()  # (h, n, n), n padded to blocks
    h, n, _ = dense.shape
    packed = layer.packed[0].reshape(h, n, s).double()
    allowed = window_allowed(n, b) & layer.query_valid.reshape(1, n)  # (n, n): keys a query may see
    tokens = (-bialibi_matrix(torch.arange(n)[None], bialibi)[0].double()).masked_fill(~allowed, float("-inf"))
    pack = (-(bialibi.beta + bialibi.gamma) / 2 * b).double().view(h, 1, 1).expand(h, n, s)  # -D_P
    log_prior = torch.log_softmax(torch.cat([pack, tokens], dim=-1), dim=-1)
    weights = torch.cat([packed, dense], dim=-1)
    kl = torch.xlogy(weights, weights) - torch.where(weights > 0, weights * log_prior, torch.zeros(()).double())
    return kl.sum(-1)[:, :n_queries].mean(-1)


def dense_reference(layer: LittleBirdAttentions, question_tokens: int, answer_positions, n_queries: int) -> dict:
    """The metrics from the dense (h, n, n) token weights and the packed ones, over the first ``n_queries`` queries
    (all but ``prior``, which needs the layer's BiALiBi: :func:`dense_prior_divergence`)."""
    dense = layer.to_dense()[0].double()  # (h, n, n)
    h, n, _ = dense.shape
    dense = dense[:, :n_queries]
    packed = layer.packed[0].reshape(h, -1, layer.packed.shape[-1])[:, :n_queries].double()
    gap = (torch.arange(n_queries)[:, None] - torch.arange(n)[None, :]).abs().double()
    return {
        "pack": packed.sum(-1).mean(-1),
        "question": dense[..., :question_tokens].sum(-1).mean(-1),
        "answer": dense[..., list(answer_positions)].sum(-1).mean(-1),
        "distance": ((dense * gap).sum(-1) / dense.sum(-1)).mean(-1),
        "entropy": -(torch.xlogy(dense, dense).sum(-1) + torch.xlogy(packed, packed).sum(-1)).mean(-1),
    }


def test_random_attentions_match_the_dense_reference_and_the_shares_add_up():
    n, b = 70, 8  # 9 blocks, the last with two padding queries
    layer = fake_layer(n, heads=3, seed=4)
    metrics = head_metrics(layer, question_tokens=11, answer_positions=[33, 34, 35], chunk_blocks=4)
    expected = dense_reference(layer, 11, [33, 34, 35], n)
    for name in expected:
        np.testing.assert_allclose(metrics[name], expected[name].numpy(), rtol=1e-5, err_msg=name)
    # the pack share and the share to every token key make one
    every_token = head_metrics(layer, question_tokens=9 * b, answer_positions=[], chunk_blocks=4)
    np.testing.assert_allclose(every_token["pack"] + every_token["question"], 1.0, rtol=1e-6)
    assert ((metrics["entropy"] > 0) & (metrics["entropy"] < math.log(4 * b + 4))).all()


def test_a_tiny_models_attention_matches_the_dense_reference():
    model = tiny_qa_model(1, block_size=16, pack_size=8)
    n = 150  # 10 blocks of 16, the last ragged: its padding keys get no weight
    ids = torch.randint(5, 300, (1, n), generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        layers = model(input_ids=ids, output_attentions=True).attentions
    with torch.no_grad():  # content that matters: the weights then sit well away from the prior
        for module in model.littlebird.encoder.layer:
            module.attention.query.weight.mul_(20)
    with torch.inference_mode():
        layers = model(input_ids=ids, output_attentions=True).attentions
    assert layers[0].local.shape[2] <= SAMPLED_BLOCKS  # so the metrics read every block, as the reference does
    for layer, module in zip(layers, model.littlebird.encoder.layer):
        metrics = head_metrics(layer, question_tokens=20, answer_positions=[100, 101], chunk_blocks=3)
        expected = dense_reference(layer, 20, [100, 101], n)
        with torch.no_grad():
            expected["prior"] = dense_prior_divergence(layer, module.bialibi, n)
        assert set(expected) == set(METRICS)
        for name in METRICS:
            np.testing.assert_allclose(metrics[name], expected[name].numpy(), rtol=2e-5, atol=1e-6, err_msg=name)
        assert (metrics["prior"] > 1e-3).all()


def test_a_head_whose_content_scores_are_zero_sits_on_its_prior():
    """With the unpack attention's queries zeroed, q.k = 0: the weights are softmax(-[D_P; D]), the prior itself."""
    model = tiny_qa_model(2, block_size=16, pack_size=8)
    with torch.no_grad():
        for module in model.littlebird.encoder.layer:
            module.attention.query.weight.zero_()
            module.attention.query.bias.zero_()
    ids = torch.randint(5, 300, (1, 90), generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        layers = model(input_ids=ids, output_attentions=True).attentions
    for layer in layers:
        prior = head_metrics(layer, question_tokens=10, answer_positions=[], chunk_blocks=2)["prior"]
        assert prior.shape == (4,) and np.all(prior >= 0) and np.all(prior < 1e-6)


def test_the_sampled_blocks_are_every_block_of_a_short_window_else_evenly_spread():
    assert sampled_blocks(10).tolist() == list(range(10)) and sampled_blocks(SAMPLED_BLOCKS).numel() == SAMPLED_BLOCKS
    assert sampled_blocks(200, None).tolist() == list(range(200))
    for nb in (17, 48, 128, 257):
        blocks = sampled_blocks(nb).tolist()
        assert len(blocks) == SAMPLED_BLOCKS and blocks == sorted(set(blocks)) and 0 <= blocks[0] and blocks[-1] < nb
        gaps = np.diff(blocks)  # each sampled block stands for an equal run of the window, the ends' too
        assert (
            gaps.max() - gaps.min() <= 1
            and blocks[0] <= nb / SAMPLED_BLOCKS
            and nb - 1 - blocks[-1] <= nb / SAMPLED_BLOCKS
        )


def test_a_longer_windows_sampled_metrics_are_close_to_the_average_over_every_block():
    """48 blocks, 16 of them read: the shares within 0.03 of the full average, the rest within 10%."""
    model = tiny_qa_model(1, block_size=16, pack_size=8)
    n = 48 * 16 - 5
    ids = torch.randint(5, 300, (1, n), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        for module in model.littlebird.encoder.layer:
            module.attention.query.weight.mul_(8)
    with torch.inference_mode():
        layers = model(input_ids=ids, output_attentions=True).attentions
    for layer in layers:
        kwargs = {"question_tokens": 20, "answer_positions": list(range(400, 404))}
        sampled = head_metrics(layer, **kwargs)
        full = head_metrics(layer, sample_blocks=None, **kwargs)
        for name in METRICS:
            if name in SHARES:
                np.testing.assert_allclose(sampled[name], full[name], atol=0.03, err_msg=name)
            else:
                np.testing.assert_allclose(sampled[name], full[name], rtol=0.1, err_msg=name)
        assert not np.allclose(sampled["entropy"], full["entropy"], rtol=1e-6)  # a sample, not every block
