"""The explorer's "any token" view: one token of the explained window, the keys it may read in a layer and
head, and each key's score split into the content term q·k/√d and BiALiBi's term, with the resulting weight.

:func:`token_figure` draws an ``explorer.keys.TokenKeys`` and never touches torch.
"""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from littlebird.app.explorer.drawing import figure_layout, message_figure
from littlebird.app.explorer.keys import TokenKeys
from littlebird.app.explorer.reductions import LABEL_CHARS

TITLE = "Any token: its keys, scores and weights"

_CONTENT, _BIAS, _SCORE, _WEIGHT = "#1f77b4", "#ff7f0e", "#222222", "#2ca02c"
_GROUP_SHADES = {"pack": "rgba(148,103,189,0.10)", "block0": "rgba(255,201,77,0.20)", "window": "rgba(31,119,180,0.07)"}
MAX_TICKS = 64
"""Most key labels written under the axis; the others show on hover."""


def _short(text: str) -> str:
    """A key's text for a label: whitespace shown as '·', at most LABEL_CHARS characters."""
    text = " ".join(text.split()) or "·"
    return text[:LABEL_CHARS] + ("…" if len(text) > LABEL_CHARS else "")


def token_figure(keys: TokenKeys) -> go.Figure:
    """The token's keys in order (pack slots, block 0, its window): on top, each key's score as the
    content term q·k/√d and BiALiBi's term stacked (the dot is their sum, the logit); below, the weight
    the softmax gave it."""
    x = np.arange(len(keys.labels))
    where = [f"slot {p}" if i < keys.slots else f"token {p}" for i, p in enumerate(keys.positions.tolist())]
    hover = [f"{w}: “{_short(label)}”" for w, label in zip(where, keys.labels)]
    custom = np.stack([keys.content, keys.bias, keys.score, keys.weight], axis=-1).astype(np.float32)
    template = (
        "%{hovertext}<br>content q·k/√d %{customdata[0]:.3f}<br>BiALiBi %{customdata[1]:.3f}"
        "<br>score %{customdata[2]:.3f}<br>weight %{customdata[3]:.4f}<extra></extra>"
    )
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.06, row_heights=[0.6, 0.4])
    common = {"x": x, "hovertext": hover, "customdata": custom, "hovertemplate": template}
    fig.add_trace(go.Bar(y=keys.content, name="content q·k/√d", marker={"color": _CONTENT}, **common), row=1, col=1)
    fig.add_trace(go.Bar(y=keys.bias, name="BiALiBi bias", marker={"color": _BIAS}, **common), row=1, col=1)
    fig.add_trace(
        go.Scatter(y=keys.score, name="score (logit)", mode="markers", marker={"color": _SCORE, "size": 4}, **common),
        row=1,
        col=1,
    )
    fig.add_trace(go.Bar(y=keys.weight, name="weight", marker={"color": _WEIGHT}, **common), row=2, col=1)
    for kind, name, first, end in keys.groups():
        for row in (1, 2):
            fig.add_vrect(
                x0=first - 0.5,
                x1=end - 0.5,
                fillcolor=_GROUP_SHADES[kind],
                line={"width": 0},
                layer="below",
                row=row,
                col=1,
            )
        fig.add_annotation(
            x=(first + end - 1) / 2,
            y=1.0,
            xref="x",
            yref="paper",
            yanchor="bottom",
            text=name,
            showarrow=False,
            font={"size": 10},
        )
    step = max(1, math.ceil(len(x) / MAX_TICKS))
    fig.update_xaxes(
        tickvals=x[::step].tolist(),
        ticktext=[_short(keys.labels[i])[:12] for i in x[::step]],
        tickangle=-90,
        tickfont={"size": 8},
        row=2,
        col=1,
    )
    fig.update_yaxes(title_text="score", row=1, col=1)
    fig.update_yaxes(title_text="weight", rangemode="tozero", row=2, col=1)
    fig.update_layout(
        barmode="relative",
        bargap=0.1,
        legend={"orientation": "h", "x": 1, "xanchor": "right", "y": 1.13, "yanchor": "bottom"},
    )
    title = f"Token {keys.token} “{_short(keys.text)}”: its {len(x)} keys, layer {keys.layer} head {keys.head}"
    fig = figure_layout(fig, title, height=500)
    fig.update_layout(margin={"l": 60, "r": 20, "t": 80, "b": 70})
    return fig


def token_message(message: str) -> go.Figure:
    """The view with nothing to draw, saying why."""
    return message_figure(TITLE, message)
