"""Whether two runs of `littlebird evaluate --output` on the same dev files gave the same answers: per file, how many
questions got the same prediction, read the same number of windows and made the same "no answer" decision. For a
change that must not move any answer (a refactor of the reader), beside `littlebird evaluate --compare`'s F1.

    python scripts/same_answers.py BEFORE_DIR AFTER_DIR      # folders of <file>.json results; AFTER_DIR's files
"""

import json
import sys
from pathlib import Path


def main(before: Path, after: Path) -> int:
    print("| dev file | questions | same prediction | same windows read | same 'no answer' | F1 before | F1 after |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    differ = 0
    for path in sorted(after.glob("*.json")):
        old, new = (json.loads(p.read_text(encoding="utf-8")) for p in (before / path.name, path))
        rows_old = {p["id"]: p for p in old["predictions"]}
        rows_new = {p["id"]: p for p in new["predictions"]}
        ids = [i for i in rows_old if i in rows_new]
        same = [
            sum(rows_old[i][key] == rows_new[i][key] for i in ids) for key in ("prediction", "n_windows", "no_answer")
        ]
        differ += len(ids) * 3 - sum(same) + len(rows_old.keys() ^ rows_new.keys())  # a question on one side only
        print(
            f"| {path.stem} | {len(ids)} | {same[0]} | {same[1]} | {same[2]} | {old['summary']['overall']['f1']:.1f} | "
            f"{new['summary']['overall']['f1']:.1f} |"
        )
    return 1 if differ else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
