"""The attention explorer's figures for a loaded model: the reading map of a question's windows, per head
from a window's summary, and the BiALiBi slopes.

A BigBird or Longformer baseline has no pack & unpack attention and no BiALiBi: each of its plots
then carries the model's ``explorer_note`` instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from littlebird.app import figures
from littlebird.app.models import LoadedModel, load_model

if TYPE_CHECKING:
    from littlebird.app.asking import ExplorerTarget


def explore(summary: figures.AttentionSummary | None, checkpoint: str | None, layer: int, head: int) -> dict[str, Any]:
    """The explorer's per-head figures after the user picks another layer or head."""
    return explorer_plots(summary, load_model(checkpoint), layer=layer, head=head)


def explorer_plots(summary: figures.AttentionSummary | None, loaded: LoadedModel, *, layer: int, head: int) -> dict[str, Any]:
    """``figures.explorer_figures`` for ``loaded``; for a baseline model, its ``explorer_note`` in each plot."""
    if loaded.explorer_note:
        return figures.explorer_off(loaded.explorer_note)
    return figures.explorer_figures(summary, loaded.slopes, layer=layer, head=head)


def slopes_figure(loaded: LoadedModel) -> Any:
    """The BiALiBi slopes heatmap of ``loaded``; for a baseline model, its ``explorer_note``."""
    if loaded.explorer_note:
        return figures.explorer_off(loaded.explorer_note)["slopes"]
    return figures.bialibi_heatmap(**loaded.slopes)


def reading_map_figure(target: "ExplorerTarget | None", checkpoint: str | None) -> Any:
    """The reading map of ``target``'s question, its window shaded (``figures.reading_map``); before a
    question, what to do; for a baseline model, its ``explorer_note``."""
    loaded = load_model(checkpoint)
    if loaded.explorer_note:
        return figures.explorer_off(loaded.explorer_note)["reading_map"]
    if target is None:
        return figures.reading_map([], [])
    return figures.reading_map(target.windows, target.answers, aimed=target.window)
