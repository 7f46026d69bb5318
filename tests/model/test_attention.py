"""The blocked USW attention against the dense n x n reference, term by term."""

import pytest
import torch
from torch.testing import assert_close

from littlebird.modeling_littlebird import BiALiBi, build_block_geometry, usw_attention_blocked
from littlebird.reference import bialibi_matrix, dense_usw_attention

B, H_HEADS, D_HEAD, S_PACK = 2, 3, 8, 5


def random_inputs(n, block_size, lengths, shift_positions, seed=0):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(B, H_HEADS, n, D_HEAD, generator=g) for _ in range(3))
    packed_k, packed_v = (torch.randn(B, H_HEADS, S_PACK, D_HEAD, generator=g) for _ in range(2))
    key_valid = torch.arange(n)[None, :] < torch.tensor(lengths)[:, None]
    positions = torch.arange(n).expand(B, n).clone()
    if shift_positions:
        # Padding Insertion: random gaps after some tokens, position 0 stays the [CLS]
        gaps = torch.randint(0, 50, (B, n), generator=g) * (torch.rand(B, n, generator=g) < 0.2)
        gaps[:, 0] = 0
        positions = positions + gaps.cumsum(dim=1)
    bialibi = BiALiBi(H_HEADS)
    with torch.no_grad():
        for p in (bialibi.alpha, bialibi.beta, bialibi.gamma):
            p.copy_(torch.rand(H_HEADS, generator=g) * 0.3)
    return q, k, v, packed_k, packed_v, positions, key_valid, bialibi


