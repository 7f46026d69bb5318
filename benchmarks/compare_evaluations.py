"""Two sets of evaluation results, file by file: F1, the F1 difference with its 95% paired interval, and the cost.

Each set is a pattern with ``{}`` standing for the dev file's name, naming ``littlebird evaluate --output``
files: ``runs/compare/shipped-{}.json``, or one folder per reader setting, ``runs/eval-1024/{}.json``. For each
file both sets hold, prints the questions, both F1s, the difference (B - A) with a 95% interval from a paired
bootstrap over the questions (2,000 resamplings, ``compare_conversions.paired_bootstrap``), the share of
"no answer" decisions and the mean windows read a question under each; the last line says whether B is ahead
on every file and whether it is within ``--tolerance`` points of A on every file.

    python benchmarks/compare_evaluations.py --a 1024 'runs/eval-1024/{}.json' --b 384 'runs/eval-384/{}.json' \\
        --files en-paragraph ko-paragraph en-article ko-article en-long ko-long
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from compare_conversions import paired_bootstrap, pooled_f1, read_predictions


def summary(path: Path) -> dict:
    """The ``summary`` of one evaluation output file."""
    return json.loads(path.read_text())["summary"]


def compare(a_pattern: str, b_pattern: str, files: list[str]) -> list[dict]:
    """One row per file both patterns name an existing result for."""
    rows = []
    for name in files:
        a_path, b_path = Path(a_pattern.format(name)), Path(b_pattern.format(name))
        if not (a_path.exists() and b_path.exists()):
            continue
        a, b = read_predictions([a_path]), read_predictions([b_path])
        n, difference, low, high = paired_bootstrap(a, b)
        a_summary, b_summary = summary(a_path), summary(b_path)
        rows.append({"file": name, "n": n, "a_f1": pooled_f1(a)["all"][1], "b_f1": pooled_f1(b)["all"][1],
                     "difference": difference, "low": low, "high": high,
                     "a_no_answer": a_summary.get("no_answer_rate"), "b_no_answer": b_summary.get("no_answer_rate"),
                     "a_windows": a_summary.get("mean_windows"), "b_windows": b_summary.get("mean_windows")})
    return rows


def table(rows: list[dict], a_name: str, b_name: str, tolerance: float) -> str:
    """The Markdown table and the verdict line."""
    def share(x):
        return "-" if x is None else f"{100 * x:.1f}%"

    def mean(x):
        return "-" if x is None else f"{x:.2f}"

    lines = [f"| dev file | questions | {a_name} F1 | {b_name} F1 | difference (95% CI) | 'no answer' {a_name} / "
             f"{b_name} | windows read {a_name} / {b_name} |", "|---|---:|---:|---:|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['file']} | {r['n']} | {r['a_f1']:.1f} | {r['b_f1']:.1f} | {r['difference']:+.1f} "
                     f"({r['low']:+.1f}, {r['high']:+.1f}) | {share(r['a_no_answer'])} / {share(r['b_no_answer'])} | "
                     f"{mean(r['a_windows'])} / {mean(r['b_windows'])} |")
    ahead = all(r["difference"] > 0 for r in rows)
    within = all(r["difference"] >= -tolerance for r in rows)
    lines.append(f"{b_name} ahead on all {len(rows)} files: {'yes' if ahead else 'no'}; "
                 f"within {tolerance:g} F1 of {a_name} on all: {'yes' if within else 'no'}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--a", nargs=2, metavar=("NAME", "PATTERN"), required=True, help="the reference")
    parser.add_argument("--b", nargs=2, metavar=("NAME", "PATTERN"), required=True, help="the candidate")
    parser.add_argument("--files", nargs="+", required=True, help="dev file names, put in place of {}")
    parser.add_argument("--tolerance", type=float, default=1.0, help="F1 points B may lose on a file")
    args = parser.parse_args(argv)
    rows = compare(args.a[1], args.b[1], args.files)
    if not rows:
        print("no file has results in both sets", file=sys.stderr)
        return 1
    print(table(rows, args.a[0], args.b[0], args.tolerance))
    return 0


if __name__ == "__main__":
    sys.exit(main())
