"""The explorer's reductions and figures, on the model's attention record filled with synthetic weights."""

from __future__ import annotations

import json
import math

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from littlebird import LittleBirdAttentions
from littlebird.app.explorer import drawing, reductions
from littlebird.app.explorer.head_metrics import METRICS

B = 8  # block size for the small synthetic windows
S = 4  # pack slots


def fake_layer(n: int, heads: int, seed: int) -> LittleBirdAttentions:
    """The model's attention record, filled with a random distribution over the keys each query may see."""
    g = torch.Generator().manual_seed(seed)
    nb = math.ceil(n / B)
    scores = torch.rand(1, heads, nb, B, 3 * B + B + S, generator=g)
    allowed = torch.ones_like(scores, dtype=torch.bool)
    allowed[:, :, 0, :, :B] = False  # no block left of block 0
    allowed[:, :, -1, :, 2 * B : 3 * B] = False  # no block right of the last
    allowed[:, :, :2, :, 3 * B : 4 * B] = False  # block 0 already in the window for q <= 1
    weights = torch.where(allowed, scores, torch.zeros(())).div_(0.2).exp_() * allowed
    weights = weights / weights.sum(-1, keepdim=True)
    pack = torch.rand(1, heads, S, nb * B, generator=g).softmax(-1)
    query_valid = (torch.arange(nb * B) < n).view(1, nb, B)
    weights = weights * query_valid[:, None, :, :, None]  # padding queries attend nowhere
    local, global_, packed = weights[..., : 3 * B], weights[..., 3 * B : 4 * B], weights[..., 4 * B :]
    return LittleBirdAttentions(local=local, global_=global_, packed=packed, pack=pack, query_valid=query_valid)


def offsets_for(n: int, question_tokens: int) -> list[tuple[int, int] | None]:
    """Context token i covers characters [4i, 4i+3) of a made-up text; question tokens have none."""
    return [None if i < question_tokens else (4 * i, 4 * i + 3) for i in range(n)]


@pytest.fixture(scope="module")
def summary() -> reductions.AttentionSummary:
    n, q = 70, 5  # 9 blocks, the last one ragged
    text = "".join(f"t{i:02d} " for i in range(n))
    layers = [fake_layer(n, heads=3, seed=s) for s in range(2)]
    return reductions.summarize_attention(
        layers,
        text=text,
        token_offsets=offsets_for(n, q),
        answer_positions=[33, 34, 35],
        question_tokens=q,
        block_size=B,
        max_cells=4,
    )


def test_pool_blocks_sums_keys_and_averages_queries():
    m = np.arange(25, dtype=np.float32).reshape(5, 5)
    pooled = reductions.pool_blocks(m, 2)
    assert pooled.shape == (3, 3)
    assert pooled[0, 0] == pytest.approx((0 + 1 + 5 + 6) / 2)
    assert pooled[2, 2] == pytest.approx(24)  # the ragged corner has one query block and one key block
    # rows keep their total mass: pooled row sum = mean of the pooled rows' sums
    assert pooled[1].sum() == pytest.approx(m[2:4].sum(1).mean())


def test_summary_shapes_and_labels(summary):
    assert summary.num_layers == 2 and summary.num_heads == 3
    assert summary.pool == 3  # 9 blocks into at most 4 cells
    assert summary.block_maps.shape == (2, 3, 3, 3)
    assert summary.answer_blocks.shape == (2, 3, 3, 9)
    assert summary.answer_pack.shape == (2, 3, 3, S)
    assert summary.pack_reads.shape == (2, 3, S, 9)
    assert summary.answer_tokens == ("t33", "t34", "t35")
    assert summary.answer_block_range == (4, 4)
    assert summary.question_blocks == 1
    assert summary.block_labels[0].startswith("t05")  # first block: its context part
    assert summary.block_labels[8].startswith("t64")


def test_answer_rows_are_distributions(summary):
    total = summary.answer_blocks.sum(-1) + summary.answer_pack.sum(-1)
    np.testing.assert_allclose(total, 1.0, rtol=1e-5)
    np.testing.assert_allclose(summary.pack_reads.sum(-1), 1.0, rtol=1e-5)


def test_local_weights_land_in_the_right_key_blocks():
    n = 40  # 5 blocks
    layer = fake_layer(n, heads=1, seed=0)
    layer.local.zero_()
    layer.global_.zero_()
    layer.packed.zero_()
    layer.local[0, 0, 3, 2, 1] = 1.0  # token 3*B+2 gives everything to a key of block 2 (left neighbour)
    layer.local[0, 0, 2, 0, 2 * B + 5] = 0.25  # token 2*B gives a quarter to block 3 (right neighbour)
    layer.global_[0, 0, 2, 0, 0] = 0.75  # ... and three quarters to block 0
    s = reductions.summarize_attention(
        [layer],
        text="x" * 200,
        token_offsets=offsets_for(n, 2),
        answer_positions=[3 * B + 2, 2 * B],
        question_tokens=2,
        block_size=B,
    )
    np.testing.assert_allclose(s.answer_blocks[0, 0, 0], [0, 0, 1, 0, 0])
    np.testing.assert_allclose(s.answer_blocks[0, 0, 1], [0.75, 0, 0, 0.25, 0])


