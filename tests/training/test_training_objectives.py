"""Distillation objectives: attention KL on the window LittleBird sees, soft targets, QA loss, and the
shallower student cut from a LittleBird teacher with its hidden-state loss."""

import copy

import pytest
import torch
from torch import nn

from littlebird.reference import dense_attention_distillation_loss, window_visibility
from littlebird.training.distill import shallower_littlebird, teacher_layers
from littlebird.training.objectives import (
    AnchoredQAObjective,
    DistillationObjective,
    QALogits,
    anchor_loss_rows,
    attention_distillation_loss,
    hidden_state_loss,
    qa_logits,
    qa_loss,
    qa_loss_rows,
    soft_target_loss,
    teacher_windows,
)
from tests.support.models import tiny_qa_model


def qa_batch(ids: torch.Tensor, starts: list[int], ends: list[int], soft: list[bool] | None = None) -> dict:
    """A batch of windows ``ids`` with gold spans (and, given ``soft``, the rows the anchor holds)."""
    batch = {
        "input_ids": ids,
        "attention_mask": torch.ones_like(ids),
        "start_positions": torch.tensor(starts),
        "end_positions": torch.tensor(ends),
    }
    if soft is not None:
        batch["soft"] = torch.tensor(soft)
    return batch


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


def test_anchored_rows_keep_the_starting_distributions_and_the_others_learn_their_gold_spans():
    torch.manual_seed(0)
    model = tiny_qa_model().eval()  # no dropout: the same weights give the anchor's distributions exactly
    anchored = AnchoredQAObjective(model, copy.deepcopy(model))
    ids = torch.randint(3, 300, (3, 20))
    batch = qa_batch(ids, [3, 0, 4], [5, 0, 6], soft=[True, False, True])
    loss, scalars = anchored(batch)
    hidden = model.littlebird(ids, return_dict=True).last_hidden_state
    gold = qa_loss_rows(
        qa_logits(model.qa_head, hidden, batch["attention_mask"], batch["start_positions"]),
        batch["start_positions"],
        batch["end_positions"],
    )
    torch.testing.assert_close(
        gold.mean(),
        qa_loss(
            qa_logits(model.qa_head, hidden, batch["attention_mask"], batch["start_positions"]),
            batch["start_positions"],
            batch["end_positions"],
        ),
    )
    assert scalars["anchor"] < 1e-5  # the starting model agrees with itself
    torch.testing.assert_close(loss, gold[1] / 3, atol=1e-5, rtol=1e-4)  # only the gold row costs anything
    with torch.no_grad():
        model.qa_head.start.weight.add_(torch.randn_like(model.qa_head.start.weight))
    moved, scalars = anchored(batch)
    assert scalars["anchor"] > 1e-3
    # a heavier anchor adds (weight - 1) times the two soft rows' distance, the gold row unchanged
    heavier, _ = AnchoredQAObjective(model, anchored.anchor, weight=3.0)(batch)
    torch.testing.assert_close(heavier, moved + 2.0 * scalars["anchor"] * 2 / 3, atol=1e-5, rtol=1e-4)
    with pytest.raises(ValueError, match="above 0"):
        AnchoredQAObjective(model, anchored.anchor, weight=0.0)
    moved.backward()
    assert all(p.grad is None for p in anchored.anchor.parameters())  # the anchor stays as it started
    assert model.qa_head.start.weight.grad.abs().sum() > 0


def test_the_anchor_loss_is_zero_where_the_distributions_agree_and_grows_as_they_part():
    torch.manual_seed(0)
    start, end, answerable = torch.randn(2, 12), torch.randn(2, 12), torch.tensor([0.3, -1.0])
    anchor = QALogits(start, end, answerable, torch.ones(2, 12, dtype=torch.bool))
    assert anchor_loss_rows(anchor, anchor).abs().max() < 1e-6
    near = QALogits(start + 0.1 * torch.randn(2, 12), end, answerable, anchor.valid)
    far = QALogits(start + 3 * torch.randn(2, 12), end, answerable + 4, anchor.valid)
    assert (0 < anchor_loss_rows(near, anchor)).all() and (
        anchor_loss_rows(near, anchor) < anchor_loss_rows(far, anchor)
    ).all()


