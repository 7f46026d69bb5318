"""The page: the ``gr.Blocks`` layout, built panel by panel, each event wired next to its components.

The work behind the events lives in modules of its own, which take and return plain data:
``app.asking`` (a question, for the page and the /answer API), ``documents.sources``, ``app.models``,
``app.payloads``, ``app.explorer`` (the attention explorer's package) and ``app.examples``;
``app.cancellation`` says which questions are still wanted. Tests call those directly; the browser test checks the
wiring here. The panels: the document and the question (:func:`document_panel`), the answer
(:func:`answer_panel`), the attention explorer (:func:`explorer_panel`) and the settings (:func:`settings_panel`);
:func:`build_demo` lays them out and wires what crosses panels (asking, loading a checkpoint). A handler returns a
dict keyed by the components it updates (Gradio's idiom); the rest stay as they are.
"""

from __future__ import annotations

import atexit
import dataclasses
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import gradio as gr

from littlebird.answer_text import get_kiwi
from littlebird.app.asking import Settings, answer_document, ask
from littlebird.app.cancellation import Cancellation
from littlebird.app.examples import EXAMPLES_DIR, choose_example, load_examples
from littlebird.app.explorer.capture import ReadingInputs
from littlebird.app.explorer.explaining import after_reading, explain, explain_token, warm_explorer
from littlebird.app.explorer.export import export_view
from littlebird.app.explorer.head_metrics import METRICS
from littlebird.app.explorer.plots import (
    atlas_cell,
    atlas_cells,
    atlas_figure,
    explore,
    explorer_plots,
    reading_map_figure,
    rollout_document,
    rollout_figure,
    slopes_figure,
)
from littlebird.app.explorer.target import Aim, AnswerChoice, ExplorerTarget, WindowChoice
from littlebird.app.explorer.token_figure import token_message
from littlebird.app.models import DEFAULT_CHECKPOINT, CheckpointError, LoadedModel, load_model
from littlebird.app.qa import warm_up
from littlebird.app.turns import serve_in_turn
from littlebird.command_options import option_fields, sliders
from littlebird.documents import formats
from littlebird.documents.errors import DocumentError
from littlebird.documents.limits import MAX_HTML_CHARACTERS, Limits
from littlebird.reader import DEFAULT_READING, ReadingOptions, ReadingStopped, no_answer_threshold
from littlebird.window_ranking import term_table

_DOCUMENT_CSS = """
.lb-doc { position: relative; max-height: 520px; overflow-y: auto; white-space: pre-wrap; line-height: 1.6;
          padding: 12px 16px; border: 1px solid var(--border-color-primary); border-radius: 8px;
          background: var(--background-fill-primary); font-size: 15px; word-break: keep-all; overflow-wrap: anywhere; }
.lb-doc mark { border-radius: 3px; padding: 0 1px; color: inherit; }
.lb-doc .lb-best { background: #ffc94d; box-shadow: 0 0 0 2px #e0a000; }
.lb-doc .lb-best-weak { background: #ffe8a8; outline: 1px dashed #c08a00; }
.lb-doc .lb-alt { background: #fff1c9; }
.lb-doc .lb-tint { border-radius: 3px; background: rgba(31, 119, 180, .14); }
.lb-doc .lb-tint-1 { background: rgba(31, 119, 180, .34); } .lb-doc .lb-tint-2 { background: rgba(31, 119, 180, .27); }
.lb-doc .lb-tint-3 { background: rgba(31, 119, 180, .21); }
.lb-doc .lb-page::before { content: "page " attr(data-page); display: inline-block; margin: 0 6px 0 0; padding: 0 6px;
          border-radius: 8px; font-size: 11px; line-height: 1.5; color: var(--body-text-color-subdued);
          border: 1px solid var(--border-color-primary); user-select: none; }
.lb-empty { color: var(--body-text-color-subdued); padding: 12px 16px; }
"""

_ANSWER_CSS = """
.lb-card { padding: 12px 16px; border-radius: 8px; border: 1px solid var(--border-color-primary); }
.lb-label { font-size: 12px; text-transform: uppercase; letter-spacing: .05em; color: var(--body-text-color-subdued); }
.lb-answer { font-size: 22px; font-weight: 600; margin: 4px 0; }
.lb-answer.lb-none { color: #b45309; }
.lb-meta, .lb-note { font-size: 13px; color: var(--body-text-color-subdued); margin: 4px 0 0; }
.lb-nbest { width: 100%; margin-top: 10px; border-collapse: collapse; font-size: 13px; }
.lb-nbest th { text-align: left; font-weight: 600; color: var(--body-text-color-subdued);
          border-bottom: 1px solid var(--border-color-primary); }
.lb-nbest td, .lb-nbest th { padding: 3px 6px; vertical-align: top; }
.lb-nbest tr:first-child td { font-weight: 600; }
.lb-nbest .lb-text { word-break: keep-all; overflow-wrap: anywhere; }
.lb-scan { margin: 10px 0 0; }
.lb-scan img { display: block; max-width: 100%; height: auto; border: 1px solid var(--border-color-primary);
          border-radius: 4px; }
.lb-scan figcaption { font-size: 12px; color: var(--body-text-color-subdued); margin-top: 2px; }
"""