def _slopes(layers=12, heads=12):
    rng = np.random.default_rng(0)
    return {k: rng.uniform(0.0, 0.2, (layers, heads)).astype(np.float32) for k in ("alpha", "beta", "gamma")}


def test_bialibi_figures():
    p = _slopes()
    heat = drawing.bialibi_heatmap(p["alpha"], p["beta"], p["gamma"])
    assert isinstance(heat, go.Figure) and len(heat.data) == 3
    np.testing.assert_allclose(heat.data[1].z, p["beta"])

    curves = drawing.bialibi_distance_curves(p["alpha"], p["beta"], p["gamma"], layer=4, block_size=64, head=2)
    lines = [t for t in curves.data if t.showlegend is not False]
    assert len(lines) == 12
    # left of the query the cost is beta * distance, right of it gamma * distance, zero at the query
    assert list(lines[2].x) == [-128, 0, 128]
    np.testing.assert_allclose(lines[2].y, [p["beta"][4, 2] * 128, 0, p["gamma"][4, 2] * 128], rtol=1e-6)
    assert lines[2].line.width > lines[0].line.width  # the chosen head stands out


def test_figures_from_summary(summary):
    block_map = drawing.attention_block_map(
        summary.block_maps[1, 2],
        block_size=B,
        pool=summary.pool,
        layer=1,
        head=2,
        block_labels=summary.block_labels,
        answer_block_range=summary.answer_block_range,
    )
    heat = block_map.data[0]
    # the paper's orientation: x = query position, y = key position; colours are log10 weights, floored
    expected = np.log10(np.maximum(summary.block_maps[1, 2].T, drawing.LOG_FLOOR))
    np.testing.assert_allclose(heat.z, expected, atol=1e-3)
    assert list(heat.x) == [0, 24, 48]

    answer = drawing.answer_token_attention(
        summary.answer_blocks[0, 0],
        summary.answer_pack[0, 0],
        token_labels=summary.answer_tokens,
        block_labels=summary.block_labels,
        block_size=B,
        layer=0,
        head=0,
    )
    assert [len(t.y) for t in answer.data[:2]] == [3, 3]
    assert "t33" in answer.data[0].y[0]

    reads = drawing.pack_slot_reads(
        summary.pack_reads[0, 1], block_labels=summary.block_labels, block_size=B, layer=0, head=1
    )
    assert reads.data[0].z.shape == (S, 9)


def test_no_answer_gives_a_message_figure():
    fig = drawing.answer_token_attention(
        np.zeros((0, 5)), np.zeros((0, S)), token_labels=(), block_labels=("a",) * 5, block_size=B, layer=0, head=0
    )
    assert "No answer" in fig.layout.annotations[0].text


def test_figures_stay_light_for_a_16k_document():
    """256 blocks of 64 tokens: every figure's JSON stays a few hundred KB at most."""
    rng = np.random.default_rng(1)
    nb, b, s = 256, 64, 64
    labels = tuple(f"block {i} " + "가나다라 " * 12 for i in range(nb))
    raw_map = rng.dirichlet(np.ones(nb), size=nb).astype(np.float32)
    pool = math.ceil(nb / reductions.MAX_CELLS)
    sizes = {
        "block_map": drawing.attention_block_map(
            reductions.pool_blocks(raw_map, pool),
            block_size=b,
            pool=pool,
            layer=0,
            head=0,
            block_labels=labels,
            answer_block_range=(100, 101),
        ),
        "answer": drawing.answer_token_attention(
            rng.dirichlet(np.ones(nb), size=30),
            rng.dirichlet(np.ones(s), size=30),
            token_labels=[f"tok{i}" for i in range(30)],
            block_labels=labels,
            block_size=b,
            layer=0,
            head=0,
        ),
        "pack": drawing.pack_slot_reads(
            rng.dirichlet(np.ones(nb), size=s), block_labels=labels, block_size=b, layer=0, head=0
        ),
        "curves": drawing.bialibi_distance_curves(*_slopes().values(), layer=0, block_size=b),
        "heatmap": drawing.bialibi_heatmap(*_slopes().values()),
    }
    for name, fig in sizes.items():
        size = len(fig.to_json())
        assert size < 250_000, f"{name} figure is {size} bytes of JSON"
        json.loads(fig.to_json())  # valid JSON, as gr.Plot sends it
    assert sizes["block_map"].data[0].z.shape == (128, 128)


