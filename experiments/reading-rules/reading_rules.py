"""How many of a long document's ranked windows to read: dev F1 and windows read under reading rules.

The reader ranks a long document's windows by BM25 and reads them best first, up to ``max_windows``,
stopping early by its two rules (``stop_confidence``, ``give_up_below``; see ``littlebird.reader.read``).
Each window is read alone, so one pass that reads every question's ``--read`` best-ranked windows, with no
rule, gives every window's logits once; any rule is then the same decisions over a prefix of them, with the
reader's own functions (``stop_reason``, ``decode``, the app's answer tidying).
The default rule's row reproduces ``littlebird evaluate``'s F1 on the same file.

Prints, per dev file and rule: mean, p90 and largest number of windows read a question (the tail sets the
slowest question's time: about windows x the time of one window, ``benchmarks/bench_pipeline.py``), F1, and F1 less the
default rule's with a 95% interval from a paired bootstrap (2,000 resamplings of the questions).

    python experiments/reading-rules/reading_rules.py --model assets/littlebird-qa --cache runs/rules \\
        --data runs/dev/dev-en-article.json runs/dev/dev-ko-article.json \\
        runs/dev/dev-en-long.json runs/dev/dev-ko-long.json

``--cache`` keeps each file's window logits (``<cache>/<file>.pkl``), so other ``--rules`` cost no model time.
A rule is ``CAP/STOP/GIVE_UP``: at most CAP windows, stop once 2 are read and one is answerable with STOP,
give up once 3 are read and none reaches GIVE_UP (``none`` turns a rule off).
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import sys
from pathlib import Path

import numpy as np
import torch

from littlebird.answer_text import tidy_answer_span
from littlebird.checkpoint import load_qa_model, load_tokenizer
from littlebird.evaluation import best_scores, metric_language
from littlebird.inference import optimize_for_cpu
from littlebird.reader import (
    DEFAULT_GIVE_UP_BELOW,
    DEFAULT_MAX_LENGTH,
    DEFAULT_MAX_WINDOWS,
    DEFAULT_N_BEST,
    DEFAULT_STOP_CONFIDENCE,
    MAX_ANSWER_LENGTH,
    TOP_K_STARTS,
    build_windows,
    decode,
    default_stride,
    encode_text,
    first_pass,
    question_cap,
    question_prefix,
    run_windows,
    special_ids,
    stop_reason,
    tokenize_questions,
    window_capacity,
    window_starts,
)
from littlebird.training.data import read_squad

DEFAULT_RULE = f"{DEFAULT_MAX_WINDOWS}/{DEFAULT_STOP_CONFIDENCE:g}/{DEFAULT_GIVE_UP_BELOW:g}"
RULES = (
    DEFAULT_RULE,
    "3/0.9/0.05",
    "4/0.9/0.05",
    "5/0.9/0.05",
    "6/0.9/0.05",
    "8/0.9/0.05",
    "10/0.7/0.05",
    "10/0.5/0.05",
    "5/0.7/0.05",
    "10/none/none",
)


def read_windows(
    model, tokenizer, question: str, context: str, n_windows: int, max_length: int = DEFAULT_MAX_LENGTH
) -> dict:
    """The logits of ``question``'s ``n_windows`` best-ranked windows of ``context``, read with no rule."""
    ids = special_ids(tokenizer, model)
    encoded = encode_text(context, tokenizer)
    question_ids = tokenize_questions([question], tokenizer)[0]
    prefix = question_prefix(question_ids, ids, max_length)
    capacity = window_capacity(len(encoded.input_ids), len(prefix), max_length)
    every_start = window_starts(len(encoded.input_ids), capacity, default_stride(max_length))
    ranked, _ = first_pass(
        question_ids[: question_cap(max_length)], encoded.input_ids, every_start, capacity, tokenizer
    )
    starts = [every_start[i] for i in ranked[:n_windows]]
    input_ids, attention_mask = build_windows(prefix, encoded.input_ids, starts, capacity, ids.pad)
    logits = run_windows(
        model,
        input_ids,
        attention_mask,
        top_k_starts=min(TOP_K_STARTS, input_ids.shape[1]),
        max_answer_length=MAX_ANSWER_LENGTH,
    )
    return {"logits": logits, "starts": starts, "spans": encoded.spans, "prefix": len(prefix)}