# Scroll the document box (not the page) so the best answer sits a third of the way down,
# each time a new answer arrives.
_SCROLL_TO_ANSWER_JS = """
const scrollToAnswer = () => {
  const box = element.querySelector('.lb-doc');
  const mark = element.querySelector('#lb-answer');
  if (box && mark) { box.scrollTop = Math.max(0, mark.offsetTop - box.clientHeight / 3); }
};
watch('value', scrollToAnswer);
scrollToAnswer();
"""

_EMPTY_DOCUMENT = '<div class="lb-empty">The document appears here, with the answer highlighted.</div>'
_EMPTY_ANSWER = (
    '<div class="lb-card"><div class="lb-label">Answer</div>'
    '<div class="lb-meta">Ask a question to see the answer.</div></div>'
)


def intro(limits: Limits, reading: ReadingOptions = DEFAULT_READING) -> str:
    """The page's header: what the app does, with the numbers the code runs with."""
    seconds = (
        "no time limit" if limits.question_seconds is None else f"at most {limits.question_seconds:g} s a question"
    )
    return f"""# LittleBird QA
Ask questions about long Korean or English documents, answered by **LittleBird** (Lee et al., 2022):
sliding-window attention, BiALiBi position biases and pack & unpack attention.
Paste a document (up to {limits.max_characters:,} characters, or {MAX_HTML_CHARACTERS // 1_000_000} MB of HTML),
give a web address or upload a file ({formats.label_list()}), or start from an
example; a PDF's answer comes with its page. The model reads windows of
{reading.max_length:,} tokens; of a long document, the {reading.max_windows} whose words best match the
question, a short glimpse of each, and in full at most the {reading.glimpse_keep} that look likeliest to hold
the answer ({seconds}); the answer says how much it read."""


def aim_value(aim: Aim) -> str:
    """The explorer's aim as the value of the page's menu ("answer:K" or "window:W")."""
    return f"answer:{aim.index}" if isinstance(aim, AnswerChoice) else f"window:{aim.index}"


def aim_of(value: str) -> Aim:
    """The aim of a value of the page's menu (:func:`aim_value`)."""
    kind, _, number = (value or "").partition(":")
    if kind not in ("answer", "window") or not number.isdigit():
        raise ValueError(f"the explorer's menu holds 'answer:K' or 'window:W', got {value!r}")
    return AnswerChoice(int(number)) if kind == "answer" else WindowChoice(int(number))


def aim_menu(target: ExplorerTarget | None) -> gr.Dropdown:
    """The menu that aims the explorer: ``target``'s choices, its aim selected; empty without a target."""
    if target is None:
        return gr.Dropdown(choices=[], value=None)
    return gr.Dropdown(
        choices=[(label, aim_value(aim)) for label, aim in target.choices()], value=aim_value(target.aim)
    )


WARM_EXIT_SECONDS = 30  # the longest a stopping app waits for its warm-up, all threads together
_STOP_WARMING = threading.Event()  # set when the process exits: the warm-up stops between windows


def _warm_model(loaded: LoadedModel, model_path: str | None) -> None:
    """The app's start, in the background: one question through the reader, then the explorer opened once."""
    try:
        warm_up(loaded.model, loaded.tokenizer, should_stop=_STOP_WARMING.is_set)
        if not _STOP_WARMING.is_set():
            warm_explorer(model_path, should_stop=_STOP_WARMING.is_set)
    except ReadingStopped:
        pass


def _end_warming(threads: list[threading.Thread]) -> None:
    """At exit, let the warm-up threads end before the interpreter does: a thread still inside torch or Kiwi
    while the process tears down their libraries aborts it ("terminate called without an active exception") or
    hangs it, so a server stopped during its warm-up (Ctrl-C, a Space restarting) would not stop cleanly."""
    _STOP_WARMING.set()
    deadline = time.monotonic() + WARM_EXIT_SECONDS
    for thread in threads:
        thread.join(timeout=max(0.0, deadline - time.monotonic()))