def test_reading_map_marks_every_window_in_document_order_and_the_answers_as_ticks():
    from littlebird.reader import Answer, WindowRecord

    # five windows; the first pass ranked 3, 1, 4 best and the model read those three, in that order
    windows = [
        WindowRecord(0, 100, 3, 0.5),
        WindowRecord(80, 180, 1, 2.0, read=1, answerable_logit=0.0, best_span_score=-1.0),
        WindowRecord(160, 260, 4, 0.1),
        WindowRecord(240, 340, 0, 3.0, read=0, answerable_logit=2.0, best_span_score=1.5),
        WindowRecord(320, 400, 2, 1.0, read=2, answerable_logit=-3.0, best_span_score=None),
    ]
    answers = [
        Answer("a", 900, 901, 1.5, 0.7, window=0),
        Answer("b", 500, 502, -1.0, 0.2, window=1),
        Answer("c", 910, 912, 0.5, 0.1, window=0),
    ]
    fig = drawing.reading_map(windows, answers, aimed=3)
    bars, answerable, best, ticks = fig.data
    assert list(bars.x) == [0, 1, 2, 3, 4] and list(bars.y) == [0.5, 2.0, 0.1, 3.0, 1.0]
    assert list(bars.text) == ["#4", "#2", "#5", "#1", "#3"]
    assert [c == drawing._READ for c in bars.marker.color] == [False, True, False, True, True]
    assert list(answerable.x) == [1, 3, 4] and list(answerable.text) == ["2", "1", "3"]
    np.testing.assert_allclose(answerable.y, [0.5, 1 / (1 + math.exp(-2)), 1 / (1 + math.exp(3))])
    assert list(best.x) == [1, 3] and list(best.y) == [-1.0, 1.5]  # a window without a span has no dot
    assert list(ticks.x) == [3, 1, 3] and list(ticks.y) == [1.5, -1.0, 0.5]  # each answer at its window and score
    assert ticks.marker.color[0] == drawing._BEST and "“a”" in ticks.hovertext[0]
    assert len(fig.layout.shapes) == 3 and {s.x0 for s in fig.layout.shapes} == {2.5}  # the window explored
    assert "read 2nd" in bars.hovertext[1] and "not read" in bars.hovertext[0]
    json.loads(fig.to_json())

    one = drawing.reading_map([WindowRecord(0, 50, 0, None, read=0, answerable_logit=1.0, best_span_score=0.3)], [])
    assert list(one.data[0].y) == [0.0]  # a single window is not ranked: no BM25 bar
    assert "Ask a question" in drawing.reading_map([], []).layout.annotations[0].text