def test_a_shallower_student_is_the_teacher_running_only_the_kept_layers():
    teacher = tiny_qa_model(num_hidden_layers=4, source_layers=[0, 1, 2, 3])
    student = shallower_littlebird(teacher, num_layers=2)
    assert student.config.num_hidden_layers == 2 and student.config.source_layers == [0, 3]
    assert teacher_layers(teacher.config, student.config) == [0, 3]
    assert student.littlebird.encoder.layer[-1].pack_layer_norm is None  # the last layer updates no pack
    # the teacher with its layers 1 and 2 taken out reads as the student does
    cut = copy.deepcopy(teacher)
    layers = cut.littlebird.encoder.layer
    cut.littlebird.encoder.layer = nn.ModuleList([layers[0], layers[3]])
    ids = torch.randint(3, 300, (2, 150))
    mask = torch.ones_like(ids)
    mask[1, 120:] = 0
    with torch.no_grad():
        got, want = student(ids, attention_mask=mask), cut(ids, attention_mask=mask)
        whole = shallower_littlebird(teacher, num_layers=4)(ids, attention_mask=mask)
        full = teacher(ids, attention_mask=mask)
    for name in ("start_logits", "answerable_logits", "top_end_logits"):
        torch.testing.assert_close(getattr(got, name), getattr(want, name), msg=name)
        torch.testing.assert_close(getattr(whole, name), getattr(full, name), msg=name)
    assert not torch.allclose(got.start_logits, full.start_logits, atol=1e-3)


def test_a_student_from_other_layers_than_the_teachers_is_refused():
    teacher = tiny_qa_model(num_hidden_layers=4, source_layers=[0, 1, 2, 3])
    stranger = tiny_qa_model(num_hidden_layers=2, source_layers=[0, 5])
    with pytest.raises(ValueError, match="not among the teacher's"):
        teacher_layers(teacher.config, stranger.config)


def test_hidden_state_loss_is_the_mean_squared_error_of_mapped_layers_on_real_tokens():
    torch.manual_seed(0)
    teacher = [torch.randn(2, 6, 4) for _ in range(5)]  # inputs of 4 layers and the last output
    student = [torch.randn(2, 6, 4) for _ in range(3)]
    mask = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0]])
    assert hidden_state_loss(teacher, teacher, [0, 1, 2, 3], mask) == 0
    real = mask.bool()
    want = sum(((student[i + 1] - teacher[j + 1])[real] ** 2).mean() for i, j in enumerate([1, 3])) / 2
    torch.testing.assert_close(hidden_state_loss(student, teacher, [1, 3], mask), want)
    moved = [state.clone() for state in student]
    moved[2][1, 4:] += 100.0  # padding is not compared
    torch.testing.assert_close(hidden_state_loss(moved, teacher, [1, 3], mask), want)


def test_a_student_with_all_the_teachers_layers_has_nothing_left_to_learn_but_the_gold_answers():
    teacher = tiny_qa_model(num_hidden_layers=3, source_layers=[0, 1, 2])
    student = shallower_littlebird(teacher, num_layers=3).train()
    objective = DistillationObjective(
        student, teacher, [0, 1, 2], attention_weight=0.0, answerable_weight=1.0, hidden_weight=1.0
    )
    ids = torch.randint(3, 300, (2, 130))
    batch = qa_batch(ids, [5, 0], [7, 0])
    loss, scalars = objective(batch)
    assert scalars["soft"] < 1e-5 and scalars["hidden"] < 1e-10
    with torch.no_grad():  # the answerable loss is then the teacher's own entropy
        p = torch.sigmoid(teacher(ids).answerable_logits)
    entropy = -(p * p.log() + (1 - p) * (1 - p).log()).mean()
    torch.testing.assert_close(torch.tensor(scalars["answerable"]), entropy, atol=1e-5, rtol=1e-5)
    cut = shallower_littlebird(teacher, num_layers=2).train()
    _, cut_scalars = DistillationObjective(cut, teacher, [0, 2], attention_weight=0.0, hidden_weight=1.0)(batch)
    assert cut_scalars["hidden"] > 1e-6  # a cut student's layer 1 is the teacher's layer 2, not its layer 1
    loss.backward()
    assert student.qa_head.answerable.weight.grad is not None