@dataclass(frozen=True)
class PageState:
    """What the page keeps per session, beside its components."""

    checkpoint: gr.State  # the checkpoint the settings loaded last
    summary: gr.State  # the explorer's summary of the window it shows, once computed
    target: gr.State  # the window the explorer shows, of the last answer
    explorer_open: gr.State
    question_number: gr.State  # of this page's newest question: Cancellation.new_question


def page_state(checkpoint: str) -> PageState:
    """The session's state, the summary and target let go of when a session idles (~12 MB for a 16K-token window)."""
    return PageState(
        gr.State(checkpoint),
        gr.State(None, time_to_live=1800),
        gr.State(None, time_to_live=1800),
        gr.State(False),
        gr.State(0),
    )


@dataclass(frozen=True)
class DocumentPanel:
    """The document's source (paste, address, upload or an example) and the question."""

    source: gr.State  # the tab in use: "paste", "url" or "upload"
    tabs: gr.Tabs
    pasted: gr.Textbox
    url: gr.Textbox
    upload: gr.File
    question: gr.Textbox
    ask_button: gr.Button


def document_panel(examples: list) -> DocumentPanel:
    """The document tabs, the examples (which fill a tab and suggest questions) and the question box."""
    source = gr.State("paste")
    with gr.Tabs(selected="paste") as tabs:
        with gr.Tab("Paste", id="paste") as paste_tab:
            pasted = gr.Textbox(
                label="Document text or HTML",
                lines=8,
                max_lines=8,
                elem_id="lb-paste",
                placeholder="Paste a document here, or pick an example below.",
            )
        with gr.Tab("URL", id="url") as url_tab:
            url = gr.Textbox(
                label="Web page address", placeholder="https://ko.wikipedia.org/wiki/...", elem_id="lb-url"
            )
        with gr.Tab("Upload", id="upload") as upload_tab:
            upload = gr.File(
                label=f"{formats.label_list()} file",
                file_types=list(formats.upload_suffixes()),
                type="filepath",
                elem_id="lb-upload",
            )
    for tab, name in ((paste_tab, "paste"), (url_tab, "url"), (upload_tab, "upload")):
        tab.select(lambda name=name: name, None, source, api_visibility="private", queue=False)

    example = gr.Dropdown(
        choices=[e.label for e in examples], value=None, label="Example documents", elem_id="lb-example"
    )
    with gr.Row():
        question = gr.Textbox(
            label="Question", placeholder="Ask in Korean or English, then press Enter", scale=5, elem_id="lb-question"
        )
        ask_button = gr.Button("Ask", variant="primary", scale=1, min_width=80, elem_id="lb-ask")
    suggestions = gr.Radio(choices=[], label="Suggested questions", visible=False, elem_id="lb-suggestions")

    def on_example(label):
        if not label:
            return gr.skip()
        text, path, questions, first = choose_example(label)
        tab = "paste" if path is None else "upload"  # a PDF example is uploaded, as a user would
        chosen = {pasted: text, upload: path}
        return {
            **{box: value for box, value in chosen.items() if value is not None},
            tabs: gr.Tabs(selected=tab),
            source: tab,
            suggestions: gr.Radio(choices=questions, value=None, visible=True),
            question: first,
        }

    example.change(
        on_example,
        example,
        [pasted, upload, tabs, source, suggestions, question],
        api_visibility="private",
        queue=False,
    )
    suggestions.input(lambda q: q or gr.skip(), suggestions, question, api_visibility="private", queue=False)
    return DocumentPanel(source, tabs, pasted, url, upload, question, ask_button)


@dataclass(frozen=True)
class AnswerPanel:
    """The answer card, the reading's figures and the document with the answers marked."""

    answer: gr.HTML
    stats: gr.Markdown
    document: gr.HTML  # rendered where the page lays it out, under the row of the document and the answer


def answer_panel() -> AnswerPanel:
    """The answer card and the stats line here; the document view, unrendered, for :meth:`gr.HTML.render`."""
    answer = gr.HTML(_EMPTY_ANSWER, css_template=_ANSWER_CSS, js_on_load=None, elem_id="lb-answer-card")
    stats = gr.Markdown("", elem_id="lb-stats")
    document = gr.HTML(
        _EMPTY_DOCUMENT,
        css_template=_DOCUMENT_CSS,
        js_on_load=_SCROLL_TO_ANSWER_JS,
        elem_id="lb-document",
        render=False,
    )
    return AnswerPanel(answer, stats, document)


