"""What the attention explorer costs on CPU: the time to open it and to redraw it, and its peak memory.

For each window length (default 1,024 and 8,192 tokens) the shipped checkpoint answers a question about a
long document (the four example pages, cleaned and joined: ~15K tokens), as the app does, and then:

- ``open``: ``app.explorer.explaining.explain`` on the best answer's window (each layer's attention weights rebuilt from
  the layer inputs the question's reading kept of that window, and reduced; the figures drawn) and the
  figures' JSON, which is what the page receives; once, as after a question (after
  ``explaining.warm_explorer``, as the app runs it at start), ``open again`` for the same window, and
  ``open, not kept``: a window whose inputs were not kept (another window, or one the reading let go), which
  is run again with attention weights, each layer reduced as the model computes it;
- ``ask``: the question itself through ``app.asking.ask`` as the page asks it (the reading keeps its windows'
  layer inputs, ``observe=ReadingInputs.keeping``, and ``explaining.after_reading`` keeps the best answer's
  window's), and ``ask, keeping none``: the same without ``observe``, as the API asks, each the median of 3;
- ``slider``: redrawing for another layer or head (``app.explorer.plots.explore``: block map, answer tokens,
  pack slots, BiALiBi curves and head atlas) and its JSON, median of 6;
- ``metric``: another head-atlas metric (``atlas_figure`` and the menu's ``atlas_cells``), median of 5;
- ``token``: the any-token view for another layer, head and token (``explaining.explain_token``: its keys
  projected from the layer inputs the pass kept, and the figure's JSON), median of 6, and ``token MB``, what
  those layer inputs take (``app.explorer.capture.TokenCapture.nbytes``; the explorer keeps two windows');
- ``plain read``: the same window read as a question reads it (``littlebird.reader.read``, one window, no
  attention weights), the baseline the open's time compares with;
- ``peak MB``: peak RSS growth while the explorer opens, over the process after the question (the model
  loaded and warm); beside it, the peak of the same window read plainly (``littlebird.reader.read``, one
  window, no attention: the model's own working set) and of the window's summary built with every layer's
  weights held at once (``window_attention`` without ``reduce_layer``, then ``summarize_window``: how the
  explorer worked before).

Each (length, measurement) runs in a fresh subprocess, so its peak is its own. On a newer CPU, run it again
with ``ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2`` to see an AVX2-only
CPU's numbers (the app then runs the model in fp32: see ``littlebird.inference``). The CPU's flags head the
table. The machines are shared: noise only adds time.

    python benchmarks/bench_explorer.py
    python benchmarks/bench_explorer.py --lengths 8192 --runs 5   # medians of 5 fresh processes, and each run's open
    ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2 python benchmarks/bench_explorer.py
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch
from bench_models import current_rss_bytes, peak_rss_bytes, reset_peak_rss  # noqa: E402
from bench_pipeline import cpu_line  # noqa: E402

MEASUREMENTS = ("explorer", "read", "held")


def example_text() -> tuple[str, str]:
    """The four example pages' cleaned text joined, and a question about the first."""
    from littlebird.app.examples import web_pages
    from littlebird.documents.clean import clean_document
    from littlebird.documents.upload import read_upload

    examples = web_pages()
    text = "\n\n".join(clean_document(read_upload(example.path)).text for example in examples)
    return text, examples[0].questions[0].question


def seconds(work) -> float:
    """Wall time of ``work()``."""
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def figures_json(plots: dict) -> int:
    """Serialise each figure as gr.Plot does; the bytes sent."""
    return sum(len(figure.to_json()) for figure in plots.values())


