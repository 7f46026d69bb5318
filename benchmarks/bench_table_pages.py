"""Seconds per question on real Wikipedia pages with tables, in each table form, as the app reads them.

Each table form (``littlebird.table_text``) writes a page's tables at another length: header-keyed rows repeat
their headers, so a page's model text grows. This times the app's default reader (ranked windows, glimpses, the
stop rules) on the held-out pages of ``qa/wtq-train-pages.jsonl.gz`` (the dev split of ``dev-en-page-table``),
each question of the same sample asked of the page in every form, the first form the baseline of the ratios:

    python benchmarks/bench_table_pages.py --data-dir ../shared/data --forms tags rows --max-questions 100

The table: per form, the model text per page in tokens (median, p90), seconds per question (p50, p90, the
slowest) with its p50 over the first form's (this run), windows read per question, and how often a window
holding the gold answer was ranked first by the lexical first pass and read by the model. Each question's time
includes tokenizing its page (``forget_encodings`` first), as the first question on a new page costs. To see an
AVX2-only CPU's numbers on a newer one, run with ``ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2
MKL_ENABLE_INSTRUCTIONS=AVX2``; the CPU line heads the table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_pipeline import cpu_line  # noqa: E402

from littlebird.answer_text import tidy_answer_span  # noqa: E402
from littlebird.checkpoint import load_qa_model, load_tokenizer  # noqa: E402
from littlebird.evaluation import gold_answer_windows  # noqa: E402
from littlebird.reader import DEFAULT_READING, encode_text, forget_encodings, read  # noqa: E402
from littlebird.table_text import TABLE_FORMS  # noqa: E402
from littlebird.training.data import keep_questions, take_questions  # noqa: E402
from littlebird.training.page_tables import (
    TABLE_PAGES_FILE,
    read_table_pages,
    split_table_pages,  # noqa: E402
    table_question_articles,
)


def _ids(articles: list[dict]) -> set[str]:
    return {qa["id"] for article in articles for paragraph in article["paragraphs"] for qa in paragraph["qas"]}


def _percentile(values: list[float], share: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(share * len(values)))]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default="../shared/data")
    parser.add_argument("--checkpoint", default="assets/littlebird-qa")
    parser.add_argument("--forms", nargs="+", choices=TABLE_FORMS, default=["tags", "rows"])
    parser.add_argument("--max-questions", type=int, default=100, help="questions asked in every form")
    parser.add_argument("--dev-fraction", type=float, default=0.1)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args(argv)
    _, dev = split_table_pages(read_table_pages(Path(args.data_dir) / TABLE_PAGES_FILE), args.dev_fraction)
    articles = {form: table_question_articles(dev, form)[0] for form in args.forms}
    common = set.intersection(*(_ids(a) for a in articles.values()))
    chosen = _ids(take_questions(keep_questions(articles[args.forms[0]], common), args.max_questions, seed=0))
    tokenizer = load_tokenizer(args.checkpoint)
    model = load_qa_model(args.checkpoint)
    options = replace(DEFAULT_READING, threads=args.threads)  # read() sets the threads and the CPU mode
    print(cpu_line())
    print(
        f"{len(chosen)} questions on {len(dev)} held-out pages; {torch.get_num_threads()} threads; reader: the app's "
        f"default (ranked windows, glimpses, stop rules)\n"
    )
    print(
        "| table form | tokens / page (median, p90) | s / question (p50, p90, slowest) | p50 vs first | "
        "windows read | gold answer's window ranked first | gold answer's window read |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    base = None
    for form in args.forms:
        seconds, windows, first, was_read, lengths = [], [], [], [], []
        for article in keep_questions(articles[form], chosen):
            context = article["paragraphs"][0]["context"]
            lengths.append(len(encode_text(context, tokenizer).input_ids))
            for qa in article["paragraphs"][0]["qas"]:
                forget_encodings()
                started = time.perf_counter()
                reading = read(
                    qa["question"], context, model=model, tokenizer=tokenizer, options=options, tidy=tidy_answer_span
                )
                seconds.append(time.perf_counter() - started)
                windows.append(reading.n_windows)
                gold = qa["answers"][0]
                rank, read_it = gold_answer_windows(
                    reading, tokenizer, context, gold["answer_start"], gold["answer_start"] + len(gold["text"])
                )
                first.append(rank == 0)
                was_read.append(read_it)
        p50 = statistics.median(seconds)
        base = base or p50
        print(
            f"| {form} | {statistics.median(lengths):,.0f}, {_percentile(lengths, 0.9):,.0f} | "
            f"{p50:.2f}, {_percentile(seconds, 0.9):.2f}, {max(seconds):.2f} | {p50 / base:.2f} | "
            f"{statistics.fmean(windows):.2f} | {statistics.fmean(first):.1%} | {statistics.fmean(was_read):.1%} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
