"""Plotly figures for the attention explorer, drawn from the arrays of ``explorer.reductions``.

``bialibi_heatmap``, ``bialibi_distance_curves``, ``attention_block_map``, ``answer_token_attention``,
``pack_slot_reads``, ``head_atlas``, ``rollout_map`` and ``reading_map`` take numpy arrays (or a reading's
records) and return a ``plotly.graph_objects.Figure``. They never touch torch, so tests feed them synthetic
arrays.

Every figure is kept light: at most ``reductions.MAX_CELLS`` cells per heatmap axis (256 blocks of a 16K
document are pooled 2 x 2), float32 arrays (plotly serialises those as base64, not as decimal text) and the
empty ``"none"`` template, which saves ~8 KB of styling per figure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from littlebird.app.explorer.head_metrics import METRICS, SHARES
from littlebird.app.explorer.reductions import LABEL_CHARS, AttentionSummary
from littlebird.app.explorer.target import window_label

LOG_FLOOR = 1e-4
"""Weights below this are drawn as this: log colour scales need a floor, and weights
under 1e-4 are invisible on a 0..1 scale anyway."""

_COLORSCALE = "Viridis"  # bright = strong attention, as in the paper's figure 4
_FONT = {"size": 11}


def figure_layout(fig: go.Figure, title: str, height: int) -> go.Figure:
    """The layout every explorer figure shares: no template (saves bytes), small margins."""
    fig.update_layout(
        template="none",
        title={"text": title, "font": {"size": 13}},
        height=height,
        margin={"l": 60, "r": 20, "t": 40, "b": 45},
        font=_FONT,
        paper_bgcolor="white",
        plot_bgcolor="white",
    )
    return fig


def _log_weights(weights: np.ndarray) -> np.ndarray:
    """log10 of attention weights with a floor, rounded: the paper plots log scale."""
    return np.round(np.log10(np.clip(np.nan_to_num(weights), LOG_FLOOR, None)), 3).astype(np.float32)


def _log_colorbar(title: str) -> dict:
    """Colour bar for log10 weights, labelled in plain weights."""
    exponents = range(int(math.log10(LOG_FLOOR)), 1)
    return {
        "title": {"text": title, "side": "right"},
        "tickvals": list(exponents),
        "ticktext": [f"1e{e}" if e else "1" for e in exponents],
        "thickness": 12,
    }


def bialibi_heatmap(alpha: np.ndarray, beta: np.ndarray, gamma: np.ndarray) -> go.Figure:
    """BiALiBi's learnt slopes per layer (rows) and head (columns), one panel each.

    alpha is the [CLS] bias, beta the slope to the left, gamma to the right; each is a
    (layers, heads) array. Panels get their own colour scale because the three differ
    by orders of magnitude.
    """
    panels = {"α ([CLS])": alpha, "β (left)": beta, "γ (right)": gamma}
    fig = make_subplots(rows=1, cols=3, subplot_titles=list(panels), shared_yaxes=True, horizontal_spacing=0.08)
    n_layers, n_heads = np.asarray(alpha).shape
    for col, (name, values) in enumerate(panels.items(), start=1):
        values = np.asarray(values, dtype=np.float32)
        fig.add_trace(
            go.Heatmap(
                z=values,
                x=list(range(n_heads)),
                y=list(range(n_layers)),
                coloraxis=f"coloraxis{col if col > 1 else ''}",
                hovertemplate=f"layer %{{y}}, head %{{x}}<br>{name.split()[0]} = %{{z:.4f}}<extra></extra>",
            ),
            row=1,
            col=col,
        )
        bar_x = [0.27, 0.63, 1.0][col - 1]
        fig.update_layout(
            {
                f"coloraxis{col if col > 1 else ''}": {
                    "colorscale": _COLORSCALE,
                    "colorbar": {"x": bar_x, "thickness": 8, "len": 0.9},
                }
            }
        )
        fig.update_xaxes(title_text="head", row=1, col=col, dtick=1 if n_heads <= 16 else None)
    fig.update_annotations(font={"size": 11})
    fig.update_yaxes(title_text="layer", row=1, col=1, autorange="reversed", dtick=1 if n_layers <= 24 else None)
    fig.update_yaxes(autorange="reversed", row=1, col=2)
    fig.update_yaxes(autorange="reversed", row=1, col=3)
    return figure_layout(fig, "BiALiBi slopes per layer and head", height=300)


def bialibi_distance_curves(
    alpha: np.ndarray,
    beta: np.ndarray,
    gamma: np.ndarray,
    *,
    layer: int,
    block_size: int,
    head: int | None = None,
) -> go.Figure:
    """The bias BiALiBi subtracts from attention scores against key distance, per head.

    x is the key position minus the query position: left keys (x < 0) cost beta*|x|,
    right keys gamma*x, the query itself 0. Curves span the sliding window (+-2b), the
    farthest a local key can be. Dotted lines mark each head's uniform pack bias
    (beta+gamma)/2*b; alpha (the [CLS] bias) is in the hover text. ``head`` is drawn
    thick, the others thin. Each curve is three points: the bias is piecewise linear.
    """
    a, b, g = (np.asarray(v, dtype=np.float32)[layer] for v in (alpha, beta, gamma))
    reach = 2 * block_size
    fig = go.Figure()
    palette = _palette(len(a))
    for h in range(len(a)):
        chosen = head is None or h == head
        pack_bias = float((b[h] + g[h]) / 2 * block_size)
        common = {
            "legendgroup": f"h{h}",
            "line": {"color": palette[h], "width": 3 if chosen and head is not None else 1.5},
        }
        fig.add_trace(
            go.Scatter(
                x=[-reach, 0, reach],
                y=[float(b[h] * reach), 0.0, float(g[h] * reach)],
                mode="lines",
                name=f"head {h}",
                opacity=1.0 if chosen else 0.35,
                hovertemplate=(
                    f"head {h}<br>distance %{{x}}<br>bias %{{y:.3f}}"
                    f"<br>α={a[h]:.3f} β={b[h]:.4f} γ={g[h]:.4f}<extra></extra>"
                ),
                **common,
            )
        )
        fig.add_trace(
            go.Scatter(
                x=[-reach, reach],
                y=[pack_bias, pack_bias],
                mode="lines",
                showlegend=False,
                opacity=0.8 if chosen else 0.25,
                hovertemplate=f"head {h}: pack bias (β+γ)/2·b = {pack_bias:.3f}<extra></extra>",
                **{**common, "line": {**common["line"], "dash": "dot", "width": 1}},
            )
        )
    fig.update_xaxes(title_text="key position − query position (tokens); left < 0 < right", zeroline=True)
    fig.update_yaxes(title_text="bias subtracted from score")
    return figure_layout(fig, f"BiALiBi bias against distance, layer {layer}", height=320)


def _palette(n: int) -> list[str]:
    """n distinct colours for heads."""
    base = [
        "#1f77b4",
        "#ff7f0e",
        "#2ca02c",
        "#d62728",
        "#9467bd",
        "#8c564b",
        "#e377c2",
        "#7f7f7f",
        "#bcbd22",
        "#17becf",
        "#393b79",
        "#ad494a",
    ]
    return [base[i % len(base)] for i in range(n)]


def _heatmap(z: np.ndarray, x: Any, y: Any, **kwargs: Any) -> go.Heatmap:
    """A log10-weight heatmap on the shared colour scale (1e-4 .. 1)."""
    return go.Heatmap(z=_log_weights(z), x=x, y=y, colorscale=_COLORSCALE, zmin=math.log10(LOG_FLOOR), zmax=0, **kwargs)


def _text_strip(block_labels: Sequence[str], block_size: int) -> go.Scatter:
    """A row of markers, one per block, whose hover shows the text the block starts with.

    Hover text on every heatmap cell would repeat each label once per row (hundreds of
    KB for a long document); one strip under the x axis carries each label once.
    """
    return go.Scatter(
        x=np.arange(len(block_labels)) * block_size,
        y=np.zeros(len(block_labels), dtype=np.float32),
        text=list(block_labels),
        mode="markers",
        marker={"symbol": "line-ns-open", "size": 8, "color": "#888"},
        showlegend=False,
        hovertemplate="tokens from %{x}: %{text}<extra></extra>",
    )


def _outline_answer(
    fig: go.Figure, answer_block_range: tuple[int, int] | None, block_size: int, cell: int, **where: Any
) -> None:
    """Outline the x range of the answer's blocks; ``cell`` is the tokens per heatmap cell."""
    if answer_block_range is None:
        return
    first, last = answer_block_range
    fig.add_vrect(
        x0=first * block_size - cell / 2,
        x1=(last + 1) * block_size - cell / 2,
        line={"color": "#ff4136", "width": 2},
        fillcolor="rgba(0,0,0,0)",
        **where,
    )


