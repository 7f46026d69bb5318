"""The screen head and the two halves of a screened reading: screen() then finish() is forward()."""

import pytest
import torch

from littlebird import LittleBirdForQuestionAnswering
from tests.littlebird_factories import tiny_config, tiny_qa_model


def test_screen_then_finish_gives_what_forward_gives():
    model = tiny_qa_model(seed=3, num_hidden_layers=3, screen_layers=1)
    torch.manual_seed(0)
    input_ids = torch.randint(5, 300, (2, 150))
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, 100:] = 0  # padding in the second window
    with torch.inference_mode():
        whole = model(input_ids=input_ids, attention_mask=attention_mask, top_k_starts=4, max_answer_length=7)
        lower, screen = model.screen(input_ids, attention_mask)
        split = model.finish(lower, top_k_starts=4, max_answer_length=7)
    assert screen.shape == (2,) and torch.isfinite(screen).all()
    for name in ("start_logits", "end_logits", "answerable_logits", "top_start_logits", "top_end_logits"):
        torch.testing.assert_close(getattr(split, name), getattr(whole, name), rtol=1e-5, atol=1e-5)
    assert torch.equal(split.top_start_indices, whole.top_start_indices)


def test_the_screen_reads_cls_after_the_first_layers_only():
    model = tiny_qa_model(seed=1, num_hidden_layers=3, screen_layers=2)
    input_ids = torch.randint(5, 300, (1, 70))
    with torch.inference_mode():
        hidden = model.littlebird(input_ids=input_ids, output_hidden_states=True).hidden_states
        _, screen = model.screen(input_ids)
        # changing the last layer's weights changes forward() but not the screen
        expected = model.screen_head(hidden[2])
    with torch.no_grad():
        model.littlebird.encoder.layer[2].output.weight.mul_(3.0)
    with torch.inference_mode():
        _, again = model.screen(input_ids)
    torch.testing.assert_close(screen, expected)
    torch.testing.assert_close(again, screen)


def test_a_model_without_a_screen_head_says_so_and_saves_none(tmp_path):
    model = tiny_qa_model(seed=0)
    assert model.screen_head is None
    with pytest.raises(ValueError, match="no screen head"):
        model.screen(torch.randint(5, 300, (1, 10)))
    screened = tiny_qa_model(seed=0, screen_layers=1)
    screened.save_pretrained(tmp_path)
    loaded = LittleBirdForQuestionAnswering.from_pretrained(tmp_path)
    assert loaded.config.screen_layers == 1
    torch.testing.assert_close(loaded.screen_head.dense.weight, screened.screen_head.dense.weight)


@pytest.mark.parametrize("screen_layers", [0, 2, 5])
def test_screen_layers_must_leave_layers_to_finish(screen_layers):
    with pytest.raises(ValueError, match="screen_layers"):
        LittleBirdForQuestionAnswering(tiny_config(screen_layers=screen_layers))
