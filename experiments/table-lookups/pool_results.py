"""Several ``littlebird evaluate --output`` files of one dev file read as one: their questions pooled, under
the output file's name (``--compare`` pairs questions by that name and their ids).

A dev file's 200 questions and the other questions of its larger sample (``other_questions.py``) are read
separately; this writes one result file holding both, so that ``--compare`` pairs and bootstraps over all of
them and its F1 is the mean over every question.

    python experiments/table-lookups/pool_results.py runs/pooled/shipped/dev-en-article.json \
        runs/base200/dev-en-article.json runs/lookup-eval/shipped-other-dev-en-article.json
"""

import json
import statistics
import sys
from pathlib import Path


def main() -> None:
    output, *inputs = sys.argv[1:]
    results = [json.loads(Path(path).read_text()) for path in inputs]
    rows = {}
    for result in results:
        for row in result["predictions"]:
            if row["id"] in rows:
                raise SystemExit(f"question {row['id']} is in more than one result")
            rows[row["id"]] = row
    predictions = list(rows.values())
    summary = {
        "overall": {
            "n": len(predictions),
            "em": 100 * statistics.fmean(row["em"] for row in predictions),
            "f1": 100 * statistics.fmean(row["f1"] for row in predictions),
        },
        "mean_windows": round(statistics.fmean(row["n_windows"] for row in predictions), 2),
        "no_answer_rate": statistics.fmean(bool(row["no_answer"]) for row in predictions),
        "model": results[0]["summary"].get("model"),
        "data": Path(output).name,
        "pooled_from": inputs,
    }
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    Path(output).write_text(json.dumps({"summary": summary, "predictions": predictions}, ensure_ascii=False))
    print(f"{output}: {len(predictions)} questions, F1 {summary['overall']['f1']:.1f}")


if __name__ == "__main__":
    main()
