"""Distillation objectives: attention KL on the window LittleBird sees, soft targets, QA loss."""

import torch

from littlebird.reference import dense_attention_distillation_loss, window_visibility
from littlebird.training.objectives import (attention_distillation_loss, qa_logits, qa_loss, soft_target_loss,
                                            teacher_windows)
from tests.littlebird_factories import tiny_qa_model


def test_window_visibility_is_the_blocked_pattern():
    seen = window_visibility(8, 2, torch.ones(1, 8, dtype=torch.bool))[0, 0]
    # query 6 is in block 3 (b = 2): it sees block 0, blocks 2 and 3, not block 1
    assert seen[6].tolist() == [True, True, False, False, True, True, True, True]
    assert seen[0].tolist() == [True] * 4 + [False] * 4
    masked = window_visibility(8, 2, torch.tensor([[True] * 7 + [False]]))[0, 0]
    assert not masked[:, 7].any()


def test_attention_loss_is_zero_for_the_students_own_attention_and_positive_otherwise():
    model = tiny_qa_model(block_size=8, pack_size=4)
    ids = torch.randint(3, 300, (2, 30))
    mask = torch.ones_like(ids)
    mask[1, 25:] = 0
    with torch.no_grad():
        out = model.littlebird(ids, attention_mask=mask, output_attentions=True, return_dict=True)
    own = [a.to_dense(30) for a in out.attentions]
    assert attention_distillation_loss(out.attentions, own, [0, 1], mask, 8).abs() < 1e-5
    uniform = [torch.full_like(t, 1 / 30) for t in own]
    assert attention_distillation_loss(out.attentions, uniform, [0, 1], mask, 8) > 0.01
    # student layer i reads teacher layer layer_map[i]
    swapped = attention_distillation_loss(out.attentions, own[::-1], [1, 0], mask, 8)
    assert swapped.abs() < 1e-5


def test_teacher_windows_cut_the_dense_map_as_the_student_lays_out_its_own():
    model = tiny_qa_model(block_size=8, pack_size=4)
    ids = torch.randint(3, 300, (2, 37))
    with torch.no_grad():
        out = model.littlebird(ids, attention_mask=torch.ones_like(ids), output_attentions=True, return_dict=True)
    for layer in out.attentions:
        local, global_ = teacher_windows(layer.to_dense(37), 8)
        n = 37  # the last block is partial: compare on real queries and real keys only
        valid_rows = torch.arange(local.shape[2] * 8).view(local.shape[2], 8) < n
        keys = torch.arange(-8, local.shape[2] * 8 + 8)
        window_keys = keys.unfold(0, 24, 8)  # (nb, 3b) original key index of each window slot
        real_keys = ((window_keys >= 0) & (window_keys < n)).view(1, 1, -1, 1, 24)
        expected = layer.local * real_keys * valid_rows.view(1, 1, -1, 8, 1)
        assert torch.allclose(local * valid_rows.view(1, 1, -1, 8, 1), expected, atol=1e-6)
        expected_global = layer.global_ * valid_rows.view(1, 1, -1, 8, 1)
        assert torch.allclose(global_ * valid_rows.view(1, 1, -1, 8, 1), expected_global, atol=1e-6)


def test_compact_attention_loss_matches_the_dense_reference():
    torch.manual_seed(0)
    model = tiny_qa_model(block_size=8, pack_size=4)
    # partial last block, whole blocks, long padding, and keys missing from block 0 (a hole the
    # block-0 columns must mask for every later query block, not just the window's)
    for n, masked in ((30, slice(25, None)), (40, slice(40, None)), (45, slice(19, None)), (30, slice(2, 6))):
        ids = torch.randint(3, 300, (2, n))
        mask = torch.ones_like(ids)
        mask[1, masked] = 0
        with torch.no_grad():
            out = model.littlebird(ids, attention_mask=mask, output_attentions=True, return_dict=True)
        teacher = [torch.softmax(torch.randn(2, a.local.shape[1], n, n) * 3, dim=-1) for a in out.attentions]
        compact = attention_distillation_loss(out.attentions, teacher, [1, 0], mask, 8)
        dense = dense_attention_distillation_loss(out.attentions, teacher, [1, 0], mask, 8)
        assert dense > 0.01
        assert torch.allclose(compact, dense, rtol=1e-4), (n, compact, dense)


def test_soft_targets_and_qa_loss():
    logits = torch.randn(3, 10)
    assert soft_target_loss(logits, logits, 2.0).abs() < 1e-6
    assert soft_target_loss(logits, torch.randn(3, 10), 2.0) > 0
    model = tiny_qa_model()
    ids = torch.randint(3, 300, (2, 20))
    hidden = model.littlebird(ids, return_dict=True).last_hidden_state
    starts, ends = torch.tensor([3, 0]), torch.tensor([5, 0])
    out = qa_logits(model.qa_head, hidden, torch.ones_like(ids), starts)
    assert out.end[0, :3].max() <= -1e4 + 1  # ends before the gold start are ruled out
    reference = model(ids, start_positions=starts, end_positions=ends).loss
    torch.testing.assert_close(qa_loss(out, starts, ends), reference, atol=1e-5, rtol=1e-5)
