"""How often the answerable head is sure of a window that lacks the answer, on page-shaped dev documents.

Every window of each question's document is read through the app's reader (``littlebird.reader.read``
with every window, no stopping rule), and each window is sorted by whether it holds the whole answer.
One Markdown row per checkpoint and dev file:

- ``wrong > T``: the share of windows lacking the answer whose answerable probability is above ``T``
  (0.9, the reader's stop confidence: such a window can end a reading before the right part is read);
- ``right > T``: the same share of the windows that hold the answer;
- ``wrong first``: the share of questions whose most confident window lacks the answer.

    littlebird dev-files --data-dir ../shared/data --output-dir runs/dev --max-questions 200
    python experiments/answerable-on-pages/answerable_on_pages.py \\
        --model assets/littlebird-qa runs/page-shaped/page_shaped/model \\
        --data runs/dev/dev-en-page-shaped.json runs/dev/dev-ko-page-shaped.json --threads 2
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from littlebird.checkpoint import load_qa_model, load_tokenizer
from littlebird.inference import CPU_MODES, optimize_for_cpu
from littlebird.reader import (
    DEFAULT_MAX_LENGTH,
    DEFAULT_STOP_CONFIDENCE,
    ReadingOptions,
    encode_text,
    model_device,
    read,
    window_length,
)
from littlebird.training.data import read_squad

DEFAULT_THRESHOLD = DEFAULT_STOP_CONFIDENCE  # a window this sure can end a reading


@dataclass
class WindowConfidence:
    """What the answerable head said of every window of one dev file's questions."""

    questions: int
    wrong_windows: int
    wrong_above: int  # windows lacking the answer with answerable probability above the threshold
    right_windows: int
    right_above: int
    wrong_first: int  # questions whose most confident window lacks the answer

    def shares(self) -> tuple[float, float, float]:
        """(wrong > T, right > T, wrong first), each a share of its whole (0 where the whole is empty)."""
        return (
            self.wrong_above / max(1, self.wrong_windows),
            self.right_above / max(1, self.right_windows),
            self.wrong_first / max(1, self.questions),
        )


def answer_tokens(spans, start: int, end: int) -> tuple[int, int] | None:
    """First and last document token whose shown-text span overlaps ``[start, end)``, or None."""
    inside = [i for i, (a, b) in enumerate(spans) if a >= 0 and a < end and start < b]
    return (inside[0], inside[-1]) if inside else None


def window_confidence(
    model,
    tokenizer,
    articles: list[dict],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    max_length: int | None = DEFAULT_MAX_LENGTH,
    max_questions: int | None = None,
) -> WindowConfidence:
    """Read every window of each question of ``articles`` (SQuAD) and count the answerable head's sure windows."""
    counts = WindowConfidence(0, 0, 0, 0, 0, 0)
    for article in articles:
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            spans = encode_text(context, tokenizer).spans
            for qa in paragraph["qas"]:
                if max_questions is not None and counts.questions >= max_questions:
                    return counts
                answer = qa["answers"][0]
                tokens = answer_tokens(spans, answer["answer_start"], answer["answer_start"] + len(answer["text"]))
                if tokens is None:
                    continue
                options = ReadingOptions(
                    max_length=max_length, max_windows=None, stop_confidence=None, give_up_below=None
                )
                reading = read(qa["question"], context, model=model, tokenizer=tokenizer, options=options)
                counts.questions += 1
                best, best_holds = -1.0, False
                for window in reading.windows:
                    probability = window.answerable_probability
                    holds = window.start <= tokens[0] and tokens[1] < window.end
                    if holds:
                        counts.right_windows += 1
                        counts.right_above += probability > threshold
                    else:
                        counts.wrong_windows += 1
                        counts.wrong_above += probability > threshold
                    if probability > best:
                        best, best_holds = probability, holds
                counts.wrong_first += not best_holds
    return counts


def table(rows: list[tuple[str, str, WindowConfidence]], threshold: float) -> str:
    """The Markdown table of (model, dev file, counts) rows."""
    lines = [
        f"| model | data | questions | windows lacking the answer | wrong > {threshold:g} | "
        f"windows with it | right > {threshold:g} | wrong first |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for model, data, counts in rows:
        wrong, right, first = counts.shares()
        lines.append(
            f"| {model} | {data} | {counts.questions} | {counts.wrong_windows} | {100 * wrong:.1f}% | "
            f"{counts.right_windows} | {100 * right:.1f}% | {100 * first:.1f}% |"
        )
    return "\n".join(lines)


def main(argv=None) -> str:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", nargs="+", required=True, help="checkpoint folders (LittleBird, teacher, baseline)")
    parser.add_argument("--data", nargs="+", required=True, help="SQuAD dev files, e.g. dev-en-page-shaped.json")
    parser.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD)
    parser.add_argument("--max-length", type=int, default=DEFAULT_MAX_LENGTH, help="the reader's window")
    parser.add_argument("--max-questions", type=int, default=None, help="the first N questions of each file")
    parser.add_argument("--cpu-mode", choices=CPU_MODES, default="auto")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--output", default=None, help="also write the counts as JSON")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    rows = []
    for folder in args.model:
        model = load_qa_model(folder)
        if model_device(model).type == "cpu":
            model = optimize_for_cpu(model, args.cpu_mode, inplace=True)
        tokenizer = load_tokenizer(folder)
        for path in args.data:
            counts = window_confidence(
                model,
                tokenizer,
                read_squad(path),
                threshold=args.threshold,
                max_length=window_length(model, args.max_length),
                max_questions=args.max_questions,
            )
            rows.append((folder, Path(path).name, counts))
            print(f"{folder} {Path(path).name}: {counts}", flush=True)
    text = table(rows, args.threshold)
    print(text)
    if args.output:
        Path(args.output).write_text(json.dumps([{"model": m, "data": d, **asdict(c)} for m, d, c in rows], indent=1))
    return text


if __name__ == "__main__":
    main()
