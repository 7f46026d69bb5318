"""The page: the ``gr.Blocks`` layout, and each event wired next to its components.

The work behind the events lives in modules of its own, which take and return plain data:
``app.asking`` (a question, for the page and the /answer API), ``documents.sources``, ``app.models``,
``app.payloads``, ``app.explorer`` (the attention explorer's package) and ``app.examples``;
``app.cancellation`` says which questions are still wanted. Tests call those directly; the browser test checks the wiring here.
"""

from __future__ import annotations

import atexit
import os
import threading
from dataclasses import replace

import gradio as gr

from littlebird.app.asking import (
    DEFAULT_APP_READING,
    MAX_LENGTH_CHOICES,
    MAX_WINDOWS_CHOICES,
    N_BEST_CHOICES,
    Settings,
    answer_document,
    ask,
)
from littlebird.app.cancellation import Cancellation
from littlebird.documents.errors import DocumentError
from littlebird.documents.limits import MAX_HTML_CHARACTERS, Limits
from littlebird.app.examples import EXAMPLES_DIR, choose_example, load_examples
from littlebird.app.explorer.capture import ReadingInputs
from littlebird.app.explorer.explaining import after_reading, explain, explain_token, warm_explorer
from littlebird.app.explorer.export import export_view
from littlebird.app.explorer.head_metrics import METRICS
from littlebird.app.explorer.plots import (atlas_cell, atlas_cells, atlas_figure, explore, explorer_plots,
                                           reading_map_figure, rollout_document, rollout_figure, slopes_figure)
from littlebird.app.explorer.target import Aim, AnswerChoice, ExplorerTarget, WindowChoice
from littlebird.app.explorer.token_figure import token_message
from littlebird.documents import formats
from littlebird.app.models import DEFAULT_CHECKPOINT, CheckpointError, LoadedModel, load_model
from littlebird.app.qa import warm_up
from littlebird.answer_text import get_kiwi
from littlebird.reader import GLIMPSE_KEEP, ReadingStopped
from littlebird.reading_options import DEFAULT_MAX_LENGTH, DEFAULT_MAX_WINDOWS, DEFAULT_N_BEST, DEFAULT_NO_ANSWER_THRESHOLD
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
.lb-nbest th { text-align: left; font-weight: 600; color: var(--body-text-color-subdued); border-bottom: 1px solid var(--border-color-primary); }
.lb-nbest td, .lb-nbest th { padding: 3px 6px; vertical-align: top; }
.lb-nbest tr:first-child td { font-weight: 600; }
.lb-nbest .lb-text { word-break: keep-all; overflow-wrap: anywhere; }
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
_EMPTY_ANSWER = '<div class="lb-card"><div class="lb-label">Answer</div><div class="lb-meta">Ask a question to see the answer.</div></div>'



def intro(limits: Limits) -> str:
    """The page's header: what the app does, with the numbers the code runs with."""
    seconds = "no time limit" if limits.question_seconds is None else f"at most {limits.question_seconds:g} s a question"
    return f"""# LittleBird QA
Ask questions about long Korean or English documents, answered by **LittleBird** (Lee et al., 2022):
sliding-window attention, BiALiBi position biases and pack & unpack attention.
Paste a document (up to {limits.max_characters:,} characters, or {MAX_HTML_CHARACTERS // 1_000_000} MB of HTML),
give a web address or upload a file ({formats.label_list()}), or start from an
example; a PDF's answer comes with its page. The model reads windows of
{DEFAULT_MAX_LENGTH:,} tokens; of a long document, the {DEFAULT_MAX_WINDOWS} whose words best match the
question, a short glimpse of each, and in full at most the {GLIMPSE_KEEP} that look likeliest to hold the answer ({seconds});
the answer says how much it read."""


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
    return gr.Dropdown(choices=[(label, aim_value(aim)) for label, aim in target.choices()],
                       value=aim_value(target.aim))


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
    for thread in threads:
        thread.join(timeout=60)