def _with_strip(cols: int = 1, **kwargs: Any) -> go.Figure:
    """Subplots: the heatmap(s) in row 1, the block text strip in a thin row 2."""
    specs = [[{}] * cols, [{}] + [None] * (cols - 1)]
    fig = make_subplots(
        rows=2, cols=cols, row_heights=[0.93, 0.07], vertical_spacing=0.02, shared_xaxes=True, specs=specs, **kwargs
    )
    fig.update_yaxes(visible=False, fixedrange=True, row=2, col=1)
    return fig


def attention_block_map(
    block_map: np.ndarray,
    *,
    block_size: int,
    pool: int = 1,
    layer: int,
    head: int,
    block_labels: Sequence[str] = (),
    answer_block_range: tuple[int, int] | None = None,
    question_blocks: int = 1,
) -> go.Figure:
    """Attention at block resolution over the window, like the paper's figure 4.

    ``block_map`` is (query cells, key cells) for one layer and head, already pooled by
    ``pool`` blocks per cell. x is the query position and y the key position (the
    paper's orientation), colour is log10 of the weight. The diagonal band is the
    sliding window, the bottom rows block 0 ([CLS] and the question, which every block
    may read); the answer's query blocks are outlined.
    """
    z = np.asarray(block_map, dtype=np.float32).T  # (key cells, query cells): y = keys
    cell = pool * block_size
    fig = _with_strip()
    fig.add_trace(
        _heatmap(
            z,
            np.arange(z.shape[1]) * cell,
            np.arange(z.shape[0]) * cell,
            colorbar=_log_colorbar("weight"),
            hovertemplate="queries from token %{x}<br>keys from token %{y}<br>log10 weight %{z:.2f}<extra></extra>",
        ),
        row=1,
        col=1,
    )
    fig.add_trace(_text_strip(block_labels, block_size), row=2, col=1)
    _outline_answer(fig, answer_block_range, block_size, cell, row=1, col=1)
    fig.add_hline(
        y=question_blocks * block_size - cell / 2, line={"color": "white", "width": 1, "dash": "dot"}, row=1, col=1
    )
    fig.update_xaxes(title_text=f"query position (tokens, {cell} per cell)", row=2, col=1)
    fig.update_yaxes(title_text="key position (tokens)", row=1, col=1)
    return figure_layout(fig, f"Attention by block, layer {layer} head {head}", height=480)


