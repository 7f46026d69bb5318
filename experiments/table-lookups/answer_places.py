"""Where a page-shaped dev file's answers stand, and each model's F1 by place.

A page-shaped dev page is given either as the app shows it (``Key | Value`` lines, ``• item`` lines) or as
the model reads it (``<h1> ... <p> ... <td> ...`` tag tokens); an answer stands in a table row, a list item or
prose. Prints a Markdown table: per place, the number of questions and each result's F1 on them.

    python experiments/table-lookups/answer_places.py runs/dev200/dev-en-page-shaped.json \
        shipped=runs/base200/dev-en-page-shaped.json stage=<result of python -m littlebird.evaluation --output>
"""

from __future__ import annotations

import argparse
import json
import re
from collections import defaultdict

TAGS = re.compile(r"<(p|td|th|li|tr|h\d)>")


def place(context: str, start: int) -> str:
    """'shown'/'tagged' page, then 'row', 'item' or 'prose': where the answer starting at ``start`` stands."""
    if TAGS.search(context[:2000]):
        tags = TAGS.findall(context[max(0, start - 3000) : start])
        last = tags[-1] if tags else "p"
        return "tagged " + {"td": "row", "th": "row", "li": "item"}.get(last, "prose")
    line = context[context.rfind("\n", 0, start) + 1 :].split("\n", 1)[0]
    return "shown " + ("row" if "|" in line else "item" if line.startswith("•") else "prose")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", help="the dev file (SQuAD format)")
    parser.add_argument("results", nargs="+", help="NAME=RESULT_JSON, from python -m littlebird.evaluation --output")
    args = parser.parse_args()
    places = {}
    for article in json.load(open(args.data, encoding="utf-8"))["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                if qa.get("answers"):
                    places[qa["id"]] = place(paragraph["context"], qa["answers"][0]["answer_start"])
    names, scores = [], []
    for item in args.results:
        name, path = item.split("=", 1)
        by_place = defaultdict(list)
        for prediction in json.load(open(path, encoding="utf-8"))["predictions"]:
            if prediction["id"] in places:
                by_place[places[prediction["id"]]].append(prediction["f1"])
        names.append(name)
        scores.append(by_place)
    print("| answer stands in | questions | " + " | ".join(names) + " |")
    print("|---|---:|" + "---:|" * len(names))
    for where in sorted(set(places.values())):
        counts = {len(s[where]) for s in scores}
        row = [f"{100 * sum(s[where]) / len(s[where]):.1f}" if s[where] else "-" for s in scores]
        print(f"| {where} | {max(counts)} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