_EXPLORER_HELP = (
    "The reading map shows every window of the document: how the first pass ranked it, and what the "
    "model made of those it read. The plots below show one window, one layer and head at a time: the "
    "best answer's window, or the one picked under the map. Opening the explorer runs that window again "
    "to collect its attention. Colours are log-scaled weights. "
    "Hover the grey strip under a plot to see which text a block holds. The head atlas gives one number "
    "per layer and head of the window (pick a metric); its menu moves the sliders to a head. The rollout "
    "follows [CLS] and the answer's first and last tokens down the layers, through the window and the "
    "pack slots, with the residual; the document tints the blocks the answer draws most from. The token "
    "view splits each score of one token (pick it by position) into its content and BiALiBi terms."
)
_NO_TOKEN_YET = "Ask a question, then open the explorer to see this."


@dataclass(frozen=True)
class ExplorerPanel:
    """The attention explorer: the reading map, one window's plots for a layer and head, the head atlas, the
    rollout, the token view and the export."""

    box: gr.Accordion
    reading_map: gr.Plot
    aim: gr.Dropdown
    layer: gr.Slider
    head: gr.Slider
    block_map: gr.Plot
    answer_plot: gr.Plot
    pack_plot: gr.Plot
    token: gr.Slider
    token_plot: gr.Plot
    metric: gr.Radio
    atlas_cell_menu: gr.Dropdown
    atlas_plot: gr.Plot
    rollout_plot: gr.Plot
    slopes_plot: gr.Plot
    curves_plot: gr.Plot
    export_button: gr.Button
    export_file: gr.File

    def plots(self, plots: dict) -> dict:
        """The explorer's plots keyed by their component, from :func:`explore`'s (or ``explorer_plots``') dict."""
        return {
            self.block_map: plots["block_map"],
            self.answer_plot: plots["answer"],
            self.pack_plot: plots["pack"],
            self.curves_plot: plots["curves"],
            self.atlas_plot: plots["atlas"],
        }


def explorer_panel(loaded: LoadedModel, checkpoint: str) -> ExplorerPanel:
    """The explorer's components, empty until a question is answered and the explorer opened."""
    empty = explorer_plots(None, loaded, layer=0, head=0)
    with gr.Accordion("Attention explorer", open=False, elem_id="lb-explorer") as box:
        gr.Markdown(_EXPLORER_HELP)
        reading_map = gr.Plot(reading_map_figure(None, checkpoint), label="Reading map", elem_id="lb-reading-map")
        aim = gr.Dropdown(
            choices=[],
            value=None,
            label="Explore the window of",
            elem_id="lb-aim",
            info="an n-best answer, or any window of the document",
        )
        with gr.Row():
            layer = gr.Slider(0, loaded.num_layers - 1, value=0, step=1, label="Layer", elem_id="lb-layer")
            head = gr.Slider(0, loaded.num_heads - 1, value=0, step=1, label="Head", elem_id="lb-head")
        block_map = gr.Plot(empty["block_map"], label="Attention by block", elem_id="lb-plot-blocks")
        with gr.Row():
            answer_plot = gr.Plot(empty["answer"], label="Answer tokens", elem_id="lb-plot-answer")
            pack_plot = gr.Plot(empty["pack"], label="Pack slots", elem_id="lb-plot-pack")
        token = gr.Slider(
            0,
            1,
            value=0,
            step=1,
            label="Token",
            elem_id="lb-token",
            info="any token of the window, by position: 0 is [CLS], the question follows it",
        )
        token_plot = gr.Plot(token_message(_NO_TOKEN_YET), label="Any token", elem_id="lb-token-view")
        with gr.Row(equal_height=False):
            with gr.Column(scale=1, min_width=220):
                metric = gr.Radio(
                    [(label, name) for name, label in METRICS.items()],
                    value="pack",
                    label="Head atlas metric",
                    elem_id="lb-atlas-metric",
                )
                atlas_cell_menu = gr.Dropdown(
                    choices=[],
                    value=None,
                    label="Show a head of the atlas",
                    info="highest first",
                    elem_id="lb-atlas-cell",
                )
            atlas_plot = gr.Plot(empty["atlas"], label="Head atlas", elem_id="lb-head-atlas", scale=3)
        rollout_plot = gr.Plot(rollout_figure(None, loaded), label="Rollout", elem_id="lb-rollout")
        with gr.Row():
            slopes_plot = gr.Plot(slopes_figure(loaded), label="BiALiBi slopes", elem_id="lb-plot-slopes")
            curves_plot = gr.Plot(empty["curves"], label="BiALiBi curves", elem_id="lb-plot-curves")
        with gr.Row(equal_height=False):
            export_button = gr.Button("Export this view (.npz with a JSON)", scale=1, elem_id="lb-export-button")
            export_file = gr.File(
                label="The window's summary, with the question, window, layer and head",
                interactive=False,
                scale=3,
                elem_id="lb-export",
            )
    return ExplorerPanel(
        box,
        reading_map,
        aim,
        layer,
        head,
        block_map,
        answer_plot,
        pack_plot,
        token,
        token_plot,
        metric,
        atlas_cell_menu,
        atlas_plot,
        rollout_plot,
        slopes_plot,
        curves_plot,
        export_button,
        export_file,
    )