def answer_token_attention(
    block_weights: np.ndarray,
    pack_weights: np.ndarray,
    *,
    token_labels: Sequence[str],
    block_labels: Sequence[str],
    block_size: int,
    layer: int,
    head: int,
) -> go.Figure:
    """Where each of the answer's tokens looked: key blocks on the left, pack slots on the right.

    ``block_weights`` is (answer tokens, key blocks): weight to the sliding window and
    block 0, summed per block. ``pack_weights`` is (answer tokens, pack slots). Each
    row of the two together sums to about 1.
    """
    title = f"Where the answer's tokens looked, layer {layer} head {head}"
    if len(token_labels) == 0:
        return message_figure(title, "No answer span was chosen, so there are no answer tokens to show.")
    block_weights = np.asarray(block_weights, dtype=np.float32)
    pack_weights = np.asarray(pack_weights, dtype=np.float32)
    rows = [f"{i}: {t.strip() or '·'}" for i, t in enumerate(token_labels)]
    fig = _with_strip(
        cols=2,
        column_widths=[0.78, 0.22],
        horizontal_spacing=0.04,
        subplot_titles=["key blocks (window + block 0)", "pack slots"],
    )
    fig.add_trace(
        _heatmap(
            block_weights,
            np.arange(block_weights.shape[1]) * block_size,
            rows,
            colorbar=_log_colorbar("weight"),
            hovertemplate="%{y}<br>keys from token %{x}<br>log10 weight %{z:.2f}<extra></extra>",
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        _heatmap(
            pack_weights,
            list(range(pack_weights.shape[1])),
            rows,
            showscale=False,
            hovertemplate="%{y}<br>pack slot %{x}<br>log10 weight %{z:.2f}<extra></extra>",
        ),
        row=1,
        col=2,
    )
    fig.add_trace(_text_strip(block_labels, block_size), row=2, col=1)
    fig.update_annotations(font={"size": 11})  # subplot titles, smaller than the figure title
    fig.update_yaxes(autorange="reversed", row=1, col=1)
    fig.update_yaxes(autorange="reversed", showticklabels=False, row=1, col=2)
    fig.update_xaxes(title_text="key position (tokens)", row=2, col=1)
    fig.update_xaxes(title_text="slot", row=1, col=2)
    return figure_layout(fig, title, height=min(160 + 18 * max(len(rows), 4), 720))


def pack_slot_reads(
    reads: np.ndarray,
    *,
    block_labels: Sequence[str],
    block_size: int,
    layer: int,
    head: int,
    answer_block_range: tuple[int, int] | None = None,
) -> go.Figure:
    """What each pack slot read: its pack-attention weight per input block (C_P = Attn(P, X)).

    ``reads`` is (pack slots, input blocks). Each row sums to 1 over the window, so a
    bright cell means that slot summarises that part of the document.
    """
    reads = np.asarray(reads, dtype=np.float32)
    fig = _with_strip()
    fig.add_trace(
        _heatmap(
            reads,
            np.arange(reads.shape[1]) * block_size,
            list(range(reads.shape[0])),
            colorbar=_log_colorbar("weight"),
            hovertemplate="slot %{y}<br>tokens from %{x}<br>log10 weight %{z:.2f}<extra></extra>",
        ),
        row=1,
        col=1,
    )
    fig.add_trace(_text_strip(block_labels, block_size), row=2, col=1)
    _outline_answer(fig, answer_block_range, block_size, block_size, row=1, col=1)
    fig.update_xaxes(title_text="input position (tokens)", row=2, col=1)
    fig.update_yaxes(title_text="pack slot", autorange="reversed", row=1, col=1)
    return figure_layout(fig, f"What each pack slot read, layer {layer} head {head}", height=400)


def head_atlas(values: np.ndarray, *, metric: str, layer: int | None = None, head: int | None = None) -> go.Figure:
    """One head metric (a key of ``explorer.head_metrics.METRICS``) for every layer (rows) and head (columns).

    ``values`` is (layers, heads), as ``AttentionSummary.head_metrics[metric]``. Shares of attention
    are drawn on a fixed 0..1 scale, so two windows' atlases compare; distance and entropy on their
    own range. The explorer's ``layer`` and ``head`` are outlined.
    """
    label = METRICS[metric]
    title = f"Head atlas: {label}"
    values = np.asarray(values, dtype=np.float32)
    if np.isnan(values).all():
        return message_figure(
            title,
            "The window explored holds no answer span, so no head attends to one."
            if metric == "answer"
            else "These attention weights do not say how their bias was made.",
        )
    n_layers, n_heads = values.shape
    scale = {"zmin": 0.0, "zmax": 1.0} if metric in SHARES else {}
    fig = go.Figure(
        go.Heatmap(
            z=np.round(values, 4),
            x=list(range(n_heads)),
            y=list(range(n_layers)),
            colorscale=_COLORSCALE,
            texttemplate="%{z:.2f}" if n_layers * n_heads <= 400 else None,
            textfont={"size": 9},
            colorbar={"thickness": 12, "tickformat": ".0%" if metric in SHARES else None},
            hovertemplate=f"layer %{{y}}, head %{{x}}<br>{label}: %{{z:.3f}}<extra></extra>",
            **scale,
        )
    )
    if layer is not None and head is not None:
        fig.add_shape(
            type="rect",
            x0=head - 0.5,
            x1=head + 0.5,
            y0=layer - 0.5,
            y1=layer + 0.5,
            line={"color": "#ff4136", "width": 3},
        )
    fig.update_xaxes(title_text="head", dtick=1 if n_heads <= 16 else None)
    fig.update_yaxes(title_text="layer", autorange="reversed", dtick=1 if n_layers <= 24 else None)
    return figure_layout(fig, title, height=360)


def rollout_map(
    rollout: np.ndarray,
    pack_share: np.ndarray,
    *,
    token_labels: Sequence[str],
    block_labels: Sequence[str],
    block_size: int,
    answer_block_range: tuple[int, int] | None = None,
) -> go.Figure:
    """Attention rollout through both routes (``explorer.rollout``): one panel per token followed.

    ``rollout`` is (layers, tokens, blocks): where the token's final representation draws from in each layer's
    input, layer 0 at the bottom being the embeddings; ``pack_share`` (layers, tokens) is the share of what each
    layer's attention moved that went through the pack slots, drawn as bars beside the map.
    """
    title = "Rollout through both routes: where [CLS] and the answer draw from, layer by layer"
    rollout = np.asarray(rollout, dtype=np.float32)
    if rollout.size == 0:
        return message_figure(title, "Ask a question, then open the explorer to see this.")
    n_layers, k, nb = rollout.shape
    specs = [[{}, {}] for _ in range(k)] + [[{}, None]]
    titles = [t for label in token_labels for t in (label, "via pack slots" if label == token_labels[0] else "")]
    fig = make_subplots(
        rows=k + 1,
        cols=2,
        specs=specs,
        shared_xaxes=True,
        column_widths=[0.84, 0.16],
        horizontal_spacing=0.03,
        row_heights=[0.95 / k] * k + [0.05],
        vertical_spacing=0.06,
        subplot_titles=titles,
    )
    layers = list(range(n_layers))
    for row, label in enumerate(token_labels, start=1):
        fig.add_trace(
            _heatmap(
                rollout[:, row - 1],
                np.arange(nb) * block_size,
                layers,
                showscale=row == 1,
                colorbar={**_log_colorbar("share"), "len": 0.8},
                hovertemplate=f"{label}<br>layer %{{y}}, tokens from %{{x}}<br>log10 share %{{z:.2f}}<extra></extra>",
            ),
            row=row,
            col=1,
        )
        _outline_answer(fig, answer_block_range, block_size, block_size, row=row, col=1)
        fig.add_trace(
            go.Bar(
                x=np.round(pack_share[:, row - 1].astype(np.float32), 4),
                y=layers,
                orientation="h",
                showlegend=False,
                marker={"color": "#9467bd"},
                hovertemplate="layer %{y}: %{x:.1%} via the pack slots<extra></extra>",
            ),
            row=row,
            col=2,
        )
        fig.update_yaxes(title_text="layer", dtick=1 if n_layers <= 24 else None, row=row, col=1)
        fig.update_yaxes(showticklabels=False, row=row, col=2)
        fig.update_xaxes(range=[0, 1], tickformat=".0%", row=row, col=2)
    fig.add_trace(_text_strip(block_labels, block_size), row=k + 1, col=1)
    fig.update_yaxes(visible=False, fixedrange=True, row=k + 1, col=1)
    fig.update_xaxes(title_text="input position (tokens)", row=k + 1, col=1)
    fig.update_annotations(font={"size": 11})
    return figure_layout(fig, title, height=110 + 130 * k)


_READ, _UNREAD, _BEST, _OTHER = "#1f77b4", "#c7c7c7", "#d62728", "#ff7f0e"


def reading_map(windows: Sequence[Any], answers: Sequence[Any], *, aimed: int | None = None) -> go.Figure:
    """How the reader went through the document: one mark per window, in document order.

    ``windows`` are the reading's ``littlebird.reader.WindowRecord`` (document order) and ``answers``
    its n-best (``Answer.window`` counts windows in reading order). Top row: each window's first-pass
    (BM25) score, dark where the model read the window, with its rank; middle row: the answerable
    probability of each window read; bottom row: each read window's best span score (a dot) and the
    n-best answers as ticks at their scores, the best in red. ``aimed``, a window index, is shaded:
    the window the explorer shows.
    """
    title = "Reading map: the first pass ranks the windows, the model reads the best ones"
    if not windows:
        return message_figure(title, "Ask a question to see which windows the reader read, and what it found in them.")
    x = list(range(len(windows)))  # plain numbers: a few per window, and the page reads them back
    read = [w.read is not None for w in windows]
    hover = [
        window_label(i, w)
        + (f"<br>BM25 {w.lexical_score:.2f}" if w.lexical_score is not None else "")
        + (
            ""
            if w.read is None
            else f"<br>answerable {w.answerable_probability:.0%}"
            + ("" if w.best_span_score is None else f", best span {w.best_span_score:.2f}")
        )
        for i, w in enumerate(windows)
    ]
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.06, row_heights=[0.4, 0.3, 0.3])
    fig.add_trace(
        go.Bar(
            x=x,
            y=[w.lexical_score or 0.0 for w in windows],
            text=[f"#{w.rank + 1}" for w in windows],
            textposition="outside",
            cliponaxis=False,
            marker={"color": [_READ if r else _UNREAD for r in read]},
            hovertext=hover,
            hovertemplate="%{hovertext}<extra></extra>",
            name="first pass",
            showlegend=False,
        ),
        row=1,
        col=1,
    )
    seen = [i for i, r in enumerate(read) if r]
    fig.add_trace(
        go.Scatter(
            x=seen,
            y=[windows[i].answerable_probability for i in seen],
            mode="markers+text",
            text=[str(windows[i].read + 1) for i in seen],
            textposition="middle right",  # above a 100% mark it was cut off
            marker={"color": _READ, "size": 8},
            hovertext=[hover[i] for i in seen],
            hovertemplate="%{hovertext}<extra></extra>",
            showlegend=False,
        ),
        row=2,
        col=1,
    )
    scored = [i for i in seen if windows[i].best_span_score is not None]
    fig.add_trace(
        go.Scatter(
            x=scored,
            y=[windows[i].best_span_score for i in scored],
            mode="markers",
            marker={"color": _READ, "size": 7},
            hovertext=[hover[i] for i in scored],
            hovertemplate="%{hovertext}<extra></extra>",
            showlegend=False,
        ),
        row=3,
        col=1,
    )
    by_reading = {w.read: i for i, w in enumerate(windows) if w.read is not None}
    ticks = [(rank, a, by_reading[a.window]) for rank, a in enumerate(answers) if a.window in by_reading]
    fig.add_trace(
        go.Scatter(
            x=[i for _, _, i in ticks],
            y=[a.score for _, a, _ in ticks],
            mode="markers",
            marker={
                "symbol": "line-ew-open",
                "size": 22,
                "line": {"width": 3},
                "color": [_BEST if rank == 0 else _OTHER for rank, _, _ in ticks],
            },
            hovertext=[
                f"#{rank + 1} “{' '.join(a.text.split())[:LABEL_CHARS]}” · {a.probability:.0%}<br>"
                f"{window_label(i, windows[i])}"
                for rank, a, i in ticks
            ],
            hovertemplate="%{hovertext}<extra></extra>",
            showlegend=False,
        ),
        row=3,
        col=1,
    )
    if aimed is not None and 0 <= aimed < len(windows):
        for row in (1, 2, 3):
            fig.add_vrect(
                x0=aimed - 0.5,
                x1=aimed + 0.5,
                fillcolor="rgba(255,201,77,0.35)",
                line={"width": 0},
                layer="below",
                row=row,
                col=1,
            )
    fig.update_yaxes(title_text="BM25", row=1, col=1)
    fig.update_yaxes(title_text="answerable", range=[-0.05, 1.15], tickformat=".0%", row=2, col=1)
    fig.update_yaxes(title_text="span score", row=3, col=1)
    fig.update_xaxes(
        title_text="window, in document order (shaded: the one explored)",
        row=3,
        col=1,
        dtick=1 if len(windows) <= 30 else None,
    )
    return figure_layout(fig, title, height=420)


