"""F1 of page-table results split by whether the question places a row by its neighbour ("which country is
above Turkey?", "what film came next after ...?"): a word of order in the question.

    python experiments/table-lookups/neighbour_questions.py ranked-rows=runs/ranked.json ordered-rows=runs/ordered.json
"""

import json
import re
import statistics
import sys

ORDER = re.compile(r"\b(before|after|above|below|previous|prior|next|preceding|following|succeed|preceded|followed)\b")


def main() -> None:
    print("| results | neighbour questions: n, F1 | other questions: n, F1 |")
    print("|---|---:|---:|")
    for argument in sys.argv[1:]:
        name, path = argument.split("=", 1)
        rows = json.load(open(path))["predictions"]
        parts = [
            [r["f1"] for r in rows if bool(ORDER.search(r["question"].lower())) == wanted] for wanted in (True, False)
        ]
        cells = [f"{len(f1s)}, {100 * statistics.fmean(f1s):.1f}" if f1s else "0, -" for f1s in parts]
        print(f"| {name} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