@dataclass(frozen=True)
class Explaining:
    """The event that computes the explorer's summary of its target: after opening, aiming and asking."""

    fn: Callable
    inputs: list
    outputs: list

    def then(self, event, model_events: dict) -> Any:
        """Run it after ``event`` (a Gradio event's dependency)."""
        return event.then(
            self.fn, self.inputs, self.outputs, api_visibility="private", show_progress="minimal", **model_events
        )


def explaining(explorer: ExplorerPanel, state: PageState, answers: AnswerPanel) -> Explaining:
    """The attention of the target's window, computed once per target and only while the explorer is open."""
    e = explorer

    def on_explain(target, summary, is_open, layer, head, metric):
        if not is_open or target is None or summary is not None:
            return gr.skip()
        summary, plots, _ = explain(target, layer=int(layer), head=int(head), metric=metric)
        keys, token_figure = explain_token(target, layer=int(layer), head=int(head))
        tokens = gr.Slider(maximum=keys.n_tokens - 1, value=keys.token) if keys else gr.Slider(maximum=1, value=0)
        return {
            state.summary: summary,
            **e.plots(plots),
            e.atlas_cell_menu: gr.Dropdown(choices=atlas_cells(summary, metric), value=None),
            e.token: tokens,
            e.token_plot: token_figure,
            e.rollout_plot: plots["rollout"],
            answers.document: rollout_document(target, summary),
        }

    inputs = [state.target, state.summary, state.explorer_open, e.layer, e.head, e.metric]
    outputs = [
        state.summary,
        e.block_map,
        e.answer_plot,
        e.pack_plot,
        e.curves_plot,
        e.atlas_plot,
        e.atlas_cell_menu,
        e.token,
        e.token_plot,
        e.rollout_plot,
        answers.document,
    ]
    return Explaining(on_explain, inputs, outputs)


def wire_explorer(explorer: ExplorerPanel, state: PageState, explained: Explaining, model_events: dict) -> None:
    """The explorer's own events: opening and aiming it, its sliders, the atlas, the token view and the export."""
    e = explorer
    quiet = {"api_visibility": "private", "show_progress": "minimal", "trigger_mode": "always_last"}

    def on_token(target, summary, layer, head, token):
        """Another token, layer or head; before the explorer has opened on the target, nothing (it draws
        the view as it opens). It runs the window again only if the kept windows no longer hold it."""
        if summary is None:
            return gr.skip()
        return explain_token(target, layer=int(layer), head=int(head), token=int(token))[1]

    # input, not change: the explorer's opening sets the slider and draws the view itself
    gr.on(
        [e.layer.change, e.head.change, e.token.input],
        on_token,
        [state.target, state.summary, e.layer, e.head, e.token],
        e.token_plot,
        **quiet,
        **model_events,
    )

    def on_export(summary, target, layer, head, metric, token):
        if summary is None or target is None:
            raise gr.Error(
                "Open the explorer on an answer first: there is no summary to export yet.", print_exception=False
            )
        keys, _ = explain_token(target, layer=int(layer), head=int(head), token=int(token))
        return str(export_view(target, summary, layer=int(layer), head=int(head), metric=metric, token=keys))

    e.export_button.click(
        on_export,
        [state.summary, state.target, e.layer, e.head, e.metric, e.token],
        e.export_file,
        api_visibility="private",
        show_progress="minimal",
        **model_events,
    )

    def on_explore(summary, checkpoint, layer, head, metric):
        return e.plots(explore(summary, checkpoint, int(layer), int(head), metric))

    # "change" also covers typing in the sliders' number boxes; while a slider is dragged,
    # always_last drops the intermediate values instead of queueing a redraw for each.
    gr.on(
        [e.layer.change, e.head.change],
        on_explore,
        [state.summary, state.checkpoint, e.layer, e.head, e.metric],
        [e.block_map, e.answer_plot, e.pack_plot, e.curves_plot, e.atlas_plot],
        **quiet,
    )

    def on_metric(summary, checkpoint, metric, layer, head):
        return {
            e.atlas_plot: atlas_figure(summary, checkpoint, metric, int(layer), int(head)),
            e.atlas_cell_menu: gr.Dropdown(choices=atlas_cells(summary, metric), value=None),
        }

    e.metric.change(
        on_metric,
        [state.summary, state.checkpoint, e.metric, e.layer, e.head],
        [e.atlas_plot, e.atlas_cell_menu],
        **quiet,
    )
    # a head picked in the atlas's menu moves the sliders, whose change redraws the plots
    e.atlas_cell_menu.input(
        lambda choice: atlas_cell(choice) if choice else gr.skip(),
        e.atlas_cell_menu,
        [e.layer, e.head],
        api_visibility="private",
        queue=False,
    )

    def on_aim(target, choice):
        """The explorer turned to another answer or window: its summary is computed again, if open."""
        if target is None or not choice or aim_of(choice) == target.aim:
            return gr.skip()
        target = target.aimed(aim_of(choice))
        return {state.target: target, state.summary: None, e.reading_map: reading_map_figure(target, target.checkpoint)}

    explained.then(
        e.box.expand(lambda: True, None, state.explorer_open, api_visibility="private", queue=False), model_events
    )
    explained.then(
        e.aim.input(
            on_aim,
            [state.target, e.aim],
            [state.target, state.summary, e.reading_map],
            api_visibility="private",
            queue=False,
        ),
        model_events,
    )
    e.box.collapse(lambda: False, None, state.explorer_open, api_visibility="private", queue=False)


