"""The explorer's "any token" view against the model's own computation on a tiny model: each key's content and
BiALiBi terms add up to the logit the model gave softmax, and their softmax is the model's attention weight."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest
import torch
from torch.testing import assert_close

from littlebird.app.explorer import cache, token_figure
from littlebird.app.explorer.capture import LayerInputs, ReadingInputs, capturing, keeping_reading
from littlebird.app.explorer.keys import token_keys
from tests.support.models import tiny_qa_model

N = 300  # 5 blocks of 64, the last one ragged (padded inside the model)
TOKENS = (0, 40, 70, 130, 200, 299)  # [CLS]; blocks 0 and 1 (block 0 in the window); 2, 3 (block 0 global); the last


@pytest.fixture(scope="module")
def model():
    torch.set_num_threads(1)
    return tiny_qa_model(3)


@pytest.fixture(scope="module")
def position_ids():
    positions = torch.arange(N)
    positions[150:] += 37  # a gap, as Padding Insertion makes: the bias must follow positions, not indices
    return positions.unsqueeze(0)


@pytest.fixture(scope="module")
def run(model, position_ids):
    """One pass with attention weights, the logits the model gave softmax, and the captures it left."""
    ids = torch.randint(5, 300, (1, N), generator=torch.Generator().manual_seed(1))
    logits = []
    softmax = torch.softmax

    def spy(scores, *args, **kwargs):
        logits.append(scores.detach().clone())
        return softmax(scores, *args, **kwargs)

    captures = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(torch, "softmax", spy)
        with capturing(model, dtype=torch.float32) as exact, torch.no_grad():
            out = model(ids, position_ids=position_ids, output_attentions=True)
    with capturing(model) as halves, torch.no_grad():
        model(ids, position_ids=position_ids)  # the fused path: no weights, same inputs
    labels = [f"t{i}" for i in range(N)]
    captures["exact"] = exact.capture(labels, question_length=5, answer_positions=[130, 131])
    captures["fp16"] = halves.capture(labels)
    # per layer, pack attention's softmax comes first, then USWAttn's (one chunk: N < query_chunk_tokens)
    return out.attentions, logits[1::2], captures


def model_keys(attentions, logits, layer, head, token, b=64, s=64):
    """The model's keys of ``token`` as (window token or -1 - slot, logit, weight), masked keys left out."""
    q, r = divmod(token, b)
    nb = attentions[layer].local.shape[2]
    scores = logits[layer].view(1, -1, nb, b, logits[layer].shape[-1])[0, head, q, r]  # (s + 4b,)
    weights = torch.cat(
        [
            attentions[layer].packed[0, head, q, r],
            attentions[layer].global_[0, head, q, r],
            attentions[layer].local[0, head, q, r],
        ]
    )
    where = list(range(-1, -s - 1, -1)) + list(range(b)) + list(range((q - 1) * b, (q + 2) * b))
    kept = [(w, scores[i], weights[i]) for i, w in enumerate(where) if scores[i] > -5e3]  # the mask adds -1e4
    slots = [k for k in kept if k[0] < 0]
    return slots + sorted((k for k in kept if k[0] >= 0), key=lambda k: k[0])


@pytest.mark.parametrize("token", TOKENS)
@pytest.mark.parametrize("layer,head", [(0, 0), (1, 3)])
def test_content_plus_bias_is_the_models_logit_and_its_softmax_the_models_weight(run, model, layer, head, token):
    attentions, logits, captures = run
    keys = token_keys(captures["exact"], model, layer=layer, head=head, token=token)
    expected = model_keys(attentions, logits, layer, head, token)
    assert keys.slots == 64 and len(keys.labels) == len(keys.content) == len(keys.bias) == len(keys.weight)
    positions = [w for w, _, _ in expected]
    assert keys.positions.tolist() == [-1 - w if w < 0 else w for w in positions]  # the same keys, in order
    assert keys.positions[-1] < N  # no padding among the keys
    model_logit = torch.stack([score for _, score, _ in expected])
    model_weight = torch.stack([weight for _, _, weight in expected])
    assert_close(torch.from_numpy(keys.content + keys.bias), model_logit, rtol=1e-6, atol=1e-6)
    assert_close(torch.from_numpy(keys.weight), model_weight, rtol=1e-6, atol=1e-7)
    assert keys.weight.sum() == pytest.approx(1.0, abs=1e-6)
    assert model_weight.sum() == pytest.approx(1.0, abs=1e-6)  # so no key the model weighed is missing


def test_the_bias_is_bialibis_distance_term(run, model, position_ids):
    _, _, captures = run
    layer = model.littlebird.encoder.layer[1]
    alpha, beta, gamma = (getattr(layer.bialibi, name)[2].item() for name in ("alpha", "beta", "gamma"))
    keys = token_keys(captures["exact"], model, layer=1, head=2, token=200)
    assert np.allclose(keys.bias[:64], -(beta + gamma) / 2 * 64)  # D_P: every pack slot sits b tokens away
    pos = position_ids[0]
    for i, j in zip(range(64, len(keys.positions)), keys.positions[64:]):
        distance = int(pos[j] - pos[200])
        expected = 0.0 if j == 200 else alpha if j == 0 else gamma * distance if distance > 0 else beta * -distance
        assert keys.bias[i] == pytest.approx(-expected, rel=1e-6)
    assert keys.labels[64] == "t0" and keys.text == "t200"