@pytest.mark.parametrize("block_size", [4, 16])
@pytest.mark.parametrize("n_blocks", [1, 2, 3, 7])
@pytest.mark.parametrize("shift_positions", [False, True])
@pytest.mark.parametrize("same_rows", [False, True])
def test_blocked_matches_dense_reference(block_size, n_blocks, shift_positions, same_rows):
    n = block_size * n_blocks
    lengths = [n, max(1, n - block_size // 2 - 1)]
    q, k, v, pk, pv, pos, valid, bialibi = random_inputs(n, block_size, lengths, shift_positions)
    if same_rows:  # the reader's windows: every row has row 0's positions and padding
        pos, valid = pos[:1].expand_as(pos).clone(), valid[:1].expand_as(valid).clone()
    geometry = build_block_geometry(pos, valid, block_size, torch.float32)
    assert geometry.local[0].shape[0] == (1 if same_rows else B)
    fused, none = usw_attention_blocked(q, k, v, pk, pv, geometry, bialibi)
    out, (local, global_, packed) = usw_attention_blocked(q, k, v, pk, pv, geometry, bialibi, output_attentions=True)
    ref_out, ref_probs = dense_usw_attention(q, k, v, pk, pv, pos, valid, bialibi, block_size)
    rows = valid[:, None, :, None].expand_as(out)  # padded queries are free to differ
    assert none is None
    torch.testing.assert_close(out[rows], ref_out[rows], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(fused[rows], ref_out[rows], atol=1e-5, rtol=1e-5)

    from littlebird.modeling_littlebird import LittleBirdAttentions

    compact = LittleBirdAttentions(local, global_, packed, torch.zeros(B, H_HEADS, S_PACK, n), geometry.query_valid)
    dense_from_compact = compact.to_dense()
    ref_tokens = ref_probs[..., S_PACK:]
    ref_packed = ref_probs[..., :S_PACK].reshape(B, H_HEADS, n_blocks, block_size, S_PACK)
    query_rows = valid[:, None, :, None]
    torch.testing.assert_close(dense_from_compact * query_rows, ref_tokens * query_rows, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(
        packed * valid.view(B, 1, n_blocks, block_size, 1),
        ref_packed * valid.view(B, 1, n_blocks, block_size, 1),
        atol=1e-6,
        rtol=1e-5,
    )


def test_query_chunks_do_not_change_the_result():
    n, b = 96, 8
    q, k, v, pk, pv, pos, valid, bialibi = random_inputs(n, b, [96, 50], shift_positions=True)
    geometry = build_block_geometry(pos, valid, b, torch.float32)
    whole, _ = usw_attention_blocked(q, k, v, pk, pv, geometry, bialibi)
    _, whole_weights = usw_attention_blocked(q, k, v, pk, pv, geometry, bialibi, output_attentions=True)
    for chunk in (1, 5, 11, 12):
        chunked, _ = usw_attention_blocked(q, k, v, pk, pv, geometry, bialibi, chunk_blocks=chunk)
        torch.testing.assert_close(chunked, whole, atol=1e-6, rtol=1e-6)
        out, weights = usw_attention_blocked(
            q, k, v, pk, pv, geometry, bialibi, output_attentions=True, chunk_blocks=chunk
        )
        torch.testing.assert_close(out, whole, atol=1e-6, rtol=1e-6)
        for got, expected in zip(weights, whole_weights):  # (local, global, packed), written chunk by chunk
            torch.testing.assert_close(got, expected, atol=1e-6, rtol=1e-6)


def test_fused_output_in_cuda_layout_gives_the_same_result(monkeypatch):
    """CUDA's fused kernels may return (B, h m, b, d) with (B, b, h m, d) memory order; the blocks must
    still come out in query order (a .view() there stopped distillation on an H200)."""
    import littlebird.modeling_littlebird as modeling

    n, b = 48, 8
    q, k, v, pk, pv, pos, valid, bialibi = random_inputs(n, b, [48, 30], shift_positions=True)
    geometry = build_block_geometry(pos, valid, b, torch.float32)
    expected, _ = usw_attention_blocked(q, k, v, pk, pv, geometry, bialibi, chunk_blocks=2)
    fused = modeling.F.scaled_dot_product_attention

    def cuda_layout(*args, **kwargs):
        out = fused(*args, **kwargs)
        return out.transpose(1, 2).contiguous().transpose(1, 2)

    monkeypatch.setattr(modeling.F, "scaled_dot_product_attention", cuda_layout)
    got, _ = usw_attention_blocked(q, k, v, pk, pv, geometry, bialibi, chunk_blocks=2)
    torch.testing.assert_close(got, expected, atol=1e-6, rtol=1e-6)


def test_bialibi_matrix_follows_the_paper_case_by_case():
    bialibi = BiALiBi(2)
    with torch.no_grad():
        bialibi.alpha.copy_(torch.tensor([5.0, 7.0]))
        bialibi.beta.copy_(torch.tensor([1.0, 2.0]))
        bialibi.gamma.copy_(torch.tensor([3.0, 0.5]))
    pos = torch.tensor([[0, 1, 2, 10]])
    D = bialibi_matrix(pos, bialibi)[0]
    assert D[0, 0, 0] == 0 and D[0, 2, 2] == 0  # diagonal
    assert D[0, 0, 3] == 5 and D[0, 3, 0] == 5 and D[1, 2, 0] == 7  # touching [CLS]: alpha
    assert D[0, 3, 1] == 1 * (10 - 1)  # key left of query: beta * (i - j)
    assert D[1, 1, 3] == 0.5 * (10 - 1)  # key right of query: gamma * (j - i)
    # the blocked path's own bias agrees with it on a window that covers everything
    geometry = build_block_geometry(pos, torch.ones(1, 4, dtype=torch.bool), 4, torch.float32)
    local = bialibi.distance_bias(*geometry.local)[0, :, 0, :, 4:8]
    torch.testing.assert_close(local, D)


def test_bialibi_starts_from_alibi_slopes():
    from littlebird import alibi_slopes

    slopes = alibi_slopes(8)
    torch.testing.assert_close(slopes, torch.tensor([2.0 ** (-i) for i in range(1, 9)]))
    assert alibi_slopes(12).shape == (12,) and (alibi_slopes(12) > 0).all()
    bialibi = BiALiBi(8)
    for p in (bialibi.alpha, bialibi.beta, bialibi.gamma):
        torch.testing.assert_close(p.detach(), slopes)


def test_block_map_rows_hold_the_token_share_of_each_query_block():
    n, b = 40, 8
    q, k, v, pk, pv, pos, valid, bialibi = random_inputs(n, b, [40, 40], shift_positions=False)
    geometry = build_block_geometry(pos, valid, b, torch.float32)
    _, (local, global_, packed) = usw_attention_blocked(q, k, v, pk, pv, geometry, bialibi, output_attentions=True)
    from littlebird.modeling_littlebird import LittleBirdAttentions

    compact = LittleBirdAttentions(local, global_, packed, torch.zeros(B, H_HEADS, S_PACK, n), geometry.query_valid)
    block_map = compact.block_map()
    dense = compact.to_dense()
    expected = dense.view(B, H_HEADS, 5, b, 5, b).sum(-1).mean(3)
    torch.testing.assert_close(block_map, expected, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(block_map.sum(-1) + packed.sum(-1).mean(-1), torch.ones(B, H_HEADS, 5))


@pytest.mark.parametrize("shift_positions", [False, True])
def test_blocked_gradients_match_the_dense_reference(shift_positions):
    # Training runs on the blocked path: its backward (slopes included) must be the definition's too.
    n, b = 48, 8
    q, k, v, pk, pv, pos, valid, bialibi = random_inputs(n, b, [48, 30], shift_positions)
    inputs = [t.clone().requires_grad_(True) for t in (q, k, v, pk, pv)]
    geometry = build_block_geometry(pos, valid, b, torch.float32)
    out, _ = usw_attention_blocked(*inputs, geometry, bialibi)
    weight = torch.randn_like(out) * valid[:, None, :, None]  # padded queries are free to differ
    (out * weight).sum().backward()
    grads = [t.grad for t in inputs] + [p.grad.clone() for p in (bialibi.alpha, bialibi.beta, bialibi.gamma)]

    ref_inputs = [t.clone().requires_grad_(True) for t in (q, k, v, pk, pv)]
    bialibi.zero_grad()
    ref_out, _ = dense_usw_attention(*ref_inputs, pos, valid, bialibi, b)
    (ref_out * weight).sum().backward()
    ref_grads = [t.grad for t in ref_inputs] + [p.grad for p in (bialibi.alpha, bialibi.beta, bialibi.gamma)]
    for name, got, want in zip(["q", "k", "v", "packed_k", "packed_v", "alpha", "beta", "gamma"], grads, ref_grads):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4, msg=lambda m: f"{name}: {m}")


def test_bf16_autocast_stays_close_to_fp32():
    # Training's mixed precision: scores, bias and mask in bf16 must not lose the window's pattern.
    n, b = 64, 16
    q, k, v, pk, pv, pos, valid, bialibi = random_inputs(n, b, [64, 40], shift_positions=True)
    geometry = build_block_geometry(pos, valid, b, torch.float32)
    full, _ = usw_attention_blocked(q, k, v, pk, pv, geometry, bialibi)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        half, _ = usw_attention_blocked(q, k, v, pk, pv, geometry, bialibi)
    rows = valid[:, None, :, None].expand_as(full)
    torch.testing.assert_close(half.float()[rows], full[rows], atol=5e-2, rtol=5e-2)


def test_inference_keeps_the_bias_only_while_slopes_and_positions_stay():
    # Without gradients a layer reuses the last window's bias: it must never outlive a change of slopes
    # or of positions and padding.
    from littlebird import modeling_littlebird
    from tests.support.models import tiny_qa_model

    model = tiny_qa_model()
    ids = torch.randint(5, 300, (2, 192), generator=torch.Generator().manual_seed(1))
    full = torch.ones_like(ids)
    short = (torch.arange(192) < 150).long().expand(2, 192)

    def fresh(attention_mask):
        modeling_littlebird._KEPT_TERMS.clear()
        for module in model.modules():
            if isinstance(module, BiALiBi):
                module._kept_bias = None
        with torch.inference_mode():
            return model(input_ids=ids, attention_mask=attention_mask).start_logits

    with torch.inference_mode():
        first = model(input_ids=ids, attention_mask=full).start_logits
        again = model(input_ids=ids, attention_mask=full).start_logits
        other = model(input_ids=ids, attention_mask=short).start_logits
    layer = model.littlebird.encoder.layer[0]
    assert layer.bialibi._kept_bias is not None  # the fast path was taken
    torch.testing.assert_close(again, first)
    torch.testing.assert_close(other, fresh(short))
    with torch.no_grad():
        layer.bialibi.beta.mul_(3.0)
    with torch.inference_mode():
        changed = model(input_ids=ids, attention_mask=full).start_logits
    assert not torch.allclose(changed, first)
    torch.testing.assert_close(changed, fresh(full))


def test_a_chunked_forward_keeps_no_chunk_bias():
    # A window longer than query_chunk_tokens builds each chunk's terms for one call: keeping their bias
    # would hold one chunk's bias per layer after the forward and never serve it again.
    from tests.support.models import tiny_qa_model

    model = tiny_qa_model(query_chunk_tokens=64)  # 192 tokens: three chunks of one block
    ids = torch.randint(5, 300, (1, 192), generator=torch.Generator().manual_seed(2))
    with torch.inference_mode():
        chunked = model(input_ids=ids).start_logits
    assert all(layer.bialibi._kept_bias is None for layer in model.littlebird.encoder.layer)
    model.config.query_chunk_tokens = 4096
    with torch.inference_mode():
        whole = model(input_ids=ids).start_logits
    assert all(layer.bialibi._kept_bias is not None for layer in model.littlebird.encoder.layer)
    torch.testing.assert_close(chunked, whole, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("chunk_tokens", [64, 1024])  # query blocks in chunks of 4 (weights: 2), or all at once
def test_a_layers_weights_from_its_inputs_are_those_of_its_forward(chunk_tokens):
    """``LittleBirdLayer.attention_weights`` (no output, no feed-forward) rebuilds each layer's weights from the
    layer's X and P and its pack attention's C_P, on a padded batch row and shifted positions."""
    from tests.support.models import tiny_qa_model

    model = tiny_qa_model(4, query_chunk_tokens=chunk_tokens)
    n = 300
    ids = torch.randint(5, 300, (2, n), generator=torch.Generator().manual_seed(2))
    mask = torch.ones(2, n, dtype=torch.long)
    mask[1, 230:] = 0
    positions = torch.arange(n).expand(2, n).clone()
    positions[:, 150:] += 37
    inputs = []  # per layer (X, P, C_P)
    layers = model.littlebird.encoder.layer
    hooks = [layer.register_forward_pre_hook(lambda layer, args: inputs.append([args[0], args[1]])) for layer in layers]
    hooks += [
        layer.pack_attention.output.register_forward_hook(lambda module, args, out: inputs[-1].append(out))
        for layer in layers
    ]
    with torch.no_grad():
        out = model.littlebird(ids, attention_mask=mask, position_ids=positions, output_attentions=True)
        _, geometry, _ = model.littlebird.prepare(ids, mask, None, positions)
        for layer, (x, p, c_p), expected in zip(layers, inputs, out.attentions):
            got = layer.attention_weights(x, p, c_p, geometry)
            for name in ("local", "global_", "packed", "pack", "query_valid", "position_ids", "bias_coefficients"):
                assert_close(getattr(got, name), getattr(expected, name), atol=1e-6, rtol=1e-6)
    for hook in hooks:
        hook.remove()
    assert len(inputs) == len(layers) == 2 and all(len(taken) == 3 for taken in inputs)