@dataclass(frozen=True)
class SettingsPanel:
    """The checkpoint and the reading's page settings."""

    checkpoint: gr.Textbox
    load_button: gr.Button
    status: gr.Markdown
    sliders: dict[str, gr.Slider]  # one per field of littlebird.reading_options.PAGE_SETTINGS

    def reading(self, values: dict) -> ReadingOptions:
        """The ReadingOptions of the sliders' ``values`` (keyed by component), each of its field's type; the
        other fields at their defaults."""
        kinds = {field.name: kind for field, kind, _ in option_fields(ReadingOptions)}
        return replace(DEFAULT_READING, **{name: kinds[name](values[slider]) for name, slider in self.sliders.items()})


def slider_value(loaded: LoadedModel, reading: ReadingOptions, name: str) -> float:
    """What the slider of the page setting ``name`` shows for ``reading``: its value, and for a no-answer
    threshold left to the checkpoint (None), the loaded checkpoint's own."""
    if name == "no_answer_threshold":
        return no_answer_threshold(loaded.model, reading)
    return getattr(reading, name)


def settings_panel(loaded: LoadedModel, checkpoint: str, reading: ReadingOptions) -> SettingsPanel:
    """The checkpoint box and a slider per page setting, each with its range, step, label and help from the
    declaration of :class:`ReadingOptions`, set to ``reading``."""
    helps = {field.name: field.metadata["help"] for field in dataclasses.fields(ReadingOptions)}
    with gr.Accordion("Settings", open=False, elem_id="lb-settings"):
        with gr.Row():
            box = gr.Textbox(value=checkpoint, label="Checkpoint (local directory or Hub id)", scale=4)
            load_button = gr.Button("Load", scale=1, min_width=80)
        status = gr.Markdown(loaded.status)
        with gr.Row():
            shown = {
                name: gr.Slider(
                    slider.low,
                    slider.high,
                    value=slider_value(loaded, reading, name),
                    step=slider.step,
                    label=slider.label,
                    info=helps[name],
                    elem_id="lb-" + name.replace("_", "-"),
                )
                for name, slider in sliders(ReadingOptions).items()
            }
    return SettingsPanel(box, load_button, status, shown)


