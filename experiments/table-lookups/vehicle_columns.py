"""Which column each checkpoint answers dev-ko-vehicle.json's questions from: the crossing time or fare it asks
for, or the first departure whose header ("첫 배") shares the vehicle's word with the question. Usage::

    python experiments/table-lookups/vehicle_columns.py shipped=runs/x/shipped-dev-ko-vehicle.json ...

Each argument is NAME=RESULT, a ``python -m littlebird.evaluation --output`` file of dev-ko-vehicle.json.
"""

import json
import re
import sys


def main() -> None:
    print("| checkpoint | EM | F1 | crossing time right | fare right | answered with the first departure |")
    print("|---|---:|---:|---:|---:|---:|")
    for argument in sys.argv[1:]:
        name, path = argument.split("=", 1)
        with open(path, encoding="utf-8") as handle:
            result = json.load(handle)
        predictions, overall = result["predictions"], result["summary"]["overall"]
        fares = [p for p in predictions if p["answers"][0].endswith("원")]
        times = [p for p in predictions if not p["answers"][0].endswith("원")]
        first = sum(bool(re.fullmatch(r"\d\d:\d\d", p["prediction"].strip())) for p in predictions)
        print(
            f"| {name} | {overall['em']:.1f} | {overall['f1']:.1f} | {sum(p['em'] for p in times):.0f} of "
            f"{len(times)} | {sum(p['em'] for p in fares):.0f} of {len(fares)} | {first} of {len(predictions)} |"
        )


if __name__ == "__main__":
    main()
