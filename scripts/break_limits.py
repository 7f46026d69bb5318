"""Does every limit's guard fail when the limit is raised? For each limit that tests/app/test_limits.py guards, a clean
clone of the repository (its last commit) gets that one limit raised a hundredfold, and the limit's guard runs
there; it must fail (or run past its time, as a guard of a time limit does). Prints a table and exits 1 if any
guard still passes.

    python scripts/break_limits.py [--only NAME ...] [--seconds 180]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def raise_limit(clone: Path, name: str, factor: int) -> str:
    """Multiply the constant ``name`` ("littlebird.documents.fetch.MAX_REDIRECTS") in ``clone`` by ``factor``;
    returns the line as it is now."""
    module, constant = name.rsplit(".", 1)
    path = clone / (module.replace(".", "/") + ".py")
    text = path.read_text(encoding="utf-8")
    pattern = re.compile(rf"^({re.escape(constant)}\s*(?::[^=]+)?=\s*)([0-9][0-9_.e]*)", re.MULTILINE)
    changed, count = pattern.subn(lambda m: f"{m.group(1)}{m.group(2)} * {factor}", text)
    if count != 1:
        raise SystemExit(f"{name}: found {count} assignments in {path}")
    path.write_text(changed, encoding="utf-8")
    return next(line for line in changed.splitlines() if line.startswith(constant) and f"* {factor}" in line)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="these limits only")
    parser.add_argument("--seconds", type=float, default=180, help="a guard still running after this has failed")
    parser.add_argument("--factor", type=int, default=100)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from tests.app.test_limits import GUARDS

    names = [name for name in GUARDS if not args.only or name.rsplit(".", 1)[-1] in args.only or name in args.only]
    with tempfile.TemporaryDirectory() as folder:  # first, the guards pass where nothing is raised
        clone = Path(folder) / "clone"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        guards = [f"tests/app/test_limits.py::{GUARDS[name].__name__}" for name in names]
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *guards],
            cwd=clone,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            print(done.stdout[-3000:])
            raise SystemExit("the guards fail in a clean clone already: fix them first")
    print("| limit | raised to | guard | guard with the limit raised | seconds |")
    print("|---|---|---|---|---:|")
    still_passing = 0
    for name in names:
        with tempfile.TemporaryDirectory() as folder:
            clone = Path(folder) / "clone"
            subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
            line = raise_limit(clone, name, args.factor)
            guard = GUARDS[name].__name__
            started = time.monotonic()
            try:
                done = subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "pytest",
                        "-q",
                        "-x",
                        "-p",
                        "no:cacheprovider",
                        f"tests/app/test_limits.py::{guard}",
                    ],
                    cwd=clone,
                    capture_output=True,
                    text=True,
                    timeout=args.seconds,
                )
                verdict = "passes (not guarded)" if done.returncode == 0 else "fails"
            except subprocess.TimeoutExpired:
                verdict = f"fails (still running after {args.seconds:g} s)"
            still_passing += verdict.startswith("passes")
            raised = line.split("=", 1)[1].split("#")[0].strip()
            print(
                f"| `{name.rsplit('.', 1)[-1]}` | `{raised}` | `{guard}` | {verdict} | "
                f"{time.monotonic() - started:.0f} |",
                flush=True,
            )
    print(f"\n{len(names) - still_passing} of {len(names)} raised limits turn their guard red.")
    return 1 if still_passing else 0


if __name__ == "__main__":
    sys.exit(main())