def wire_loading(
    settings: SettingsPanel, state: PageState, explorer: ExplorerPanel, warning: gr.Markdown, model_events: dict
) -> None:
    """Loading another checkpoint: its status and warning, and an explorer emptied for its layers and heads."""
    e = explorer
    threshold = settings.sliders["no_answer_threshold"]

    def on_load(path):
        try:
            new = load_model(path)
        except CheckpointError as error:
            raise gr.Error(str(error), print_exception=False) from None
        plots = explorer_plots(None, new, layer=0, head=0)  # the old summary belongs to the old model
        return {
            state.checkpoint: new.checkpoint,
            settings.status: new.status,
            warning: gr.Markdown(f"⚠️ {new.warning}" if new.warning else "", visible=bool(new.warning)),
            e.layer: gr.Slider(maximum=new.num_layers - 1, value=0),
            e.head: gr.Slider(maximum=new.num_heads - 1, value=0),
            e.slopes_plot: slopes_figure(new),
            state.summary: None,
            **e.plots(plots),
            state.target: None,
            e.reading_map: reading_map_figure(None, new.checkpoint),
            e.aim: gr.Dropdown(choices=[], value=None),
            e.atlas_cell_menu: gr.Dropdown(choices=[], value=None),
            e.token_plot: token_message(_NO_TOKEN_YET),
            e.rollout_plot: rollout_figure(None, new),
            threshold: gr.Slider(value=no_answer_threshold(new.model, DEFAULT_READING)),  # the new checkpoint's
        }

    settings.load_button.click(
        on_load,
        settings.checkpoint,
        [
            state.checkpoint,
            settings.status,
            warning,
            e.layer,
            e.head,
            e.slopes_plot,
            state.summary,
            e.block_map,
            e.answer_plot,
            e.pack_plot,
            e.curves_plot,
            state.target,
            e.reading_map,
            e.aim,
            e.atlas_plot,
            e.atlas_cell_menu,
            e.token_plot,
            e.rollout_plot,
            threshold,
        ],
        api_visibility="private",
        **model_events,
    )


def wire_asking(
    documents: DocumentPanel,
    answers: AnswerPanel,
    settings: SettingsPanel,
    explorer: ExplorerPanel,
    state: PageState,
    explained: Explaining,
    cancellation: Cancellation,
    *,
    allow_local_urls: bool,
    model_events: dict,
) -> None:
    """Asking reads the document tabs and the settings, and fills the answer, the document and the explorer.

    The question is numbered at once, outside the queue, so that an earlier one still being read stops
    after its current window; always_last then runs the newest question once the earlier one has ended."""
    d = documents

    def on_new_question(request: gr.Request):
        return cancellation.new_question(request.session_hash)

    def on_ask(values: dict, request: gr.Request, progress=gr.Progress()):
        checkpoint = values[state.checkpoint]
        settings_now = Settings(checkpoint, settings.reading(values))
        question = values[d.question]
        kept = ReadingInputs()  # the layer inputs of the windows read, so the explorer opens without a pass
        with cancellation.answering(request.session_hash, values[state.question_number]) as should_stop:
            try:
                view = ask(
                    values[d.source],
                    question,
                    settings_now,
                    pasted=values[d.pasted],
                    url=values[d.url],
                    upload=values[d.upload],
                    allow_local=allow_local_urls,
                    report=lambda f, m: progress(f, desc=m),
                    should_stop=should_stop,
                    observe=kept.keeping,
                )
            except (DocumentError, CheckpointError) as error:
                raise gr.Error(str(error), print_exception=False) from None
            except ReadingStopped:  # a newer question replaces this one, or nobody is left to see it
                return gr.skip()
        target = after_reading(view, question, settings_now, kept)
        return {
            answers.answer: view.answer_html,
            answers.document: view.document_html,
            answers.stats: view.stats,
            state.target: target,
            state.summary: None,
            explorer.reading_map: reading_map_figure(target, checkpoint),
            explorer.aim: aim_menu(target),
        }

    asked = gr.on(
        [d.ask_button.click, d.question.submit],
        on_new_question,
        None,
        state.question_number,
        api_visibility="private",
        queue=False,
        show_progress="hidden",
    )
    answered = asked.then(
        on_ask,
        {
            state.question_number,
            d.source,
            d.pasted,
            d.url,
            d.upload,
            d.question,
            state.checkpoint,
            *settings.sliders.values(),
        },
        [
            answers.answer,
            answers.document,
            answers.stats,
            state.target,
            state.summary,
            explorer.reading_map,
            explorer.aim,
        ],
        api_visibility="private",
        trigger_mode="always_last",
        **model_events,
    )
    # the answer shows first; an open explorer then draws the new answer's window
    answered.success(
        explained.fn,
        explained.inputs,
        explained.outputs,
        api_visibility="private",
        show_progress="minimal",
        **model_events,
    )