def test_a_stage_keeps_its_prose_anchored_to_anchor_dir_not_to_the_model_it_continues(tmp_path, monkeypatch):
    """A stage that continues another's may anchor its prose windows to the checkpoint the first one started
    from (``anchor_dir``); without it, to the model it continues."""
    from types import SimpleNamespace

    from littlebird.checkpoint import save_compact
    from littlebird.training import student
    from tests.support.qa import qa_tokenizer, tiny_model_for_tokenizer

    tokenizer = qa_tokenizer()
    continued, anchor = tmp_path / "continued", tmp_path / "anchor"
    save_compact(tiny_model_for_tokenizer(0), continued, tokenizer=tokenizer)
    save_compact(tiny_model_for_tokenizer(1), anchor, tokenizer=tokenizer)
    seen = []
    monkeypatch.setattr(student, "cached_features", lambda args, build: [SimpleNamespace(soft=True)])
    monkeypatch.setattr(student.loop, "train", lambda objective, *rest, **kw: seen.append(objective))
    for anchor_dir, expected in [(str(anchor), 1), (None, 0)]:
        args = student.StudentOptions(
            student_dir=str(continued), anchor_dir=anchor_dir, output_dir=str(tmp_path / "out")
        )
        student.train_saved_student(args, build_features=None)
        held = dict(seen[-1].anchor.named_parameters())
        reference = dict(tiny_model_for_tokenizer(expected).named_parameters())
        other = dict(tiny_model_for_tokenizer(1 - expected).named_parameters())
        name = "qa_head.answerable.weight"
        assert torch.allclose(held[name], reference[name]) and not torch.allclose(held[name], other[name])
        assert seen[-1].weight == 1.0
    heavier = student.StudentOptions(student_dir=str(continued), anchor_weight=2.5, output_dir=str(tmp_path / "out"))
    student.train_saved_student(heavier, build_features=None)
    assert seen[-1].weight == 2.5  # the stage's anchor_weight reaches the objective
    with pytest.raises(ValueError, match="anchor_weight must be above 0"):
        student.StudentOptions(student_dir=str(continued), anchor_weight=0, output_dir=str(tmp_path / "out"))


def test_a_stage_without_dropout_starts_its_prose_windows_at_the_anchors_own_distributions(tmp_path, monkeypatch):
    """``dropout: 0`` turns the student's dropout off while it trains: its first prose windows then cost nothing
    against the anchor, where with the checkpoint's own dropout they cost dropout's noise."""
    from types import SimpleNamespace

    from littlebird.checkpoint import save_compact
    from littlebird.training import student
    from tests.support.qa import qa_tokenizer, tiny_model_for_tokenizer

    model = tiny_model_for_tokenizer(0)
    model.config.hidden_dropout_prob = 0.3
    start = tmp_path / "start"
    save_compact(model, start, tokenizer=qa_tokenizer())
    seen = []
    monkeypatch.setattr(student, "cached_features", lambda args, build: [SimpleNamespace(soft=True)])
    monkeypatch.setattr(student.loop, "train", lambda objective, *rest, **kw: seen.append(objective))
    ids = torch.randint(3, 300, (2, 130))
    batch = qa_batch(ids, [5, 0], [7, 0], soft=[True, True])
    kl = {}
    for dropout in (None, 0.0):
        args = student.StudentOptions(student_dir=str(start), dropout=dropout, output_dir=str(tmp_path / "out"))
        student.train_saved_student(args, build_features=None)
        objective = seen[-1].train()
        torch.manual_seed(0)
        kl[dropout] = objective(batch)[1]["anchor"]
    assert kl[0.0] < 1e-6 < kl[None]  # the checkpoint's own dropout (0.3) is noise the anchor does not have
    assert seen[-1].model.config.hidden_dropout_prob == 0.3  # what the stage saves keeps the checkpoint's value
    with pytest.raises(ValueError, match=r"dropout must be in \[0, 1\)"):
        student.StudentOptions(student_dir=str(start), dropout=1.0, output_dir=str(tmp_path / "out"))
