"""Dev F1 of the reader as a function of ``max_windows``: how many of the best-ranked windows to read.

Each question is read once per value of ``--windows`` through ``littlebird.reader.read`` (the served
reader, with the app's answer tidying), largest first; a window already run for the question is
taken from a cache, so the whole sweep costs what reading the largest value costs. Prints the
running mean F1 per value every ``--every`` questions and at the end of each file.

    python scripts/max_windows_sweep.py --data runs/dev/dev-en-long.json runs/dev/dev-ko-long.json
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

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
    parser.add_argument("--windows", type=int, nargs="+", default=[1, 2, 3, 4, 5, 6, 8])
    parser.add_argument("--max-questions", type=int, default=None, help="the first N questions of each file")
    parser.add_argument("--every", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    model = RememberedWindows(optimize_for_cpu(load_qa_model(args.model), "auto", inplace=True))
    tokenizer = load_tokenizer()
    values = sorted(set(args.windows), reverse=True)
    for path in args.data:
        totals, n, started = dict.fromkeys(values, 0.0), 0, time.perf_counter()

        def line() -> str:
            scores = " ".join(f"{k}: {100 * totals[k] / n:.1f}" for k in sorted(values))
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
                                       tidy=tidy_answer_span, max_windows=k)
                        totals[k] += best_scores(reading.answers[0].text if reading.answers else "", answers, language)[1]
                    n += 1
                    if n % args.every == 0:
                        print(line(), flush=True)
        print(line(), flush=True)


if __name__ == "__main__":
    main()