def wire_api(
    checkpoint: str, reading: ReadingOptions, cancellation: Cancellation, *, allow_local_urls: bool, model_events: dict
) -> None:
    """The /answer endpoint, reading as the page opens."""

    def answer(document: str, question: str, request: gr.Request) -> dict:
        """Answer a question about a document.

        Args:
            document: the document's text or HTML, or the http(s) address of a web page.
            question: the question, in Korean or English.

        Returns:
            JSON with ``answer`` (null when no answer was found), ``score``, ``probability``,
            ``start`` and ``end`` (character offsets into ``text``, the cleaned document),
            ``no_answer``, ``answerable_probability``, ``n_best`` (a list of {answer, score,
            probability, start, end}), ``message``, ``n_tokens``, ``n_windows``, ``device``
            and ``timings`` (seconds per stage). When the time per question ran out, ``message``
            says how much of the document was read. A document over the size limit (see
            ``documents/limits.py``) is refused with an error that gives its size and the limit.
        """
        with cancellation.answering(request.session_hash) as should_stop:
            try:
                return answer_document(
                    document,
                    question,
                    checkpoint=checkpoint,
                    reading=reading,
                    allow_local=allow_local_urls,
                    should_stop=should_stop,
                )
            except (DocumentError, CheckpointError) as error:
                raise gr.Error(str(error), print_exception=False) from None
            except ReadingStopped:
                raise gr.Error("The question was stopped: its client has gone.", print_exception=False) from None

    gr.api(answer, api_name="answer", **model_events)


def _start_warming(loaded: LoadedModel, model_path: str | None) -> None:
    """Kiwi (Korean answer trimming), the first pass's term table and one question through the reader take seconds
    to build: warm them in the background now, not on the first question."""
    warming = [
        threading.Thread(target=get_kiwi, name="warm-kiwi", daemon=True),
        threading.Thread(target=term_table, args=(loaded.tokenizer,), name="warm-terms", daemon=True),
        threading.Thread(target=_warm_model, args=(loaded, model_path), name="warm-model", daemon=True),
    ]
    for thread in warming:
        thread.start()
    atexit.register(_end_warming, warming)


def build_demo(
    model_path: str | None = None,
    *,
    reading: ReadingOptions = DEFAULT_READING,
    allow_local_urls: bool = False,
    concurrency_limit: int | None = None,
    max_queue: int = 64,
) -> gr.Blocks:
    """Build the Gradio Blocks app (queue configured; call ``.launch()`` on it).

    ``model_path`` is the default checkpoint (None: ``assets/littlebird-qa``); it is loaded
    here, once, so the first question does not wait for it. ``reading`` sets the settings' sliders as the page
    opens and the /answer API's reading (``littlebird serve``'s flags). ``concurrency_limit`` bounds
    how many questions run the model at once (default: ``LITTLEBIRD_CONCURRENCY`` or 2;
    the rest wait in a queue of at most ``max_queue``, the clients served in turn: ``app.turns``).
    ``allow_local_urls`` lets the URL source fetch loopback addresses, for tests only.

    A question the page asks again, or whose client has gone, stops between the model's windows
    (``app.cancellation``).
    """
    Settings(model_path, reading)  # the page's settings within the sliders' ranges, or a ValueError saying which
    loaded = load_model(model_path)
    _start_warming(loaded, model_path)
    checkpoint = model_path or DEFAULT_CHECKPOINT
    limit = concurrency_limit or int(os.environ.get("LITTLEBIRD_CONCURRENCY", "2"))
    examples = load_examples()
    gr.set_static_paths([str(EXAMPLES_DIR)])  # a PDF example goes into the upload box, which serves it from there
    model_events = {"concurrency_limit": limit, "concurrency_id": "model"}
    cancellation = Cancellation()

    with gr.Blocks(title="LittleBird QA") as demo:
        gr.Markdown(intro(Limits.from_environment(), reading))
        warning = gr.Markdown(
            f"⚠️ {loaded.warning}" if loaded.warning else "", visible=bool(loaded.warning), elem_id="lb-warning"
        )
        state = page_state(checkpoint)
        with gr.Row(equal_height=False):
            with gr.Column(scale=5):
                documents = document_panel(examples)
            with gr.Column(scale=4):
                answers = answer_panel()
        answers.document.render()
        explorer = explorer_panel(loaded, checkpoint)
        explained = explaining(explorer, state, answers)
        wire_explorer(explorer, state, explained, model_events)
        settings = settings_panel(loaded, checkpoint, reading)
        wire_loading(settings, state, explorer, warning, model_events)
        wire_asking(
            documents,
            answers,
            settings,
            explorer,
            state,
            explained,
            cancellation,
            allow_local_urls=allow_local_urls,
            model_events=model_events,
        )
        wire_api(checkpoint, reading, cancellation, allow_local_urls=allow_local_urls, model_events=model_events)

        def on_leave(request: gr.Request):
            cancellation.end_session(request.session_hash)

        demo.unload(on_leave)  # a page closed or reloaded, or an API client whose heartbeat dropped
    demo.queue(max_size=max_queue, default_concurrency_limit=limit)
    serve_in_turn(demo)
    return demo
