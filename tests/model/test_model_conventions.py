"""What users of a transformers model expect of it: every parameter learns, old checkpoints load quietly,
and the attention weights it returns take gradients."""

import pytest
import torch
from safetensors.torch import load_file, save_file

from littlebird import LittleBirdForQuestionAnswering, LittleBirdModel
from tests.support.models import tiny_config, tiny_qa_model

OLD_KEYS = ("pack_layer_norm.weight", "pack_layer_norm.bias")  # the last layer's, as checkpoints before held them


def batch(n=70, rows=2):
    generator = torch.Generator().manual_seed(0)
    return {
        "input_ids": torch.randint(5, 300, (rows, n), generator=generator),
        "start_positions": torch.tensor([3, 0])[:rows],
        "end_positions": torch.tensor([6, 0])[:rows],
    }


@pytest.mark.parametrize("checkpointing", [False, True])
def test_one_backward_pass_gives_every_trainable_parameter_a_gradient(checkpointing):
    # Dropout on, as in training: a parameter only dropout would reach is no dead weight either.
    model = tiny_qa_model(seed=1, num_hidden_layers=3, block_size=16, pack_size=8, hidden_dropout_prob=0.1).train()
    if checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model(**batch()).loss.backward()
    without = [name for name, p in model.named_parameters() if p.requires_grad and p.grad is None]
    assert not without, without


def test_the_last_layer_computes_and_holds_no_packed_sequence_for_a_next_layer():
    model = tiny_qa_model(num_hidden_layers=3)
    *inner, last = model.littlebird.encoder.layer
    assert all(layer.pack_layer_norm is not None for layer in inner) and last.pack_layer_norm is None
    assert not [name for name in model.state_dict() if name.startswith("littlebird.encoder.layer.2.pack_layer_norm")]


def old_state_dict(model):
    """``model``'s tensors plus the last layer's pack LayerNorm, as a checkpoint from before it had none holds."""
    state = dict(model.state_dict())
    prefix = "littlebird." if isinstance(model, LittleBirdForQuestionAnswering) else ""
    for name in OLD_KEYS:
        state[f"{prefix}encoder.layer.{model.config.num_hidden_layers - 1}.{name}"] = torch.full(
            (model.config.hidden_size,), 0.5
        )
    return state


def encoder_of(model):
    return model.littlebird if isinstance(model, LittleBirdForQuestionAnswering) else model


@pytest.mark.parametrize("model_class", [LittleBirdForQuestionAnswering, LittleBirdModel])
def test_an_old_state_dict_loads_strictly_through_load_state_dict(model_class):
    model = tiny_qa_model(seed=2)
    model = model if model_class is LittleBirdForQuestionAnswering else model.littlebird
    fresh = model_class(tiny_config()).eval()
    result = fresh.load_state_dict(old_state_dict(model), strict=True)
    assert not result.missing_keys and not result.unexpected_keys
    ids = batch()["input_ids"]
    with torch.no_grad():
        torch.testing.assert_close(
            encoder_of(fresh)(ids).last_hidden_state, encoder_of(model)(ids).last_hidden_state, atol=0, rtol=0
        )


@pytest.mark.parametrize("model_class", [LittleBirdForQuestionAnswering, LittleBirdModel])
def test_an_old_checkpoint_loads_through_from_pretrained_without_a_report(tmp_path, model_class, transformers_warnings):
    model = tiny_qa_model(seed=3)
    model = model if model_class is LittleBirdForQuestionAnswering else model.littlebird
    model.save_pretrained(tmp_path)
    weights = tmp_path / "model.safetensors"
    stored = load_file(str(weights))
    save_file(old_state_dict(model), str(weights), metadata={"format": "pt"})
    assert len(load_file(str(weights))) == len(stored) + len(OLD_KEYS)
    loaded, info = model_class.from_pretrained(tmp_path, output_loading_info=True)
    assert not info["unexpected_keys"] and not info["missing_keys"], info
    assert not transformers_warnings, [record.getMessage() for record in transformers_warnings]
    ids = batch()["input_ids"]
    with torch.no_grad():
        torch.testing.assert_close(
            encoder_of(loaded.eval())(ids).last_hidden_state,
            encoder_of(model)(ids).last_hidden_state,
            atol=1e-5,
            rtol=1e-5,
        )


def test_retain_grad_works_on_every_returned_attention_tensor():
    model = tiny_qa_model(seed=4, block_size=8, pack_size=4).train()
    out = model.littlebird(batch(n=40)["input_ids"], output_attentions=True)
    for attentions in out.attentions:
        attentions.retain_grad()
    out.last_hidden_state.sum().backward()
    for layer, attentions in enumerate(out.attentions):
        for name in ("local", "global_", "packed", "pack"):
            grad = getattr(attentions, name).grad
            assert grad is not None, (layer, name)
            assert grad.shape == getattr(attentions, name).shape
        assert attentions.grad is not None and attentions.grad.local is attentions.local.grad
    # the window weights lie on the output's path: the last layer's local weights get a non-zero gradient
    assert out.attentions[-1].local.grad.abs().sum() > 0 and out.attentions[-1].global_.grad.abs().sum() > 0


@pytest.mark.parametrize("n", [40, 37], ids=["block-multiple", "padded"])
def test_retain_grad_works_on_every_returned_hidden_state(n):
    # transformers' test_retain_grad_hidden_states_attentions checks the first; its tester's length decides
    # whether the input needs padding to blocks, so both cases are checked here on every layer.
    model = tiny_qa_model(seed=4, block_size=8, pack_size=4).train()
    out = model.littlebird(batch(n=n)["input_ids"], output_hidden_states=True)
    for hidden in out.hidden_states:
        hidden.retain_grad()
    out.last_hidden_state.flatten()[0].backward()
    assert out.last_hidden_state is out.hidden_states[-1]
    assert [hidden.shape[1] for hidden in out.hidden_states] == [n] * (model.config.num_hidden_layers + 1)
    assert all(hidden.grad is not None for hidden in out.hidden_states), [
        index for index, hidden in enumerate(out.hidden_states) if hidden.grad is None
    ]


def test_retain_grad_works_on_what_block_map_and_to_dense_build():
    model = tiny_qa_model(seed=5, block_size=8, pack_size=4).train()
    attentions = model.littlebird(batch(n=40)["input_ids"], output_attentions=True).attentions[0]
    block_map, dense = attentions.block_map(), attentions.to_dense()
    block_map.retain_grad()
    dense.retain_grad()
    attentions.retain_grad()
    (block_map.sum() + (dense * torch.rand_like(dense)).sum()).backward()
    assert block_map.grad is not None and dense.grad is not None
    assert attentions.local.grad is not None and attentions.global_.grad is not None


def test_the_attention_weights_change_nothing_in_the_output():
    # The weights are now the tensors the output is computed from: with or without them, the same output.
    model = tiny_qa_model(seed=6)
    ids = batch(n=150)["input_ids"]
    with torch.no_grad():
        plain = model.littlebird(ids).last_hidden_state
        weighed = model.littlebird(ids, output_attentions=True)
    torch.testing.assert_close(weighed.last_hidden_state, plain, atol=1e-5, rtol=1e-5)
    total = sum(getattr(weighed.attentions[0], name).sum(-1) for name in ("local", "global_", "packed"))
    torch.testing.assert_close(total, torch.ones_like(total))
