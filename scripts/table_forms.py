"""How well a checkpoint reads each table form (littlebird.table_text): the dev files written in every form,
evaluated, and one table printed.

    python scripts/table_forms.py --data-dir ../shared/data --model assets/littlebird-qa

For each form it writes the dev files (``littlebird dev-files --table-form FORM``) into
``OUTPUT/FORM/``. The page-table file is rewritten to hold the same questions in every form: those whose
answer each form keeps as one span (a form that writes a table's headers before every row can lose an answer
that is only a header), sampled as ``dev-files`` samples. Each chosen file is then evaluated with
``littlebird evaluate`` (its result JSON beside the file; a result already there is reused, so a stopped run
resumes). A file whose contexts are the same in every form (no tables: ``dev-en-article``) is evaluated once.

The table: F1 (EM) per file, the page-table file's "no answer" share and best guesses in the answer's row,
its model text per page in tokens against the ``tags`` form (median, p90), and its seconds per question
(p50, p90).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from littlebird.table_text import TABLE_FORMS
from littlebird.training.data import keep_questions, read_squad, take_questions, write_squad
from littlebird.training.dev_files import write_dev_files
from littlebird.training.page_tables import (
    TABLE_PAGES_FILE,
    read_table_pages,
    split_table_pages,
    table_question_articles,
)

FILES = ("dev-en-page-table", "dev-en-page-shaped", "dev-ko-page-shaped", "dev-en-article")


def _ids(articles: list[dict]) -> set[str]:
    return {qa["id"] for article in articles for paragraph in article["paragraphs"] for qa in paragraph["qas"]}


def write_forms(data_dir: Path, output: Path, forms: list[str], max_questions: int, dev_fraction: float) -> None:
    """Every form's dev files, the page-table file over the questions every form keeps."""
    pages = read_table_pages(data_dir / TABLE_PAGES_FILE)
    _, dev = split_table_pages(pages, dev_fraction)
    tables = {form: table_question_articles(dev, form)[0] for form in forms}
    common = set.intersection(*(_ids(articles) for articles in tables.values()))
    chosen = _ids(take_questions(keep_questions(tables[forms[0]], common), max_questions, seed=0))
    for form in forms:
        folder = output / form
        if not (folder / "dev-en-page-table.json").exists():
            write_dev_files(data_dir, folder, dev_fraction=dev_fraction, max_questions=max_questions, table_form=form)
            write_squad(folder / "dev-en-page-table.json", keep_questions(tables[form], chosen))
        print(
            f"{form}: {len(_ids(tables[form]))} page-table questions kept, {len(common)} kept by every form, "
            f"{len(chosen)} chosen",
            flush=True,
        )


def _contexts(path: Path) -> list[str]:
    return [p["context"] for a in read_squad(path) for p in a["paragraphs"]]


def evaluate(output: Path, forms: list[str], files: list[str], model: str, threads: int | None) -> None:
    """``littlebird evaluate`` of each form's files; a file equal to an earlier form's reuses its result."""
    from littlebird.evaluation import main as evaluate_main

    for name in files:
        for form in forms:
            data, result = output / form / f"{name}.json", output / form / f"{name}.result.json"
            if result.exists():
                continue
            same = next(
                (
                    output / f / f"{name}.result.json"
                    for f in forms
                    if f != form
                    and (output / f / f"{name}.result.json").exists()
                    and _contexts(output / f / f"{name}.json") == _contexts(data)
                ),
                None,
            )
            if same is not None:
                result.write_text(same.read_text())
                continue
            argv = ["--model", model, "--data", str(data), "--output", str(result)]
            evaluate_main(argv + (["--threads", str(threads)] if threads else []))


def _percentile(values: list[float], share: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(share * len(values)))]


def token_growth(output: Path, forms: list[str]) -> dict[str, tuple[float, float]]:
    """Per form, the page-table file's model text per page in tokens over the ``tags`` form's: (median, p90)."""
    from littlebird.checkpoint import load_tokenizer

    tokenizer = load_tokenizer()
    counts = {}
    for form in forms:
        contexts = {
            a["title"]: a["paragraphs"][0]["context"] for a in read_squad(output / form / "dev-en-page-table.json")
        }
        counts[form] = {
            title: len(tokenizer(text, add_special_tokens=False)["input_ids"]) for title, text in contexts.items()
        }
    base = counts.get("tags")
    growth = {}
    for form in forms:
        ratios = [counts[form][t] / base[t] for t in counts[form] if base and t in base and base[t]]
        growth[form] = (statistics.median(ratios), _percentile(ratios, 0.9)) if ratios else (float("nan"),) * 2
    return growth


def report(output: Path, forms: list[str], files: list[str]) -> str:
    """The Markdown table of every form's results."""
    growth = token_growth(output, forms)
    short = {
        "dev-en-page-table": "page-table",
        "dev-en-page-shaped": "en page-shaped",
        "dev-ko-page-shaped": "ko page-shaped",
        "dev-en-article": "en article",
    }
    head = [
        "form",
        *(f"{short.get(n, n)} F1 (EM)" for n in files),
        "page-table 'no answer'",
        "page-table best guess in the answer's row",
        "page-table tokens / page vs tags (median, p90)",
        "page-table s / question (p50, p90)",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"]
    for form in forms:
        cells, table = [form], None
        for name in files:
            path = output / form / f"{name}.result.json"
            if not path.exists():
                cells.append("")
                continue
            summary = json.loads(path.read_text())["summary"]
            cells.append(f"{summary['overall']['f1']:.1f} ({summary['overall']['em']:.1f})")
            if name == "dev-en-page-table":
                table = summary
        if table:
            latency = table["latency_seconds"]
            cells += [
                f"{table['no_answer_rate']:.1%}",
                f"{table.get('answer_row_rate', 0):.1%}",
                f"{growth[form][0]:.2f}, {growth[form][1]:.2f}",
                f"{latency['p50']:.2f}, {latency['p90']:.2f}",
            ]
        else:
            cells += [""] * 4
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default="../shared/data")
    parser.add_argument("--output-dir", default="runs/table-forms")
    parser.add_argument("--model", default="assets/littlebird-qa")
    parser.add_argument("--forms", nargs="+", choices=TABLE_FORMS, default=list(TABLE_FORMS))
    parser.add_argument("--files", nargs="+", choices=FILES, default=list(FILES))
    parser.add_argument("--max-questions", type=int, default=200)
    parser.add_argument("--dev-fraction", type=float, default=0.1)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--report-only", action="store_true", help="print the table of the results there")
    args = parser.parse_args(argv)
    output = Path(args.output_dir)
    if not args.report_only:
        write_forms(Path(args.data_dir), output, args.forms, args.max_questions, args.dev_fraction)
        evaluate(output, args.forms, args.files, args.model, args.threads)
    print(report(output, args.forms, args.files))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
