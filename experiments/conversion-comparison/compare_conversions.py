"""The README's comparison of the three conversions: dev F1 by context length, latency and memory.

Joins what ``compare_conversions.sh`` (beside it) wrote: the evaluation CLI's ``--output`` files (any number
per model; their predictions are pooled, so the English and Korean files together fill the length buckets)
and one ``benchmarks/bench_models.py --json`` file, and prints one Markdown table.

    python experiments/conversion-comparison/compare_conversions.py --bench runs/eval/bench-conversions.json \\
        --eval littlebird runs/eval/student-dev-*.json --eval bigbird-taper runs/eval/bigbird-taper-dev-*.json \\
        --eval longformer runs/eval/longformer-dev-*.json

F1 is the evaluation CLI's (SQuAD's for English questions, KorQuAD's for Korean), averaged over the questions
of a bucket, with their number in brackets. The first ``--eval`` is the reference: each other row's F1
difference to it over the questions both answered comes with a 95% interval from a paired bootstrap (2,000
resamplings of those questions, ``littlebird.comparison``). Latency and memory are one forward of batch 1 at
the length named, from ``benchmarks/bench_models.py`` (random weights of the models' size).
"""

import argparse
import json
from pathlib import Path

from littlebird.comparison import paired_bootstrap, pooled_f1, read_predictions
from littlebird.evaluation import LENGTH_BUCKETS

# the evaluation names of the conversions -> bench_models.py's model names
BENCH_NAMES = {"littlebird": "littlebird", "bigbird-taper": "bigbird", "longformer": "longformer"}


def comparison_table(
    evaluations: dict[str, list[Path]], bench_rows: list[dict], lengths: tuple[int, ...] = (4096, 16384)
) -> str:
    """One row per conversion: F1 per length bucket any of them has, then time and memory per length."""
    predictions = {name: read_predictions(paths) for name, paths in evaluations.items()}
    scores = {name: pooled_f1(rows) for name, rows in predictions.items()}
    buckets = [name for _, name in LENGTH_BUCKETS if any(name in s for s in scores.values())] + ["all"]
    bench = {(row["model"], row["length"]): row for row in bench_rows}
    reference_name = next(iter(evaluations))
    reference = predictions[reference_name]
    header = (
        [f"F1 {name} tokens" for name in buckets[:-1]]
        + ["F1 all", f"F1 all - {reference_name}'s (95% CI)"]
        + [f"{n // 1024}K s" for n in lengths]
        + [f"{n // 1024}K MB" for n in lengths]
    )
    lines = ["| conversion | " + " | ".join(header) + " |", "|---" + "|---:" * len(header) + "|"]
    for name, score in scores.items():
        cells = [f"{score[b][1]:.1f} ({score[b][0]})" if b in score else "-" for b in buckets]
        if name == reference_name:
            cells.append("-")
        else:
            _, difference, low, high = paired_bootstrap(reference, predictions[name])
            cells.append(f"{difference:+.1f} ({low:+.1f}, {high:+.1f})")
        runs = [bench.get((BENCH_NAMES.get(name, name), n), {}) for n in lengths]
        cells += [f"{r['median_s']:.2f}" if "median_s" in r else "-" for r in runs]
        cells += [f"{r['peak_mb']:.0f}" if "peak_mb" in r else "-" for r in runs]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> str:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--eval",
        nargs="+",
        action="append",
        required=True,
        metavar=("NAME", "RESULT_JSON"),
        help="a conversion's name, then its evaluation --output files (repeat per conversion)",
    )
    parser.add_argument("--bench", type=Path, help="bench_models.py --json output")
    parser.add_argument("--lengths", type=int, nargs="+", default=[4096, 16384])
    args = parser.parse_args(argv)
    evaluations = {}
    for name, *paths in args.eval:
        if not paths:
            parser.error(f"--eval {name}: no result files")
        evaluations[name] = [Path(p) for p in paths]
    bench_rows = json.loads(args.bench.read_text()) if args.bench else []
    table = comparison_table(evaluations, bench_rows, tuple(args.lengths))
    print(table)
    return table


if __name__ == "__main__":
    main()
