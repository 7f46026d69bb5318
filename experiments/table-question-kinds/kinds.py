"""F1 on the page-table dev file by kind of question: comparisons of rows and lookups of one row.

    python experiments/table-question-kinds/kinds.py NAME=RESULT.json [NAME=RESULT.json ...]

Each RESULT is a `littlebird evaluate --output` file of `dev-en-page-table.json`. A question is a comparison when
it holds a word that compares or counts rows (most, least, first, last, more, than, how many, total, ...);
every other one is a lookup. The split is by words, so some comparisons stand among the lookups ("who had the
fastest ski time?"); it says where a checkpoint's gain lies, not the exact share of each kind.
"""

import argparse
import json
import re

COMPARING = re.compile(
    r"\b(most|least|more|less|fewer|first|last|highest|lowest|largest|smallest|longest|shortest|top|best|worst|"
    r"before|after|next|previous|only|total|how many|difference|than|earliest|latest|biggest|greatest)\b",
    re.IGNORECASE,
)


def kind(question: str) -> str:
    """'comparison' or 'lookup'."""
    return "comparison" if COMPARING.search(question) else "lookup"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", nargs="+", metavar="NAME=RESULT.json")
    args = parser.parse_args(argv)
    named = [entry.split("=", 1) for entry in args.results]
    predictions = {name: json.load(open(path, encoding="utf-8"))["predictions"] for name, path in named}
    first = next(iter(predictions.values()))
    kinds = {p["id"]: kind(p["question"]) for p in first}
    print("| kind | questions | " + " | ".join(f"{name} F1" for name, _ in named) + " |")
    print("|---|---:|" + "---:|" * len(named))
    for which in ("lookup", "comparison"):
        ids = {i for i, k in kinds.items() if k == which}
        cells = []
        for name, _ in named:
            rows = [p for p in predictions[name] if p["id"] in ids]
            if len(rows) != len(ids):
                raise SystemExit(f"{name} does not hold the same questions as the first results")
            cells.append(f"{100 * sum(p['f1'] for p in rows) / len(rows):.1f}")
        print(f"| {which} | {len(ids)} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