def build_demo(
    model_path: str | None = None,
    *,
    allow_local_urls: bool = False,
    concurrency_limit: int | None = None,
    max_queue: int = 64,
) -> gr.Blocks:
    """Build the Gradio Blocks app (queue configured; call ``.launch()`` on it).

    ``model_path`` is the default checkpoint (None: ``assets/littlebird-qa``); it is loaded
    here, once, so the first question does not wait for it. ``concurrency_limit`` bounds
    how many questions run the model at once (default: ``LITTLEBIRD_CONCURRENCY`` or 2;
    the rest wait in a queue of at most ``max_queue``). ``allow_local_urls`` lets the URL
    source fetch loopback addresses, for tests only.

    A question the page asks again, or whose client has gone, stops between the model's windows
    (``app.cancellation``).
    """
    loaded = load_model(model_path)
    # Kiwi (Korean answer trimming) and the first pass's term table take seconds to build: warm them now,
    # not on the first question.
    warming = [threading.Thread(target=get_kiwi, name="warm-kiwi", daemon=True),
               threading.Thread(target=term_table, args=(loaded.tokenizer,), name="warm-terms", daemon=True),
               threading.Thread(target=_warm_model, args=(loaded, model_path), name="warm-model", daemon=True)]
    for thread in warming:
        thread.start()
    atexit.register(_end_warming, warming)
    checkpoint = model_path or DEFAULT_CHECKPOINT
    limit = concurrency_limit or int(os.environ.get("LITTLEBIRD_CONCURRENCY", "2"))
    examples = load_examples()
    gr.set_static_paths([str(EXAMPLES_DIR)])  # a PDF example goes into the upload box, which serves it from there
    empty_plots = explorer_plots(None, loaded, layer=0, head=0)
    model_events = {"concurrency_limit": limit, "concurrency_id": "model"}
    cancellation = Cancellation()

    with gr.Blocks(title="LittleBird QA") as demo:
        gr.Markdown(intro(Limits.from_environment()))
        warning = gr.Markdown(f"⚠️ {loaded.warning}" if loaded.warning else "", visible=bool(loaded.warning), elem_id="lb-warning")
        source = gr.State("paste")
        active_checkpoint = gr.State(checkpoint)
        summary = gr.State(None, time_to_live=1800)  # ~12 MB for a 16K-token window: let idle sessions drop it
        explorer_target = gr.State(None, time_to_live=1800)  # the window the explorer shows, of the last answer
        explorer_open = gr.State(False)
        question_number = gr.State(0)  # of this page's newest question: Cancellation.new_question

        with gr.Row(equal_height=False):
            with gr.Column(scale=5):
                with gr.Tabs(selected="paste") as tabs:
                    with gr.Tab("Paste", id="paste") as paste_tab:
                        pasted = gr.Textbox(
                            label="Document text or HTML", lines=8, max_lines=8, elem_id="lb-paste",
                            placeholder="Paste a document here, or pick an example below.",
                        )  # fmt: skip
                    with gr.Tab("URL", id="url") as url_tab:
                        url = gr.Textbox(label="Web page address", placeholder="https://ko.wikipedia.org/wiki/...", elem_id="lb-url")
                    with gr.Tab("Upload", id="upload") as upload_tab:
                        upload = gr.File(label=f"{formats.label_list()} file", file_types=list(formats.suffixes()),
                                         type="filepath", elem_id="lb-upload")
                for tab, name in ((paste_tab, "paste"), (url_tab, "url"), (upload_tab, "upload")):
                    tab.select(lambda name=name: name, None, source, api_visibility="private", queue=False)

                example = gr.Dropdown(
                    choices=[e.label for e in examples], value=None, label="Example documents", elem_id="lb-example",
                )  # fmt: skip
                with gr.Row():
                    question = gr.Textbox(
                        label="Question", placeholder="Ask in Korean or English, then press Enter", scale=5, elem_id="lb-question",
                    )  # fmt: skip
                    ask_button = gr.Button("Ask", variant="primary", scale=1, min_width=80, elem_id="lb-ask")
                suggestions = gr.Radio(choices=[], label="Suggested questions", visible=False, elem_id="lb-suggestions")

                def on_example(label):
                    if not label:
                        return gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()
                    text, path, questions, first = choose_example(label)
                    tab = "paste" if path is None else "upload"  # a PDF example is uploaded, as a user would
                    return (gr.skip() if text is None else text, gr.skip() if path is None else path,
                            gr.Tabs(selected=tab), tab, gr.Radio(choices=questions, value=None, visible=True), first)

                example.change(on_example, example, [pasted, upload, tabs, source, suggestions, question],
                               api_visibility="private", queue=False)
                suggestions.input(lambda q: q or gr.skip(), suggestions, question, api_visibility="private", queue=False)

            with gr.Column(scale=4):
                answer = gr.HTML(_EMPTY_ANSWER, css_template=_ANSWER_CSS, js_on_load=None, elem_id="lb-answer-card")
                stats = gr.Markdown("", elem_id="lb-stats")

        document = gr.HTML(
            _EMPTY_DOCUMENT, css_template=_DOCUMENT_CSS, js_on_load=_SCROLL_TO_ANSWER_JS, elem_id="lb-document",
        )  # fmt: skip

        with gr.Accordion("Attention explorer", open=False, elem_id="lb-explorer") as explorer_box:
            gr.Markdown(
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
            reading_map = gr.Plot(reading_map_figure(None, checkpoint), label="Reading map", elem_id="lb-reading-map")
            aim = gr.Dropdown(choices=[], value=None, label="Explore the window of", elem_id="lb-aim",
                              info="an n-best answer, or any window of the document")
            with gr.Row():
                layer = gr.Slider(0, loaded.num_layers - 1, value=0, step=1, label="Layer", elem_id="lb-layer")
                head = gr.Slider(0, loaded.num_heads - 1, value=0, step=1, label="Head", elem_id="lb-head")
            block_map = gr.Plot(empty_plots["block_map"], label="Attention by block", elem_id="lb-plot-blocks")
            with gr.Row():
                answer_plot = gr.Plot(empty_plots["answer"], label="Answer tokens", elem_id="lb-plot-answer")
                pack_plot = gr.Plot(empty_plots["pack"], label="Pack slots", elem_id="lb-plot-pack")
            token = gr.Slider(0, 1, value=0, step=1, label="Token", elem_id="lb-token",
                              info="any token of the window, by position: 0 is [CLS], the question follows it")
            token_plot = gr.Plot(token_message("Ask a question, then open the explorer to see this."), label="Any token",
                                 elem_id="lb-token-view")

            def on_token(target, summary, layer, head, token):
                """Another token, layer or head; before the explorer has opened on the target, nothing (it draws
                the view as it opens). It runs the window again only if the kept windows no longer hold it."""
                if summary is None:
                    return gr.skip()
                return explain_token(target, layer=int(layer), head=int(head), token=int(token))[1]

            # input, not change: the explorer's opening sets the slider and draws the view itself
            gr.on([layer.change, head.change, token.input], on_token, [explorer_target, summary, layer, head, token],
                  token_plot, api_visibility="private", show_progress="minimal", trigger_mode="always_last",
                  **model_events)
            with gr.Row(equal_height=False):
                with gr.Column(scale=1, min_width=220):
                    metric = gr.Radio([(label, name) for name, label in METRICS.items()], value="pack",
                                      label="Head atlas metric", elem_id="lb-atlas-metric")
                    atlas_cell_menu = gr.Dropdown(choices=[], value=None, label="Show a head of the atlas",
                                                  info="highest first", elem_id="lb-atlas-cell")
                atlas_plot = gr.Plot(empty_plots["atlas"], label="Head atlas", elem_id="lb-head-atlas", scale=3)
            rollout_plot = gr.Plot(rollout_figure(None, loaded), label="Rollout", elem_id="lb-rollout")
            with gr.Row():
                slopes_plot = gr.Plot(slopes_figure(loaded), label="BiALiBi slopes", elem_id="lb-plot-slopes")
                curves_plot = gr.Plot(empty_plots["curves"], label="BiALiBi curves", elem_id="lb-plot-curves")
            with gr.Row(equal_height=False):
                export_button = gr.Button("Export this view (.npz with a JSON)", scale=1, elem_id="lb-export-button")
                export_file = gr.File(label="The window's summary, with the question, window, layer and head",
                                      interactive=False, scale=3, elem_id="lb-export")

            def on_export(summary, target, layer, head, metric, token):
                if summary is None or target is None:
                    raise gr.Error("Open the explorer on an answer first: there is no summary to export yet.",
                                   print_exception=False)
                keys, _ = explain_token(target, layer=int(layer), head=int(head), token=int(token))
                return str(export_view(target, summary, layer=int(layer), head=int(head), metric=metric, token=keys))

            export_button.click(on_export, [summary, explorer_target, layer, head, metric, token], export_file,
                                api_visibility="private", show_progress="minimal", **model_events)

            def on_explore(summary, checkpoint, layer, head, metric):
                plots = explore(summary, checkpoint, int(layer), int(head), metric)
                return plots["block_map"], plots["answer"], plots["pack"], plots["curves"], plots["atlas"]

            # "change" also covers typing in the sliders' number boxes; while a slider is dragged,
            # always_last drops the intermediate values instead of queueing a redraw for each.
            gr.on(
                [layer.change, head.change],
                on_explore,
                [summary, active_checkpoint, layer, head, metric],
                [block_map, answer_plot, pack_plot, curves_plot, atlas_plot],
                api_visibility="private",
                show_progress="minimal",
                trigger_mode="always_last",
            )

            def on_metric(summary, checkpoint, metric, layer, head):
                return (atlas_figure(summary, checkpoint, metric, int(layer), int(head)),
                        gr.Dropdown(choices=atlas_cells(summary, metric), value=None))

            metric.change(
                on_metric, [summary, active_checkpoint, metric, layer, head], [atlas_plot, atlas_cell_menu],
                api_visibility="private", show_progress="minimal", trigger_mode="always_last",
            )  # fmt: skip

            def on_atlas_cell(choice):
                """A head picked in the atlas's menu moves the sliders, whose change redraws the plots."""
                if not choice:
                    return gr.skip(), gr.skip()
                return atlas_cell(choice)

            atlas_cell_menu.input(on_atlas_cell, atlas_cell_menu, [layer, head], api_visibility="private", queue=False)

            def on_explain(target, summary, is_open, layer, head, metric):
                """The attention of the target's window, computed once per target and only while the explorer is open."""
                if not is_open or target is None or summary is not None:
                    return (gr.skip(),) * 11
                summary, plots, _ = explain(target, layer=int(layer), head=int(head), metric=metric)
                keys, token_figure = explain_token(target, layer=int(layer), head=int(head))
                tokens = gr.Slider(maximum=keys.n_tokens - 1, value=keys.token) if keys else gr.Slider(maximum=1, value=0)
                return (summary, plots["block_map"], plots["answer"], plots["pack"], plots["curves"], plots["atlas"],
                        gr.Dropdown(choices=atlas_cells(summary, metric), value=None), tokens, token_figure,
                        plots["rollout"], rollout_document(target, summary))

            explain_inputs = [explorer_target, summary, explorer_open, layer, head, metric]
            explain_outputs = [summary, block_map, answer_plot, pack_plot, curves_plot, atlas_plot, atlas_cell_menu,
                               token, token_plot, rollout_plot, document]
            explorer_box.expand(lambda: True, None, explorer_open, api_visibility="private", queue=False).then(
                on_explain, explain_inputs, explain_outputs, api_visibility="private", show_progress="minimal",
                **model_events,
            )  # fmt: skip

            def on_aim(target, choice):
                """The explorer turned to another answer or window: its summary is computed again, if open."""
                if target is None or not choice or aim_of(choice) == target.aim:
                    return gr.skip(), gr.skip(), gr.skip()
                target = target.aimed(aim_of(choice))
                return target, None, reading_map_figure(target, target.checkpoint)

            aim.input(
                on_aim, [explorer_target, aim], [explorer_target, summary, reading_map], api_visibility="private",
                queue=False,
            ).then(
                on_explain, explain_inputs, explain_outputs, api_visibility="private", show_progress="minimal",
                **model_events,
            )  # fmt: skip
            explorer_box.collapse(lambda: False, None, explorer_open, api_visibility="private", queue=False)

        with gr.Accordion("Settings", open=False, elem_id="lb-settings"):
            with gr.Row():
                checkpoint_box = gr.Textbox(value=checkpoint, label="Checkpoint (local directory or Hub id)", scale=4)
                load_button = gr.Button("Load", scale=1, min_width=80)
            checkpoint_status = gr.Markdown(loaded.status)
            with gr.Row():
                max_length = gr.Slider(*MAX_LENGTH_CHOICES, value=DEFAULT_MAX_LENGTH, step=512, label="Max length (tokens per window)")
                max_windows = gr.Slider(*MAX_WINDOWS_CHOICES, value=DEFAULT_MAX_WINDOWS, step=1,
                                        label="Windows read per question (the best-matching ones)", elem_id="lb-max-windows")
                n_best_count = gr.Slider(*N_BEST_CHOICES, value=DEFAULT_N_BEST, step=1, label="n-best")
                threshold = gr.Slider(0.0, 1.0, value=DEFAULT_NO_ANSWER_THRESHOLD, step=0.05, label="No-answer threshold")

            def on_load(path):
                try:
                    new = load_model(path)
                except CheckpointError as error:
                    raise gr.Error(str(error), print_exception=False) from None
                plots = explorer_plots(None, new, layer=0, head=0)  # the old summary belongs to the old model
                return (
                    new.checkpoint, new.status, gr.Markdown(f"⚠️ {new.warning}" if new.warning else "", visible=bool(new.warning)),
                    gr.Slider(maximum=new.num_layers - 1, value=0), gr.Slider(maximum=new.num_heads - 1, value=0),
                    slopes_figure(new), None, plots["block_map"], plots["answer"], plots["pack"], plots["curves"],
                    None, reading_map_figure(None, new.checkpoint), gr.Dropdown(choices=[], value=None), plots["atlas"],
                    gr.Dropdown(choices=[], value=None), token_message("Ask a question, then open the explorer to see this."),
                    rollout_figure(None, new),
                )  # fmt: skip

            load_button.click(
                on_load, checkpoint_box,
                [active_checkpoint, checkpoint_status, warning, layer, head, slopes_plot, summary, block_map, answer_plot,
                 pack_plot, curves_plot, explorer_target, reading_map, aim, atlas_plot, atlas_cell_menu, token_plot,
                 rollout_plot],
                api_visibility="private", **model_events,
            )  # fmt: skip

        # Asking reads the document tabs and the settings, and fills the answer, the document and the explorer.
        # The question is numbered at once, outside the queue, so that an earlier one still being read stops
        # after its current window; always_last then runs the newest question once the earlier one has ended.
        def on_new_question(request: gr.Request):
            return cancellation.new_question(request.session_hash)

        def on_ask(number, source, pasted, url, upload, question, checkpoint, max_length, max_windows, n_best_count,
                   threshold, request: gr.Request, progress=gr.Progress()):  # fmt: skip
            reading = replace(DEFAULT_APP_READING, max_length=int(max_length), n_best=int(n_best_count),
                              no_answer_threshold=float(threshold), max_windows=int(max_windows))
            settings = Settings(checkpoint, reading)
            kept = ReadingInputs()  # the layer inputs of the windows read, so the explorer opens without a pass
            with cancellation.answering(request.session_hash, number) as should_stop:
                try:
                    view = ask(
                        source, question, settings, pasted=pasted, url=url, upload=upload, allow_local=allow_local_urls,
                        report=lambda f, m: progress(f, desc=m), should_stop=should_stop, observe=kept.keeping,
                    )  # fmt: skip
                except (DocumentError, CheckpointError) as error:
                    raise gr.Error(str(error), print_exception=False) from None
                except ReadingStopped:  # a newer question replaces this one, or nobody is left to see it
                    return (gr.skip(),) * 7
            target = after_reading(view, question, settings, kept)
            return (view.answer_html, view.document_html, view.stats, target, None,
                    reading_map_figure(target, checkpoint), aim_menu(target))

        gr.on(
            [ask_button.click, question.submit], on_new_question, None, question_number,
            api_visibility="private", queue=False, show_progress="hidden",
        ).then(
            on_ask,
            [question_number, source, pasted, url, upload, question, active_checkpoint, max_length, max_windows,
             n_best_count, threshold],
            [answer, document, stats, explorer_target, summary, reading_map, aim],
            api_visibility="private", trigger_mode="always_last", **model_events,
        ).success(  # the answer shows first; an open explorer then draws the new answer's window
            on_explain, explain_inputs, explain_outputs, api_visibility="private", show_progress="minimal",
            **model_events,
        )  # fmt: skip

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
                ``app/limits.py``) is refused with an error that gives its size and the limit.
            """
            with cancellation.answering(request.session_hash) as should_stop:
                try:
                    return answer_document(document, question, checkpoint=checkpoint, allow_local=allow_local_urls,
                                           should_stop=should_stop)
                except (DocumentError, CheckpointError) as error:
                    raise gr.Error(str(error), print_exception=False) from None
                except ReadingStopped:
                    raise gr.Error("The question was stopped: its client has gone.", print_exception=False) from None

        gr.api(answer, api_name="answer", **model_events)

        def on_leave(request: gr.Request):
            cancellation.end_session(request.session_hash)

        demo.unload(on_leave)  # a page closed or reloaded, or an API client whose heartbeat dropped

    demo.queue(max_size=max_queue, default_concurrency_limit=limit)
    return demo
