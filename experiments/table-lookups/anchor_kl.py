"""Mean anchor KL and gold loss of training logs, by range of steps.

    python experiments/table-lookups/anchor_kl.py runs/one-stage/tables/log.txt runs/anchor-x3/tables/log.txt

Each log is a stage's ``log.txt`` from a run with ``anchor_prose``; its lines ``step N/M ... anchor A gold G``
are averaged over steps 10-150, 150-300, 300-450 (a step logged at the range's end belongs to it).
"""

from __future__ import annotations

import re
import sys

STEP = re.compile(r"step (\d+)/\d+ ")
ANCHOR = re.compile(r" anchor ([\d.]+)")
GOLD = re.compile(r" gold ([\d.]+)")
RANGES = [(10, 150), (150, 300), (300, 450)]


def read(path: str) -> dict[int, tuple[float, float]]:
    steps = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            # The scalars are logged in the order the interval's batches first gave them: either may come first.
            step, anchor, gold = STEP.search(line), ANCHOR.search(line), GOLD.search(line)
            if step and anchor and gold:
                steps[int(step[1])] = (float(anchor[1]), float(gold[1]))
    return steps


def mean(values: list[float]) -> str:
    return f"{sum(values) / len(values):.3f}" if values else "-"


def main(paths: list[str]) -> None:
    print(
        "| log | anchor KL at step 10 | " + " | ".join(f"anchor KL, {a}-{b}" for a, b in RANGES) + " | gold loss, all |"
    )
    print("|---|" + "---:|" * (len(RANGES) + 2))
    for path in paths:
        steps = read(path)
        kl = [mean([steps[s][0] for s in steps if a < s <= b]) for a, b in RANGES]
        first = f"{steps[10][0]:.3f}" if 10 in steps else "-"
        print(f"| {path} | {first} | " + " | ".join(kl) + f" | {mean([g for _, g in steps.values()])} |")


if __name__ == "__main__":
    main(sys.argv[1:])