def test_layer_inputs_kept_in_16_bits_give_nearly_the_same_weights(run, model):
    attentions, logits, captures = run
    assert all(h.dtype == torch.float16 for h in captures["fp16"].hidden)
    halves, exact = (sum(h.nbytes for h in captures[kind].hidden) for kind in ("fp16", "exact"))
    assert halves == exact / 2 and captures["fp16"].nbytes < captures["exact"].nbytes
    for token in TOKENS:
        keys = token_keys(captures["fp16"], model, layer=1, head=1, token=token)
        exact = torch.stack([w for _, _, w in model_keys(attentions, logits, 1, 1, token)])
        assert_close(torch.from_numpy(keys.weight), exact, rtol=0, atol=2e-3)


def test_capture_shapes_and_the_token_it_opens_on(run):
    _, _, captures = run
    capture = captures["exact"]
    assert capture.num_layers == 2 and capture.n_tokens == N and capture.block_size == 64
    assert [h.shape for h in capture.hidden] == [torch.Size([320, 32])] * 2  # padded to blocks, as the layers read it
    assert [p.shape for p in capture.packed] == [p.shape for p in capture.pack_inputs] == [torch.Size([64, 32])] * 2
    assert capture.key_valid.sum() == N and capture.default_token == 130
    assert captures["fp16"].default_token == 0  # no question given: the first token
    with pytest.raises(ValueError, match="capturing"):
        LayerInputs().capture(["a"])


def test_out_of_range_choices_are_clamped(run, model):
    _, _, captures = run
    keys = token_keys(captures["exact"], model, layer=9, head=-1, token=10_000)
    assert (keys.layer, keys.head, keys.token) == (1, 0, N - 1)


def test_the_figure_stacks_content_and_bias_over_the_keys_and_draws_the_weights(run, model):
    _, _, captures = run
    keys = token_keys(captures["exact"], model, layer=0, head=1, token=200)
    groups = keys.groups()
    assert [kind for kind, *_ in groups] == ["pack", "block0", "window"]
    assert [(first, end) for *_, first, end in groups] == [
        (0, 64),
        (64, 128),
        (128, 128 + 172),
    ]  # blocks 2, 3 and the ragged 4
    assert "blocks 2–4" in groups[2][1]
    fig = token_figure.token_figure(keys)
    assert isinstance(fig, go.Figure) and fig.layout.barmode == "relative"
    content, bias, score, weight = fig.data
    np.testing.assert_array_equal(np.asarray(content.y) + np.asarray(bias.y), keys.score)
    np.testing.assert_array_equal(weight.y, keys.weight)
    assert (
        len(content.x) == 64 + 64 + 172
        and "t200" in fig.layout.title.text
        and "layer 0 head 1" in fig.layout.title.text
    )
    assert "“t0”" in content.hovertext[64]
    near = token_keys(captures["exact"], model, layer=0, head=1, token=70)
    assert [kind for kind, *_ in near.groups()] == ["pack", "window"]  # block 0 is its left neighbour


def test_the_cache_keeps_the_last_two_windows():
    windows = cache.CaptureCache()
    for key in "abc":
        windows.put(key, key)
    assert len(windows) == 2 and windows.get("a") is None and windows.get("b") == "b"
    windows.put("d", "d")  # "b" was read last, so "c" goes
    assert windows.get("c") is None and windows.get("b") == "b" and windows.get("d") == "d"
    assert cache.CAPTURES.size == cache.MAX_WINDOWS == 2


def test_a_reading_keeps_the_windows_it_reads_in_full_and_not_its_glimpses():
    """The reader says which passes are glimpses (``read(on_pass=...)``); the kept windows are the windows read,
    each kept whole, by its place in the reading order."""
    from littlebird.reader import GLIMPSE_ABOVE, ReadingOptions, read
    from tests.support.qa import qa_tokenizer, tiny_model_for_tokenizer

    model = tiny_model_for_tokenizer(0)
    text = "\n\n".join(f"Paragraph {i}: the bell of the town hall was cast in {1700 + i}." for i in range(120))
    with keeping_reading(model, budget=2**40) as kept:
        options = ReadingOptions(
            max_length=256, max_windows=GLIMPSE_ABOVE + 2, stop_confidence=None, give_up_below=None
        )
        reading = read(
            "When was the bell cast?",
            text,
            model=model,
            tokenizer=qa_tokenizer(),
            on_pass=kept.on_pass,
            options=options,
        )
    assert "glimpse" in reading.timings and reading.n_windows < GLIMPSE_ABOVE + 2  # glimpses ran, fewer were read
    places = [place for place in range(GLIMPSE_ABOVE + 2) if kept.window(place) is not None]
    assert places == list(range(reading.n_windows))
    assert all(
        kept.window(place).hidden[0].shape[0] >= 192 for place in places
    )  # whole windows, not 128-token glimpses
    # without being told, the glimpses' batch is taken for windows read
    unaware = ReadingInputs(budget=2**40)
    with unaware.keeping(model):
        read("When was the bell cast?", text, model=model, tokenizer=qa_tokenizer(), options=options)
    assert unaware.window(reading.n_windows) is not None