def measure(length: int, what: str, threads: int) -> dict:
    """One measurement at one window length, in this process (see the module docstring)."""
    torch.set_num_threads(threads)
    from littlebird.app import asking
    from littlebird.app.explorer import plots as explorer
    from littlebird.app.explorer.cache import CAPTURES, capture_key
    from littlebird.app.explorer.capture import ReadingInputs
    from littlebird.app.explorer.explaining import after_reading, explain, explain_token, warm_explorer
    from littlebird.app.explorer.head_metrics import METRICS
    from littlebird.app.explorer.reductions import summarize_window
    from littlebird.app.explorer.window import window_attention
    from littlebird.app.models import load_model
    from littlebird.reader import ReadingOptions, read

    def ask(keeping: bool):
        """The question as the page asks it (keeping the windows' layer inputs) or as the API does."""
        kept = ReadingInputs() if keeping else None
        view = asking.ask("paste", question, settings, pasted=text, observe=kept.keeping if keeping else None)
        return view, after_reading(view, question, settings, kept)

    loaded = load_model(None)
    if what == "explorer":
        warm_explorer()  # as the app does at start: the first open below is a user's first
    text, question = example_text()
    settings = asking.Settings(reading=ReadingOptions(max_length=length))
    view, target = ask(keeping=True)
    document = view.document
    row = {"length": length, "what": what}
    reset_peak_rss()
    base = current_rss_bytes()
    if what == "explorer":
        summary = None

        def open_explorer():
            nonlocal summary
            summary, plots, _ = explain(target, layer=0, head=0)
            row["json_kb"] = figures_json(plots) / 1000

        row["open_s"] = seconds(open_explorer)
        row["peak_mb"] = (peak_rss_bytes() - base) / 2**20
        row["open_again_s"] = seconds(open_explorer)
        CAPTURES.clear()
        row["open_pass_s"] = seconds(open_explorer)
        row["window_tokens"] = summary.n_tokens  # [CLS] [QUESTION] question [SEP] and the window's document tokens
        heads = [(layer, head) for layer in range(loaded.num_layers) for head in range(loaded.num_heads)][1:7]
        row["slider_s"] = statistics.median(
            seconds(lambda: figures_json(explorer.explore(summary, target.checkpoint, layer, head)))
            for layer, head in heads
        )
        metrics = list(METRICS)[1:] + list(METRICS)[:1]
        row["metric_s"] = statistics.median(
            seconds(
                lambda: (
                    explorer.atlas_figure(summary, target.checkpoint, metric, 0, 0).to_json(),
                    explorer.atlas_cells(summary, metric),
                )
            )
            for metric in metrics
        )
        n = summary.n_tokens
        picks = [(layer, head, n * k // 6) for k, (layer, head) in enumerate(heads)]
        row["token_s"] = statistics.median(
            seconds(lambda: explain_token(target, layer=layer, head=head, token=token)[1].to_json())
            for layer, head, token in picks
        )
        row["token_mb"] = CAPTURES.get(capture_key(target)).nbytes / 2**20
        row["summary_mb"] = (
            sum(getattr(summary, name).nbytes for name in ("block_maps", "answer_blocks", "answer_pack", "pack_reads"))
            / 2**20
        )
        for keeping, name in ((False, "ask_plain_s"), (True, "ask_s")):  # last: they refill the kept windows
            row[name] = statistics.median(seconds(lambda: ask(keeping)) for _ in range(3))
    elif what == "read":
        row["read_s"] = seconds(
            lambda: read(
                question,
                document.text,
                model=loaded.model,
                tokenizer=loaded.tokenizer,
                model_text=document.model_text,
                model_to_text=document.model_to_text,
                options=ReadingOptions(max_length=length, max_windows=1),
            )
        )
        row["peak_mb"] = (peak_rss_bytes() - base) / 2**20
    elif what == "held":

        def held():
            window = window_attention(
                question,
                document.text,
                model=loaded.model,
                tokenizer=loaded.tokenizer,
                document_start=target.document_start,
                model_text=document.model_text,
                model_to_text=document.model_to_text,
                max_length=length,
            )
            summarize_window(window, text=document.text, answer_span=target.answer_span, block_size=loaded.block_size)

        row["open_s"] = seconds(held)
        row["peak_mb"] = (peak_rss_bytes() - base) / 2**20
    else:
        raise ValueError(f"unknown measurement {what!r}; choose from {MEASUREMENTS}")
    return row


def run_in_subprocess(length: int, what: str, threads: int) -> dict:
    """``measure`` in a fresh interpreter, so that its peak memory is its own."""
    command = [sys.executable, __file__, "--one", str(length), what, "--threads", str(threads)]
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=os.environ)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(rows: list[dict]) -> str:
    """One line per window length."""
    by = {(r["length"], r["what"]): r for r in rows}
    lines = [
        "| window (tokens) | open (s) | open again (s) | open, not kept (s) | plain read (s) | ask (s) "
        "| ask, keeping none (s) | slider redraw (s) | metric redraw (s) "
        "| token redraw (s) | figures JSON (KB) | peak MB: explorer | plain read | all layers held | summary (MB) "
        "| token MB |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for length in sorted({r["length"] for r in rows}):
        e, r, h = by[(length, "explorer")], by[(length, "read")], by[(length, "held")]
        lines.append(
            f"| {e['window_tokens']:,} | {e['open_s']:.2f} | {e['open_again_s']:.2f} | "
            f"{e['open_pass_s']:.2f} | {r['read_s']:.2f} | {e['ask_s']:.2f} | {e['ask_plain_s']:.2f} | "
            f"{e['slider_s']:.3f} | "
            f"{e['metric_s']:.3f} | {e['token_s']:.3f} | {e['json_kb']:.0f} | {e['peak_mb']:.0f} | "
            f"{r['peak_mb']:.0f} | {h['peak_mb']:.0f} | {e['summary_mb']:.1f} | {e['token_mb']:.0f} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[1024, 8192], help="window lengths in tokens")
    parser.add_argument(
        "--threads",
        type=int,
        default=2,
        help="torch threads (fewer than the free cores: more only slows each small kernel down)",
    )
    parser.add_argument(
        "--runs",
        type=int,
        default=1,
        help="fresh processes per measurement; with more than one, each cell is the median and a "
        "last table gives the first open's and the plain read's range",
    )
    parser.add_argument("--one", nargs=2, metavar=("LENGTH", "WHAT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(measure(int(args.one[0]), args.one[1], args.threads)))
        return 0
    from littlebird.inference import resolve_cpu_mode

    print(cpu_line())
    print(f"torch threads: {args.threads}; the app's CPU mode: {resolve_cpu_mode('auto')}")
    rows = [
        median_row([run_in_subprocess(length, what, args.threads) for _ in range(max(1, args.runs))])
        for length in args.lengths
        for what in MEASUREMENTS
    ]
    print(table(rows))
    if args.runs > 1:
        by = {(r["length"], r["what"]): r for r in rows}
        print(f"\n| window (tokens) | open, {args.runs} runs | open, not kept | plain read |\n|---:|---|---|---|")
        for length in args.lengths:
            e, r = by[(length, "explorer")], by[(length, "read")]
            print(
                f"| {e['window_tokens']:,} | "
                + " | ".join(
                    ", ".join(f"{t:.2f}" for t in times) + " s"
                    for times in (e["runs"]["open_s"], e["runs"]["open_pass_s"], r["runs"]["read_s"])
                )
                + " |"
            )
    return 0


def median_row(runs: list[dict]) -> dict:
    """One row of several runs of one measurement: the median of each number, and every run's numbers."""
    row = dict(runs[0])
    numbers = [key for key, value in row.items() if isinstance(value, float)]
    for key in numbers:
        row[key] = statistics.median(run[key] for run in runs)
    row["runs"] = {key: [run[key] for run in runs] for key in numbers}
    return row


if __name__ == "__main__":
    sys.exit(main())