def message_figure(title: str, message: str) -> go.Figure:
    """An empty figure that says why there is nothing to draw."""
    fig = go.Figure()
    fig.add_annotation(text=message, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return figure_layout(fig, title, height=160)


# The explorer's plots drawn from an attention summary, with their titles.
_SUMMARY_PLOTS = {
    "block_map": "Attention by block",
    "answer": "Where the answer's tokens looked",
    "pack": "What each pack slot read",
}
_READING_MAP = "Reading map"
_ATLAS = "Head atlas"


def explorer_off(note: str) -> dict[str, go.Figure]:
    """Every explorer plot (``block_map``, ``answer``, ``pack``, ``curves``, ``slopes``, ``reading_map``, ``atlas``,
    ``rollout``) as ``note``.

    For models the explorer cannot show, such as the BigBird and Longformer baselines,
    which have neither pack attention nor BiALiBi.
    """
    titles = {
        **_SUMMARY_PLOTS,
        "curves": "BiALiBi bias against distance",
        "slopes": "BiALiBi slopes per layer and head",
        "reading_map": _READING_MAP,
        "atlas": _ATLAS,
        "rollout": "Rollout through both routes",
    }
    return {key: message_figure(title, note) for key, title in titles.items()}


def explorer_figures(
    summary: AttentionSummary | None, slopes: dict[str, np.ndarray], *, layer: int, head: int, metric: str = "pack"
) -> dict[str, go.Figure]:
    """The explorer's figures for ``layer`` and ``head``.

    Keys: ``block_map``, ``answer``, ``pack`` (from the summary, or a message figure when
    there is none yet), ``atlas`` (the summary's ``metric`` for every head, ``layer`` and
    ``head`` outlined) and ``curves`` (from the BiALiBi ``slopes``, always available).
    """
    layers = slopes["alpha"].shape[0]
    layer = min(max(int(layer), 0), layers - 1)
    head = min(max(int(head), 0), slopes["alpha"].shape[1] - 1)
    b = summary.block_size if summary is not None else 64
    out = {
        "curves": bialibi_distance_curves(
            slopes["alpha"], slopes["beta"], slopes["gamma"], layer=layer, block_size=b, head=head
        )
    }
    if summary is None:
        note = "Ask a question, then open the explorer to see this."
        out.update({key: message_figure(title, note) for key, title in {**_SUMMARY_PLOTS, "atlas": _ATLAS}.items()})
        return out
    out["atlas"] = head_atlas(summary.head_metrics[metric], metric=metric, layer=layer, head=head)
    at = (layer, head)
    out["block_map"] = attention_block_map(
        summary.block_maps[at],
        block_size=b,
        pool=summary.pool,
        layer=layer,
        head=head,
        block_labels=summary.block_labels,
        answer_block_range=summary.answer_block_range,
        question_blocks=summary.question_blocks,
    )
    out["answer"] = answer_token_attention(
        summary.answer_blocks[at],
        summary.answer_pack[at],
        token_labels=summary.answer_tokens,
        block_labels=summary.block_labels,
        block_size=b,
        layer=layer,
        head=head,
    )
    out["pack"] = pack_slot_reads(
        summary.pack_reads[at],
        block_labels=summary.block_labels,
        block_size=b,
        layer=layer,
        head=head,
        answer_block_range=summary.answer_block_range,
    )
    return out
