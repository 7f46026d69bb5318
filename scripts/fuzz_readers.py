"""The long fuzzing run: every document reader, in turn, meets random and mutated bytes (tests/support/fuzz.py)
for the given minutes, with a new random seed each round. Prints, per format, the inputs tried, how many were read
and refused, the slowest input's seconds, and every crash (an exception other than a refusal with a sentence,
which hypothesis shrinks to a small input); then the process's peak memory. Exits 1 if anything crashed.

    python scripts/fuzz_readers.py --minutes 20
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--examples", type=int, default=200, help="inputs per format per round")
    args = parser.parse_args()
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from littlebird.documents import formats
    from littlebird.documents.errors import DocumentError
    from tests.support.fuzz import mutated, peak_memory_mb, read_or_refuse

    tried, outcomes, slowest, crashes = Counter(), Counter(), Counter(), []
    deadline = time.monotonic() + 60 * args.minutes
    rounds = 0
    while time.monotonic() < deadline:
        rounds += 1
        for format in formats.FORMATS:
            if time.monotonic() >= deadline:
                break

            def fuzz(format):
                @settings(
                    max_examples=args.examples, deadline=None, database=None, suppress_health_check=list(HealthCheck)
                )
                @given(data=st.data())
                def read(data):
                    started = time.perf_counter()
                    result = read_or_refuse(data.draw(mutated(format.name)), format.suffixes[0])
                    slowest[format.name] = max(slowest[format.name], time.perf_counter() - started)
                    tried[format.name] += 1
                    outcomes[format.name, "refused" if isinstance(result, DocumentError) else "read"] += 1

                read()

            try:
                fuzz(format)
            except Exception as crash:  # hypothesis has shrunk it: report and go on
                crashes.append(f"{format.name}: {type(crash).__name__}: {str(crash)[:600]}")
    print(f"{rounds} rounds in {args.minutes:g} minutes\n")
    print("| format | inputs | read | refused with a sentence | slowest input (s) |")
    print("|---|---:|---:|---:|---:|")
    for format in formats.FORMATS:
        name = format.name
        print(
            f"| {name} | {tried[name]:,} | {outcomes[name, 'read']:,} | {outcomes[name, 'refused']:,} | "
            f"{slowest[name]:.2f} |"
        )
    print(
        f"\npeak memory of the process: {peak_memory_mb():,.0f} MB (a PDF's reader runs in a child process under "
        "its own memory limit)"
    )
    print(f"crashes: {len(crashes)}")
    for crash in crashes:
        print(f"- {crash}")
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
