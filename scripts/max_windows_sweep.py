"""Dev F1 of the reader as a function of ``max_windows``: how many of the best-ranked windows to read.

Each question is read once per value of ``--windows`` through ``littlebird.reader.read`` (the served
reader, with the app's answer tidying), largest first; a window already run for the question is
taken from a cache, so the whole sweep costs what reading the largest value costs. Prints the
running mean F1 per value every ``--every`` questions and at the end of each file. ``all`` reads
every window (the reader without its first pass). With ``--output-dir``, each value's predictions
are written in the evaluation CLI's ``--output`` format, and each value's F1 difference to the
first value given comes with a 95% paired-bootstrap interval (``benchmarks/compare_conversions.py``).
``--stop-confidence`` and ``--give-up-below`` compare the reader's rules for reading fewer than
``max_windows`` (see :func:`littlebird.reader.read`). With ``--cache-dir``, every window's outputs are kept on disk, so a later run with other values
(or another reading rule of the reader) reads the windows already run from there.

    python scripts/max_windows_sweep.py --data runs/dev/dev-en-long.json runs/dev/dev-ko-long.json
    python scripts/max_windows_sweep.py --data runs/dev/dev-en-article.json --windows all 4 5 \
        --output-dir runs/sweep
    python scripts/max_windows_sweep.py --data runs/dev/dev-en-long.json --windows all 5 \
        --cache-dir runs/window-cache/littlebird-qa --output-dir runs/sweep
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.compare_conversions import paired_bootstrap  # noqa: E402

from littlebird.answer_text import tidy_answer_span  # noqa: E402
from littlebird.checkpoint import load_qa_model, load_tokenizer  # noqa: E402
from littlebird.evaluation import best_scores, metric_language  # noqa: E402
from littlebird.inference import optimize_for_cpu  # noqa: E402
from littlebird.reader import read  # noqa: E402
from littlebird.training.data import read_squad  # noqa: E402


READ_FIELDS = ("top_start_indices", "top_start_logits", "top_end_logits", "answerable_logits", "start_logits")


class RememberedWindows(torch.nn.Module):
    """The model, with each window's outputs kept until :meth:`forget`: the same window read for
    several values of ``max_windows`` runs once. With ``cache_dir``, the outputs the reader uses
    are also written there (one file per window, named by a hash of its input and options) and read
    back by later runs: a sweep rerun with other values costs no model time for windows already run.
    The directory belongs to one model; name it after the model."""

    def __init__(self, model, cache_dir: Path | None = None):
        super().__init__()
        self.model, self.outputs, self.cache_dir = model, {}, cache_dir
        self.computed = self.loaded = 0
        if cache_dir is not None:
            cache_dir.mkdir(parents=True, exist_ok=True)

    def forget(self) -> None:
        self.outputs.clear()

    def forward(self, input_ids, attention_mask, **options):
        key = (input_ids.cpu().numpy().tobytes(), attention_mask.cpu().numpy().tobytes(), repr(sorted(options.items())))
        if key not in self.outputs:
            self.outputs[key] = self._load_or_run(key, input_ids, attention_mask, options)
        return self.outputs[key]

    def _load_or_run(self, key, input_ids, attention_mask, options):
        path = None
        if self.cache_dir is not None:
            path = self.cache_dir / (hashlib.sha1(b"|".join(part if isinstance(part, bytes) else part.encode()
                                                          for part in key)).hexdigest() + ".pt")
            if path.exists():
                self.loaded += 1
                return SimpleNamespace(**torch.load(path))
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, **options)
        self.computed += 1
        if path is None:
            return out
        kept = {name: getattr(out, name) for name in READ_FIELDS if getattr(out, name, None) is not None}
        partial = path.with_suffix(".part")
        torch.save(kept, partial)
        partial.replace(path)  # a run killed mid-write leaves no half file under the final name
        return SimpleNamespace(**kept)

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
    parser.add_argument("--stop-confidence", type=confidence, nargs="+", default=[None],
                        help="values of the reader's stop_confidence ('none': read every one of max_windows; "
                             "default none, so --windows compares counts), each read with every --windows value")
    parser.add_argument("--give-up-below", type=confidence, nargs="+", default=[None],
                        help="values of the reader's give_up_below ('none': no stop when nothing is found; default none)")
    parser.add_argument("--output-dir", type=Path, default=None,
                        help="write <file>-windows-<value>.json per value and print paired intervals")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="keep each window's outputs here and reuse them in later runs (one directory per model)")
    parser.add_argument("--max-questions", type=int, default=None, help="the first N questions of each file")
    parser.add_argument("--every", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    model = RememberedWindows(optimize_for_cpu(load_qa_model(args.model), "auto", inplace=True), args.cache_dir)
    tokenizer = load_tokenizer()
    largest_first = sorted(dict.fromkeys(args.windows), key=lambda k: -1 if k is None else -k)
    rules = [(prior, stop, low) for prior in args.priors for stop in args.stop_confidence for low in args.give_up_below]
    values = [(k, *rule) for k in largest_first for rule in rules]
    shown = [(k, *rule) for k in args.windows for rule in rules]
    for path in args.data:
        totals, n, started = dict.fromkeys(values, 0.0), 0, time.perf_counter()
        rows: dict = {k: [] for k in values}

        def line() -> str:
            scores = " ".join(f"{label(k)}: {100 * totals[k] / n:.1f}" for k in shown)
            return (f"{Path(path).stem} | {n} questions | F1 by max_windows {scores} | {time.perf_counter() - started:.0f} s"
                    f" | windows run {model.computed}, from the cache {model.loaded}")

        for article in read_squad(path):
            for paragraph in article["paragraphs"]:
                for qa in paragraph["qas"]:
                    if args.max_questions is not None and n >= args.max_questions:
                        break
                    model.forget()
                    answers, language = [a["text"] for a in qa["answers"]], metric_language(qa["question"])
                    for k in values:
                        reading = read(qa["question"], paragraph["context"], model=model, tokenizer=tokenizer,
                                       tidy=tidy_answer_span, max_windows=k[0], lexical_prior=k[1],
                                       stop_confidence=k[2], give_up_below=k[3])
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


def confidence(value: str) -> float | None:
    """A ``--stop-confidence`` or ``--give-up-below`` value: a probability, or ``none`` (None: the rule is off)."""
    if value == "none":
        return None
    p = float(value)
    if not 0.0 < p <= 1.0:
        raise argparse.ArgumentTypeError(f"a probability in (0, 1] or 'none', got {value}")
    return p


def label(value: tuple) -> str:
    """(max_windows, lexical_prior, stop_confidence, give_up_below) as '4', 'all', '4+prior1', '5+stop0.9',
    '5+stop0.9+low0.05'."""
    k, prior, stop, low = value
    return (("all" if k is None else str(k)) + (f"+prior{prior:g}" if prior else "") + (f"+stop{stop:g}" if stop else "")
            + (f"+low{low:g}" if low else ""))


def write_predictions(directory: Path, data: str, values: list, rows: dict) -> None:
    """One evaluation-style JSON per value; print each value's paired F1 difference to the first."""
    directory.mkdir(parents=True, exist_ok=True)
    for k in values:
        f1s = [row["f1"] for row in rows[k]]
        summary = {"data": str(data), "max_windows": label((k[0], 0.0, None, None)), "lexical_prior": k[1],
                   "stop_confidence": k[2], "give_up_below": k[3], "questions": len(f1s), "f1": 100 * sum(f1s) / max(1, len(f1s)),
                   "mean_windows": sum(row["n_windows"] for row in rows[k]) / max(1, len(f1s))}
        target = directory / f"{Path(data).stem}-windows-{label(k)}.json"
        target.write_text(json.dumps({"summary": summary, "predictions": rows[k]}, ensure_ascii=False, indent=1))
    reference = {row["id"]: row for row in rows[values[0]]}
    for k in values[1:]:
        n, difference, low, high = paired_bootstrap(reference, {row["id"]: row for row in rows[k]})
        print(f"{Path(data).stem} | max_windows {label(k)} - {label(values[0])}: {difference:+.1f} F1 "
              f"[{low:+.1f}, {high:+.1f}] over {n} questions; windows read a question "
              f"{sum(row['n_windows'] for row in rows[k]) / max(1, len(rows[k])):.2f} against "
              f"{sum(row['n_windows'] for row in rows[values[0]]) / max(1, len(rows[values[0]])):.2f}", flush=True)


if __name__ == "__main__":
    main()