def parse_rule(rule: str) -> tuple[int, float | None, float | None]:
    cap, stop, low = rule.split("/")
    return int(cap), None if stop == "none" else float(stop), None if low == "none" else float(low)


def answer_by_rule(read: dict, context: str, rule: str) -> tuple[str, int]:
    """The reader's best answer and the windows it reads under ``rule``, from the windows read once."""
    cap, stop, low = parse_rule(rule)
    total = len(read["starts"])
    k = min(cap, total)
    if stop is not None or low is not None:
        for n in range(1, k):  # the reader asks before each window after the first
            if stop_reason(read["logits"].head(n), stop, low) is not None:
                k = n
                break
    answers = decode(
        read["logits"].head(k),
        read["spans"],
        read["prefix"],
        read["starts"][:k],
        context,
        n_best=DEFAULT_N_BEST,
        tidy=tidy_answer_span,
    ).answers
    return (answers[0].text if answers else ""), k


def bootstrap(differences: np.ndarray, rounds: int = 2000, seed: int = 0) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    means = rng.choice(differences, (rounds, len(differences))).mean(axis=1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="assets/littlebird-qa")
    parser.add_argument("--data", nargs="+", required=True, help="dev files (SQuAD JSON)")
    parser.add_argument("--rules", nargs="+", default=list(RULES))
    parser.add_argument("--read", type=int, default=DEFAULT_MAX_WINDOWS, help="ranked windows read once a question")
    parser.add_argument("--max-length", type=int, default=DEFAULT_MAX_LENGTH, help="the window, in tokens")
    parser.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="a folder for each file's window logits; one folder per model and window length",
    )
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--cpu-mode", default="auto")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    model = tokenizer = None
    print(
        f"# reading_rules: {args.model}, windows of {args.max_length} tokens, the {args.read} best-ranked read "
        "once a question; "
        f"rule = cap/stop confidence/give up below; default {DEFAULT_RULE}\n"
    )
    print("| dev file | rule | questions | windows read: mean | p90 | most | F1 | F1 - default's (95% CI) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for path in map(Path, args.data):
        cached = args.cache / f"{path.stem}.pkl" if args.cache else None
        if cached is not None and cached.is_file():
            reads = pickle.loads(cached.read_bytes())
        else:
            if model is None:
                model = optimize_for_cpu(load_qa_model(args.model), args.cpu_mode, inplace=True)
                tokenizer = load_tokenizer(args.model)
            reads = []
            with torch.inference_mode():
                for article in read_squad(path):
                    for paragraph in article["paragraphs"]:
                        for qa in paragraph["qas"]:
                            reads.append(
                                {
                                    "question": qa["question"],
                                    "context": paragraph["context"],
                                    "answers": [a["text"] for a in qa["answers"]],
                                    **read_windows(
                                        model,
                                        tokenizer,
                                        qa["question"],
                                        paragraph["context"],
                                        args.read,
                                        args.max_length,
                                    ),
                                }
                            )
            if cached is not None:
                cached.parent.mkdir(parents=True, exist_ok=True)
                cached.write_bytes(pickle.dumps(reads))
        scores: dict[str, np.ndarray] = {}
        for rule in args.rules:
            f1s, windows = [], []
            for r in reads:
                text, k = answer_by_rule(r, r["context"], rule)
                f1s.append(best_scores(text, r["answers"], metric_language(r["question"]))[1])
                windows.append(k)
            scores[rule] = np.asarray(f1s)
            difference = "-"
            if rule != args.rules[0]:
                low, high = bootstrap(100 * (scores[rule] - scores[args.rules[0]]))
                difference = (
                    f"{100 * (scores[rule].mean() - scores[args.rules[0]].mean()):+.1f} ({low:+.1f}, {high:+.1f})"
                )
            print(
                f"| {path.name} | {rule} | {len(reads)} | {statistics.fmean(windows):.1f} | "
                f"{int(np.percentile(windows, 90))} | {max(windows)} | {100 * scores[rule].mean():.1f} | "
                f"{difference} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
