"""The screen stage: its loss, its training on collected [CLS] states, its report and the checkpoint it writes."""

import json

import numpy as np
import pytest
import torch

from littlebird import LittleBirdForQuestionAnswering
from littlebird.checkpoint import save_compact
from littlebird.training.screen import (SAFETENSORS_INDEX, SCREEN_SHARD, ScreenWindows, initial_head, screen_loss,
                                        screen_report, train_head, write_checkpoint)
from tests.littlebird_factories import tiny_qa_model


def test_the_loss_is_lowest_when_the_gold_window_leads_its_question():
    question = torch.tensor([0, 0, 0, 1, 1])
    inside = torch.tensor([0.0, 1.0, 0.0, 0.0, 0.0])  # question 1 has no gold window: binary term only
    right = screen_loss(torch.tensor([-3.0, 3.0, -3.0, -3.0, -3.0]), inside, question)
    wrong = screen_loss(torch.tensor([3.0, -3.0, -3.0, -3.0, -3.0]), inside, question)
    assert right < wrong
    # the ranking term is the gold window's softmax share in its question, the rest a mean binary loss
    logits = torch.tensor([0.0, 1.0, 2.0, 0.5, -0.5])
    share = torch.softmax(logits[:3], 0)[1]
    expected = -torch.log(share) + torch.nn.functional.binary_cross_entropy_with_logits(logits, inside)
    torch.testing.assert_close(screen_loss(logits, inside, question), expected)


def synthetic_windows(n_questions: int, per_question: int, hidden: int, seed: int):
    """Windows whose [CLS] states hold a direction that marks the gold window (and noise)."""
    rng = np.random.default_rng(seed)
    direction = rng.normal(size=hidden)
    question = np.repeat(np.arange(n_questions), per_question)
    inside = np.zeros(len(question), dtype=bool)
    inside[np.arange(n_questions) * per_question + rng.integers(0, per_question, n_questions)] = True
    features = rng.normal(size=(len(question), hidden)) + 1.5 * np.outer(inside, direction)
    return features.astype(np.float32), inside, question


def test_training_on_the_collected_states_puts_the_gold_window_first():
    model = tiny_qa_model(seed=0, screen_layers=1)
    features, inside, question = synthetic_windows(60, 5, model.config.hidden_size, seed=1)
    windows = ScreenWindows(cls=features[:, None, :].repeat(2, axis=1).astype(np.float16), inside=inside,
                            answerable=np.zeros(len(inside)), best=inside.astype(float), question=question,
                            place=np.tile(np.arange(5), 60))
    rows = np.arange(len(inside))
    head = initial_head(model, model.config)
    with torch.no_grad():
        before = head(torch.as_tensor(features).unsqueeze(1)).numpy()
    train_head(head, features, inside, question, epochs=200, lr=1e-2, weight_decay=0.0, seed=0)
    with torch.no_grad():
        after = head(torch.as_tensor(features).unsqueeze(1)).numpy()
    kept_before = screen_report(before, windows, rows, finish=(1,))["gold window kept, 1 finished"]
    kept_after = screen_report(after, windows, rows, finish=(1,))
    assert kept_after["gold window kept, 1 finished"] > max(0.9, kept_before)
    assert kept_after["full reading's window kept, 1 finished"] > 0.9  # here the full reading's best is the gold


def test_the_report_counts_gold_and_full_reading_windows_among_the_finished():
    windows = ScreenWindows(cls=np.zeros((6, 1, 2), np.float16), inside=np.array([0, 0, 1, 0, 0, 0], bool),
                            answerable=np.zeros(6), best=np.array([0.0, 5.0, 1.0, 0.0, 2.0, 1.0]),
                            question=np.array([0, 0, 0, 1, 1, 1]), place=np.array([0, 1, 2, 0, 1, 2]))
    screen = np.array([3.0, 2.0, 1.0, 1.0, 3.0, 2.0])
    report = screen_report(screen, windows, np.arange(6), finish=(1, 2, 3))
    assert report["gold window kept, 1 finished"] == 0.0 and report["gold window kept, 3 finished"] == 1.0
    assert report["full reading's window kept, 1 finished"] == 0.5  # question 1: window 4 is both
    assert report["full reading's window kept, 2 finished"] == 1.0


@pytest.mark.parametrize("shards", ["2KB", None])
def test_the_written_checkpoint_is_the_student_plus_one_shard_with_the_head(tmp_path, shards):
    student = tiny_qa_model(seed=2)
    folder = tmp_path / "student"
    if shards:
        save_compact(student, folder, max_shard_size="200KB")
    else:
        student.save_pretrained(folder)
    head = initial_head(student, student.config)
    with torch.no_grad():
        head.dense.weight.add_(1.0)
    written = write_checkpoint(folder, tmp_path / "screened", head, screen_layers=1)
    index = json.loads((written / SAFETENSORS_INDEX).read_text())
    assert {f for n, f in index["weight_map"].items() if n.startswith("screen_head.")} == {SCREEN_SHARD}
    for name in (p.name for p in folder.iterdir() if p.suffix == ".safetensors" and p.name != "model.safetensors"):
        assert (written / name).read_bytes() == (folder / name).read_bytes()  # the student's shards, unchanged
    loaded = LittleBirdForQuestionAnswering.from_pretrained(written)
    assert loaded.config.screen_layers == 1
    torch.testing.assert_close(loaded.screen_head.dense.weight, head.dense.weight, rtol=1e-3, atol=1e-3)
    ids = torch.randint(5, 300, (1, 90))
    with torch.inference_mode():
        torch.testing.assert_close(loaded(input_ids=ids).start_logits, student(input_ids=ids).start_logits,
                                   rtol=1e-3, atol=1e-3)
