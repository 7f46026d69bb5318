"""A checkpoint with some tensors taken from another of the same shape: which part of a stage moved the prose?

    python experiments/table-lookups/splice.py runs/document-windows/checkpoint_070 assets/littlebird-qa \
        runs/splice/qa-head --take qa_head.

writes a copy of the first checkpoint (compact, as `littlebird export --output-dir` writes it) in which every
tensor whose name starts with one of ``--take``'s prefixes is the second checkpoint's. Read the result with
`python -m littlebird.evaluation --model <output> ...` like any export.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from safetensors.torch import load_file, save_file


def splice(base: Path, donor: Path, output: Path, prefixes: list[str]) -> int:
    """Copy ``base`` to ``output``, its tensors named by ``prefixes`` replaced by ``donor``'s; the count replaced."""
    output.mkdir(parents=True, exist_ok=False)
    for path in base.iterdir():
        if not path.name.endswith(".safetensors"):
            shutil.copy(path, output / path.name)
    donor_map = json.loads((donor / "model.safetensors.index.json").read_text())["weight_map"]
    donor_shards: dict[str, dict] = {}
    replaced = 0
    for shard in sorted(base.glob("*.safetensors")):
        tensors = load_file(shard)
        for name in tensors:
            if name.startswith(tuple(prefixes)):
                file = donor_map[name]
                if file not in donor_shards:
                    donor_shards[file] = load_file(donor / file)
                other = donor_shards[file][name]
                if other.shape != tensors[name].shape:
                    raise ValueError(f"{name}: {tuple(other.shape)} in {donor}, {tuple(tensors[name].shape)} in {base}")
                tensors[name] = other.to(tensors[name].dtype)
                replaced += 1
        save_file(tensors, output / shard.name, metadata={"format": "pt"})
    return replaced


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("base", type=Path)
    parser.add_argument("donor", type=Path)
    parser.add_argument("output", type=Path)
    parser.add_argument("--take", nargs="+", required=True, help="name prefixes of the tensors taken from the donor")
    args = parser.parse_args()
    count = splice(args.base, args.donor, args.output, args.take)
    if count == 0:
        raise SystemExit(f"no tensor of {args.base} starts with {args.take}")
    print(f"wrote {args.output}: {count} tensors from {args.donor}")


if __name__ == "__main__":
    main()
