"""Dev F1 of the reader as a function of ``max_windows``: how many of the best-ranked windows to read.

Each question is read once per value of ``--windows`` through ``littlebird.reader.read`` (the served
reader, with the app's answer tidying), largest first; a window already run for the question is
taken from a cache, so the whole sweep costs what reading the largest value costs. Prints the
running mean F1 per value every ``--every`` questions and at the end of each file. ``all`` reads
every window (the reader without its first pass). With ``--output-dir``, each value's predictions
are written in the evaluation CLI's ``--output`` format, and each value's F1 difference to the
first value given comes with a 95% paired-bootstrap interval (``benchmarks/compare_conversions.py``).

    python scripts/max_windows_sweep.py --data runs/dev/dev-en-long.json runs/dev/dev-ko-long.json
    python scripts/max_windows_sweep.py --data runs/dev/dev-en-article.json --windows all 4 5 \
        --output-dir runs/sweep
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.compare_conversions import paired_bootstrap  # noqa: E402

from littlebird.answer_text import tidy_answer_span  # noqa: E402
from littlebird.checkpoint import load_qa_model, load_tokenizer  # noqa: E402
from littlebird.evaluation import best_scores, metric_language  # noqa: E402
from littlebird.inference import optimize_for_cpu  # noqa: E402
from littlebird.reader import read  # noqa: E402
from littlebird.training.data import read_squad  # noqa: E402


class RememberedWindows(torch.nn.Module):
    """The model, with each window's outputs kept until :meth:`forget`: the same window read for
    several values of ``max_windows`` runs once."""

    def __init__(self, model):
        super().__init__()
        self.model, self.outputs = model, {}

    def forget(self) -> None:
        self.outputs.clear()

    def forward(self, input_ids, attention_mask, **options):
        key = (input_ids.cpu().numpy().tobytes(), attention_mask.cpu().numpy().tobytes())
        if key not in self.outputs:
            self.outputs[key] = self.model(input_ids=input_ids, attention_mask=attention_mask, **options)
        return self.outputs[key]

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.model, name)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="assets/littlebird-qa")
    parser.add_argument("--data", nargs="+", required=True)
    parser.add_argument("--windows", type=window_count, nargs="+", default=[1, 2, 3, 4, 5, 6, 8],
                        help="values of max_windows; 'all' reads every window (default: 1 2 3 4 5 6 8)")
    parser.add_argument("--priors", type=float, nargs="+", default=[0.0],
                        help="values of the reader's lexical_prior, each read with every --windows value (default 0)")
    parser.add_argument("--output-dir", type=Path, default=None,
                        help="write <file>-windows-<value>.json per value and print paired intervals")
    parser.add_argument("--max-questions", type=int, default=None, help="the first N questions of each file")
    parser.add_argument("--every", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    model = RememberedWindows(optimize_for_cpu(load_qa_model(args.model), "auto", inplace=True))
    tokenizer = load_tokenizer()
    largest_first = sorted(dict.fromkeys(args.windows), key=lambda k: -1 if k is None else -k)
    values = [(k, prior) for k in largest_first for prior in args.priors]
    shown = [(k, prior) for k in args.windows for prior in args.priors]
    for path in args.data:
        totals, n, started = dict.fromkeys(values, 0.0), 0, time.perf_counter()
        rows: dict = {k: [] for k in values}

        def line() -> str:
            scores = " ".join(f"{label(k)}: {100 * totals[k] / n:.1f}" for k in shown)
            return f"{Path(path).stem} | {n} questions | F1 by max_windows {scores} | {time.perf_counter() - started:.0f} s"

        for article in read_squad(path):
            for paragraph in article["paragraphs"]:
                for qa in paragraph["qas"]:
                    if args.max_questions is not None and n >= args.max_questions:
                        break
                    model.forget()
                    answers, language = [a["text"] for a in qa["answers"]], metric_language(qa["question"])
                    for k in values:
                        reading = read(qa["question"], paragraph["context"], model=model, tokenizer=tokenizer,
                                       tidy=tidy_answer_span, max_windows=k[0], lexical_prior=k[1])
                        prediction = reading.answers[0].text if reading.answers else ""
                        f1 = best_scores(prediction, answers, language)[1]
                        totals[k] += f1
                        rows[k].append({"id": qa["id"], "question": qa["question"], "prediction": prediction,
                                        "answers": answers, "n_tokens": reading.n_tokens,
                                        "n_windows": reading.n_windows, "f1": f1})
                    n += 1
                    if n % args.every == 0:
                        print(line(), flush=True)
        print(line(), flush=True)
        if args.output_dir is not None:
            write_predictions(args.output_dir, path, shown, rows)


def window_count(value: str) -> int | None:
    """A ``--windows`` value: a positive count, or ``all`` (None: every window)."""
    if value == "all":
        return None
    count = int(value)
    if count < 1:
        raise argparse.ArgumentTypeError(f"a window count is at least 1 or 'all', got {value}")
    return count


def label(value: tuple) -> str:
    """'4' for (4, 0.0), 'all' for (None, 0.0), '4+prior1' for (4, 1.0)."""
    k, prior = value
    return ("all" if k is None else str(k)) + (f"+prior{prior:g}" if prior else "")


def write_predictions(directory: Path, data: str, values: list, rows: dict) -> None:
    """One evaluation-style JSON per value; print each value's paired F1 difference to the first."""
    directory.mkdir(parents=True, exist_ok=True)
    for k in values:
        f1s = [row["f1"] for row in rows[k]]
        summary = {"data": str(data), "max_windows": label((k[0], 0.0)), "lexical_prior": k[1], "questions": len(f1s),
                   "f1": 100 * sum(f1s) / max(1, len(f1s))}
        target = directory / f"{Path(data).stem}-windows-{label(k)}.json"
        target.write_text(json.dumps({"summary": summary, "predictions": rows[k]}, ensure_ascii=False, indent=1))
    reference = {row["id"]: row for row in rows[values[0]]}
    for k in values[1:]:
        n, difference, low, high = paired_bootstrap(reference, {row["id"]: row for row in rows[k]})
        print(f"{Path(data).stem} | max_windows {label(k)} - {label(values[0])}: {difference:+.1f} F1 "
              f"[{low:+.1f}, {high:+.1f}] over {n} questions", flush=True)


if __name__ == "__main__":
    main()
