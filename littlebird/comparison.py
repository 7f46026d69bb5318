"""Two checkpoints' evaluation results side by side: F1 differences with 95% paired-bootstrap intervals.

``littlebird evaluate --compare A B`` reads two sets of ``littlebird evaluate --output`` files, one per dev
file: a pattern with ``{}`` standing for the dev file's name (``runs/compare/shipped-{}.json``), a folder
(``runs/eval-1024``, holding ``<name>.json``), or a single result file. For each dev file both sets hold it
prints the questions, both F1s, the difference (B - A) with a 95% interval from a paired bootstrap over the
questions (2,000 resamplings), the share of "no answer" decisions and the mean windows read a question under
each; the last line says whether B is ahead on every file and whether it is within ``tolerance`` points of A
on every file.

    littlebird evaluate --compare runs/compare/shipped-{}.json runs/compare/candidate-{}.json \\
        --names shipped candidate --files dev-en-paragraph dev-ko-paragraph dev-en-article dev-ko-article

Questions pair by (dev file's name, question id), so the same dev file written into two folders pairs.
"""

from __future__ import annotations

import glob
import json
import random
import re
import statistics
from pathlib import Path

LENGTH_BUCKETS = ((512, "<=512"), (2048, "512-2K"), (4096, "2K-4K"), (8192, "4K-8K"), (float("inf"), ">8K"))


def length_bucket(n_tokens: int) -> str:
    """The name of the context-length bucket (in document tokens) that results are grouped by."""
    return next(name for limit, name in LENGTH_BUCKETS if n_tokens <= limit)


def read_predictions(paths: list[Path]) -> dict[tuple[str, str], dict]:
    """(data file's name, question id) -> prediction row, over every ``--output`` file in ``paths``. The
    name, not the path: the same dev file written into two folders holds the same questions."""
    rows = {}
    for path in paths:
        result = json.loads(Path(path).read_text())
        for row in result["predictions"]:
            rows[(Path(result["summary"].get("data", str(path))).name, row["id"])] = row
    return rows


def paired_bootstrap(
    reference: dict, other: dict, *, rounds: int = 2000, seed: int = 0
) -> tuple[int, float, float, float]:
    """Mean F1 difference (other - reference, percent) over the questions both answered, with a
    95% interval from resampling those questions -> (questions, difference, low, high)."""
    keys = sorted(set(reference) & set(other))
    if not keys:
        return 0, float("nan"), float("nan"), float("nan")
    differences = [100 * (other[k]["f1"] - reference[k]["f1"]) for k in keys]
    rng = random.Random(seed)
    means = sorted(statistics.fmean(rng.choices(differences, k=len(differences))) for _ in range(rounds))
    return len(keys), statistics.fmean(differences), means[int(0.025 * rounds)], means[int(0.975 * rounds) - 1]


def pooled_f1(predictions: dict) -> dict[str, tuple[int, float]]:
    """Bucket name (and "all") -> (questions, mean F1 in percent) over ``read_predictions``' rows."""
    rows = list(predictions.values())
    buckets: dict[str, list[float]] = {}
    for row in rows:
        buckets.setdefault(length_bucket(row["n_tokens"]), []).append(row["f1"])
    buckets["all"] = [row["f1"] for row in rows]
    return {name: (len(f1s), 100 * statistics.fmean(f1s)) for name, f1s in buckets.items() if f1s}


def result_pattern(results: str) -> str:
    """A set of results as a pattern with ``{}`` for the dev file's name: a folder stands for ``<folder>/{}.json``,
    and one result file for itself (a set of one file)."""
    if "{}" in results or Path(results).is_file():
        return results
    if Path(results).is_dir():
        return str(Path(results) / "{}.json")
    raise ValueError(f"{results} is neither a pattern with {{}} for the dev file's name, a folder nor a result file")


def result_names(pattern: str) -> list[str]:
    """The dev file names that ``pattern`` (with ``{}``) has a result file for, sorted; a single result file's
    name without its suffix."""
    if "{}" not in pattern:
        return [Path(pattern).stem]
    matcher = re.compile(re.escape(pattern).replace(re.escape("{}"), "(.+)"))
    found = (matcher.fullmatch(path) for path in glob.glob(pattern.replace("{}", "*")))
    return sorted(match.group(1) for match in found if match)


def compare_sets(a_pattern: str, b_pattern: str, files: list[str]) -> list[dict]:
    """One row per file both patterns name an existing result for, in the order of ``files``."""
    rows = []
    for name in files:
        a_path, b_path = Path(a_pattern.format(name)), Path(b_pattern.format(name))
        if not (a_path.exists() and b_path.exists()):
            continue
        a, b = read_predictions([a_path]), read_predictions([b_path])
        n, difference, low, high = paired_bootstrap(a, b)
        a_summary = json.loads(a_path.read_text())["summary"]
        b_summary = json.loads(b_path.read_text())["summary"]
        rows.append(
            {
                "file": name,
                "n": n,
                "a_f1": pooled_f1(a)["all"][1],
                "b_f1": pooled_f1(b)["all"][1],
                "difference": difference,
                "low": low,
                "high": high,
                "a_no_answer": a_summary.get("no_answer_rate"),
                "b_no_answer": b_summary.get("no_answer_rate"),
                "a_windows": a_summary.get("mean_windows"),
                "b_windows": b_summary.get("mean_windows"),
            }
        )
    return rows


def comparison_table(rows: list[dict], a_name: str, b_name: str, tolerance: float = 1.0) -> str:
    """The Markdown table of ``compare_sets``' rows and the verdict line: is B ahead on every file, and
    within ``tolerance`` F1 points of A on every file."""

    def share(x):
        return "-" if x is None else f"{100 * x:.1f}%"

    def mean(x):
        return "-" if x is None else f"{x:.2f}"

    lines = [
        f"| dev file | questions | {a_name} F1 | {b_name} F1 | difference (95% CI) | 'no answer' {a_name} / "
        f"{b_name} | windows read {a_name} / {b_name} |",
        "|---|---:|---:|---:|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['file']} | {r['n']} | {r['a_f1']:.1f} | {r['b_f1']:.1f} | {r['difference']:+.1f} "
            f"({r['low']:+.1f}, {r['high']:+.1f}) | {share(r['a_no_answer'])} / {share(r['b_no_answer'])} | "
            f"{mean(r['a_windows'])} / {mean(r['b_windows'])} |"
        )
    ahead = all(r["difference"] > 0 for r in rows)
    within = all(r["difference"] >= -tolerance for r in rows)
    lines.append(
        f"{b_name} ahead on all {len(rows)} files: {'yes' if ahead else 'no'}; "
        f"within {tolerance:g} F1 of {a_name} on all: {'yes' if within else 'no'}"
    )
    return "\n".join(lines)


def compare_results(
    a: str, b: str, files: list[str] | None = None, names: tuple[str, str] = ("A", "B"), tolerance: float = 1.0
) -> str:
    """``littlebird evaluate --compare A B``'s table for two sets of results (patterns with ``{}``, folders, or
    one result file each) on ``files`` (default: every dev file A has a result for). Raises ``ValueError``
    when no file has results in both sets."""
    a_pattern, b_pattern = result_pattern(a), result_pattern(b)
    files = files or result_names(a_pattern)
    rows = compare_sets(a_pattern, b_pattern, files)
    if not rows:
        raise ValueError(
            f"no file of {', '.join(files) or '(none found)'} has results in both {a_pattern} and {b_pattern}"
        )
    return comparison_table(rows, *names, tolerance=tolerance)