def test_a_window_summarized_layer_by_layer_holds_one_layers_weights_and_matches_the_whole():
    import weakref

    from littlebird.app.explorer.window import window_attention
    from tests.support.qa import qa_tokenizer, tiny_model_for_tokenizer

    model, tokenizer = tiny_model_for_tokenizer(), qa_tokenizer()
    text = "Jikji was printed with movable metal type at Heungdeoksa temple in 1377. " * 30
    in_window = text.index("1377", len(text) // 6)  # the window's document tokens start at the 40th
    answer_span = (in_window, in_window + 4)
    options = dict(model=model, tokenizer=tokenizer, document_start=40, max_length=256)
    whole = window_attention("When was Jikji printed?", text, **options)
    alive = []  # per layer reduced, whether each earlier layer's weights still exist

    def reduce(window, layer):
        alive.append([ref() is not None for ref in refs])
        refs.append(weakref.ref(layer.local))
        return reductions.LayerReduction(answer_span, block_size=64)(window, layer)

    refs = []
    streamed = window_attention("When was Jikji printed?", text, reduce_layer=reduce, **options)
    assert alive == [[], [False]]  # the first layer's weights were gone before the second's were reduced
    assert all(isinstance(layer, reductions.LayerSummary) for layer in streamed.attentions)
    one = reductions.summarize_window(streamed, text=text, answer_span=answer_span, block_size=64)
    other = reductions.summarize_window(whole, text=text, answer_span=answer_span, block_size=64)
    assert one.answer_tokens == other.answer_tokens and one.answer_tokens
    for name in ("block_maps", "answer_blocks", "answer_pack", "pack_reads", "rollout", "rollout_pack_share"):
        np.testing.assert_allclose(getattr(one, name), getattr(other, name), rtol=1e-5, atol=1e-6, err_msg=name)
    assert one.rollout.shape == (2, 3, math.ceil(one.n_tokens / 64)) and one.rollout_tokens == other.rollout_tokens
    assert set(one.head_metrics) == set(METRICS) and one.head_metrics["pack"].shape == (2, 4)
    for name in METRICS:
        np.testing.assert_allclose(one.head_metrics[name], other.head_metrics[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_the_explorers_float16_weights_summarize_as_float32_ones():
    # The app's explorer pass keeps each layer's weights in float16 until they are reduced (half the memory).
    import torch

    from littlebird.app.explorer.window import window_attention
    from littlebird.modeling_littlebird import attention_weights_dtype
    from tests.support.qa import qa_tokenizer, tiny_model_for_tokenizer

    model, tokenizer = tiny_model_for_tokenizer(), qa_tokenizer()
    text = "Jikji was printed with movable metal type at Heungdeoksa temple in 1377. " * 30
    in_window = text.index("1377", len(text) // 6)
    answer_span = (in_window, in_window + 4)
    options = dict(model=model, tokenizer=tokenizer, document_start=40, max_length=256)
    summaries, dtypes = {}, {}
    for chunk_tokens in (4096, 64):  # the window whole, and one block at a time as at 8K tokens
        model.config.query_chunk_tokens = chunk_tokens
        for dtype in (torch.float32, torch.float16):
            seen = []

            def reduce(window, layer):
                seen.append((layer.local.dtype, layer.global_.dtype, layer.packed.dtype, layer.pack.dtype))
                return reductions.LayerReduction(answer_span, block_size=64)(window, layer)

            with attention_weights_dtype(dtype):
                window = window_attention("When was Jikji printed?", text, reduce_layer=reduce, **options)
            summaries[chunk_tokens, dtype] = reductions.summarize_window(
                window, text=text, answer_span=answer_span, block_size=64
            )
            dtypes[chunk_tokens, dtype] = set(seen)
    assert dtypes[64, torch.float16] == dtypes[4096, torch.float16] == {(torch.float16,) * 3 + (torch.float32,)}
    assert dtypes[64, torch.float32] == {(torch.float32,) * 4}
    expected = summaries[4096, torch.float32]
    for key, got in summaries.items():
        exact = key[1] == torch.float32
        for name in ("block_maps", "answer_blocks", "answer_pack", "pack_reads", "rollout", "rollout_pack_share"):
            np.testing.assert_allclose(
                getattr(got, name).astype(np.float32),
                getattr(expected, name).astype(np.float32),
                atol=1e-5 if exact else 2e-3,
                err_msg=f"{key} {name}",
            )
        for name in METRICS:
            np.testing.assert_allclose(
                got.head_metrics[name],
                expected.head_metrics[name],
                rtol=1e-4 if exact else 1e-2,
                atol=1e-5 if exact else 2e-3,
                err_msg=f"{key} {name}",
            )


def test_head_atlas_draws_one_cell_per_layer_and_head_and_outlines_the_explorers():
    values = np.arange(6, dtype=np.float32).reshape(2, 3) / 10  # layer 1, head 2 highest
    fig = drawing.head_atlas(values, metric="pack", layer=1, head=2)
    heat = fig.data[0]
    np.testing.assert_allclose(heat.z, values)
    assert list(heat.x) == [0, 1, 2] and list(heat.y) == [0, 1]
    assert (heat.zmin, heat.zmax) == (0.0, 1.0)  # a share: the same scale in every window
    outline = fig.layout.shapes[0]
    assert (outline.x0, outline.x1, outline.y0, outline.y1) == (1.5, 2.5, 0.5, 1.5)
    assert "pack slots" in fig.layout.title.text
    distance = drawing.head_atlas(values * 100, metric="distance")
    assert distance.data[0].zmin is None and not distance.layout.shapes  # its own range; no head chosen
    nothing = drawing.head_atlas(np.full((2, 3), np.nan), metric="answer", layer=0, head=0)
    assert "no answer span" in nothing.layout.annotations[0].text


def test_the_summary_gives_every_metric_for_every_layer_and_head(summary):
    assert set(summary.head_metrics) == set(METRICS)
    assert all(values.shape == (2, 3) for values in summary.head_metrics.values())
    for layer in range(2):  # the fixture's layers, one by one, give the same numbers
        layer_metrics = reductions.summarize_layer(
            fake_layer(70, heads=3, seed=layer), answer_positions=[33, 34, 35], question_tokens=5, block_size=B
        ).head_metrics
        for name in METRICS:
            np.testing.assert_allclose(summary.head_metrics[name][layer], layer_metrics[name], err_msg=name)
    figs = drawing.explorer_figures(summary, _slopes(2, 3), layer=1, head=2, metric="entropy")
    assert "entropy" in figs["atlas"].layout.title.text and figs["atlas"].layout.shapes[0].x0 == 1.5
