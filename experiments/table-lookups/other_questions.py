"""The questions of a larger dev file that a smaller one lacks: a fresh sample to read beside it.

    littlebird dev-files --data-dir ../shared/data --output-dir runs/dev600 --max-questions 600 \
        --ko-passages-per-document 6
    python experiments/table-lookups/other_questions.py runs/dev600/dev-en-page-shaped.json \
        runs/dev200/dev-en-page-shaped.json runs/dev600-other/dev-en-page-shaped.json
"""

import json
import sys
from pathlib import Path


def main() -> None:
    larger, smaller, output = sys.argv[1:4]
    known = {qa["id"] for a in json.load(open(smaller))["data"] for p in a["paragraphs"] for qa in p["qas"]}
    data = []
    for article in json.load(open(larger))["data"]:
        paragraphs = [{**p, "qas": [qa for qa in p["qas"] if qa["id"] not in known]} for p in article["paragraphs"]]
        paragraphs = [p for p in paragraphs if p["qas"]]
        if paragraphs:
            data.append({**article, "paragraphs": paragraphs})
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    Path(output).write_text(json.dumps({"data": data}, ensure_ascii=False))
    print(f"{output}: {sum(len(p['qas']) for a in data for p in a['paragraphs'])} questions not in {smaller}")


if __name__ == "__main__":
    main()
