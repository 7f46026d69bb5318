"""The attention explorer's figures for a loaded model: the reading map of a question's windows, per head
from a window's summary, and the BiALiBi slopes.

A BigBird or Longformer baseline has no pack & unpack attention and no BiALiBi: each of its plots
then carries the model's ``explorer_note`` instead.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from littlebird.app.explorer import drawing
from littlebird.app.explorer.reductions import AttentionSummary
from littlebird.app.explorer.rollout import top_blocks
from littlebird.app.explorer.target import ExplorerTarget
from littlebird.app.models import LoadedModel, load_model
from littlebird.app.payloads import highlight_answers


def explore(
    summary: AttentionSummary | None, checkpoint: str | None, layer: int, head: int, metric: str = "pack"
) -> dict[str, Any]:
    """The explorer's per-head figures (and the head atlas, outlining the head) after the user picks another
    layer or head."""
    return explorer_plots(summary, load_model(checkpoint), layer=layer, head=head, metric=metric)


def explorer_plots(
    summary: AttentionSummary | None, loaded: LoadedModel, *, layer: int, head: int, metric: str = "pack"
) -> dict[str, Any]:
    """``drawing.explorer_figures`` for ``loaded``; for a baseline model, its ``explorer_note`` in each plot."""
    if loaded.explorer_note:
        return drawing.explorer_off(loaded.explorer_note)
    return drawing.explorer_figures(summary, loaded.slopes, layer=layer, head=head, metric=metric)


def atlas_figure(summary: AttentionSummary | None, checkpoint: str | None, metric: str, layer: int, head: int) -> Any:
    """The head atlas alone, after the user picks another metric."""
    return explore(summary, checkpoint, layer, head, metric)["atlas"]


def atlas_cells(summary: AttentionSummary | None, metric: str) -> list[tuple[str, str]]:
    """The head atlas's cells as (label, "layer,head") choices, the highest ``metric`` first (NaN last), for
    the menu that sets the layer and head: plotly clicks do not reach the server through ``gr.Plot``."""
    if summary is None:
        return []
    values = summary.head_metrics[metric]
    order = np.argsort(np.where(np.isnan(values), np.inf, -values), axis=None, kind="stable")
    cells = [divmod(int(i), values.shape[1]) for i in order]
    return [(f"layer {layer}, head {head}: {values[layer, head]:.3f}", f"{layer},{head}") for layer, head in cells]


def atlas_cell(choice: str) -> tuple[int, int]:
    """(layer, head) of an :func:`atlas_cells` value."""
    layer, head = choice.split(",")
    return int(layer), int(head)


def rollout_figure(summary: AttentionSummary | None, loaded: LoadedModel) -> Any:
    """The rollout through both routes of ``summary``'s window (``drawing.rollout_map``); before a summary, what
    to do; for a baseline model, its ``explorer_note``."""
    if loaded.explorer_note:
        return drawing.explorer_off(loaded.explorer_note)["rollout"]
    if summary is None:
        return drawing.rollout_map(
            np.zeros((0, 0, 0)), np.zeros((0, 0)), token_labels=(), block_labels=(), block_size=1
        )
    return drawing.rollout_map(
        summary.rollout,
        summary.rollout_pack_share,
        token_labels=summary.rollout_tokens,
        block_labels=summary.block_labels,
        block_size=summary.block_size,
        answer_block_range=summary.answer_block_range,
    )


def rollout_document(target: ExplorerTarget, summary: AttentionSummary | None) -> str:
    """The document view of ``target``'s question (the answers marked as after asking) with the top blocks of
    ``summary``'s rollout tinted, the strongest darkest, each saying its rank and share on hover."""
    tints = []
    if summary is not None:
        for rank, (block, share) in enumerate(top_blocks(summary.rollout, summary.rollout_tokens, summary.block_spans)):
            start, end = summary.block_spans[block]
            tints.append(
                (
                    start,
                    end,
                    f"rollout #{rank + 1}: {share:.1%} of what the "
                    f"{'answer' if len(summary.rollout_tokens) > 1 else '[CLS] token'} draws from",
                )
            )
    return highlight_answers(
        target.document.text,
        target.answers,
        no_answer=target.no_answer,
        tints=tints,
        page_starts=target.document.page_starts,
    )


def slopes_figure(loaded: LoadedModel) -> Any:
    """The BiALiBi slopes heatmap of ``loaded``; for a baseline model, its ``explorer_note``."""
    if loaded.explorer_note:
        return drawing.explorer_off(loaded.explorer_note)["slopes"]
    return drawing.bialibi_heatmap(**loaded.slopes)


def reading_map_figure(target: ExplorerTarget | None, checkpoint: str | None) -> Any:
    """The reading map of ``target``'s question, its window shaded (``drawing.reading_map``); before a
    question, what to do; for a baseline model, its ``explorer_note``."""
    loaded = load_model(checkpoint)
    if loaded.explorer_note:
        return drawing.explorer_off(loaded.explorer_note)["reading_map"]
    if target is None:
        return drawing.reading_map([], [])
    return drawing.reading_map(target.windows, target.answers, aimed=target.window)
