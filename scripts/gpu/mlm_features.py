"""The masked-LM healing's sequences, packed small enough to travel to a lent GPU, and unpacked there.

``littlebird.training.mlm`` cuts its sequences once into ``<run>/features.pt`` (83 MB: 18M token ids as
int32; building them takes two to three minutes of one core). The Korean and English text uses only
48K of e5's 250K pieces, so each id is stored as its place among the used ones (uint16) in a compressed
``.npz`` of about 20 MB. Unpacked into another run folder, the stage finds its sequences already cut
(same options, ``--data-dir`` as given) and trains on exactly the sequences the CPU run trained on.

    python scripts/gpu/mlm_features.py pack runs/mlm-long .gpu/mlm-features.npz
    python scripts/gpu/mlm_features.py unpack .gpu/mlm-features.npz runs/gpu/mlm --data-dir .gpu/data
"""

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np
import torch

FEATURES_FILE = "features.pt"  # littlebird.training.options.FEATURES_FILE


def used_ids(path: Path) -> set[int]:
    """Every token id a packed file holds (prepare.py keeps their word-embedding rows)."""
    with np.load(path) as packed:
        return set(packed["vocabulary"].tolist())


def pack(run_dir: Path, output: Path) -> None:
    saved = torch.load(run_dir / FEATURES_FILE, map_location="cpu", weights_only=False)
    features = saved["features"]
    flat = {(split, language): [np.asarray(s, dtype=np.int64) for s in sequences]
            for split, by_language in features.items() for language, sequences in by_language.items()}
    vocabulary = np.unique(np.concatenate([np.concatenate(seqs) for seqs in flat.values()]))
    if len(vocabulary) > 2**16:
        raise ValueError(f"{len(vocabulary):,} distinct ids do not fit uint16")
    arrays = {"vocabulary": vocabulary.astype(np.int32)}
    for (split, language), sequences in flat.items():
        arrays[f"ids.{split}.{language}"] = np.searchsorted(vocabulary, np.concatenate(sequences)).astype(np.uint16)
        arrays[f"lengths.{split}.{language}"] = np.array([len(s) for s in sequences], dtype=np.int32)
    options = {k: v for k, v in saved["options"].items() if k != "data_dir"}
    arrays["options"] = np.frombuffer(json.dumps(options, sort_keys=True).encode(), dtype=np.uint8)
    output.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(output, **arrays)
    tokens = sum(len(s) for seqs in flat.values() for s in seqs)
    print(f"packed {tokens:,} tokens ({len(vocabulary):,} distinct ids) into {output}: "
          f"{output.stat().st_size / 2**20:.1f} MiB", flush=True)


def unpack(packed_file: Path, run_dir: Path, data_dir: str) -> None:
    with np.load(packed_file) as packed:
        vocabulary = packed["vocabulary"].astype(np.int32)
        options = json.loads(packed["options"].tobytes().decode())
        features: dict = {}
        for name in packed.files:
            if not name.startswith("ids."):
                continue
            _, split, language = name.split(".")
            ids = vocabulary[packed[name].astype(np.int64)]
            lengths = packed[f"lengths.{split}.{language}"]
            ends = np.cumsum(lengths)
            features.setdefault(split, {})[language] = [
                torch.from_numpy(ids[end - length : end].copy()) for end, length in zip(ends, lengths)]
    options = dict(sorted({**options, "data_dir": data_dir}.items()))
    run_dir.mkdir(parents=True, exist_ok=True)
    partial = run_dir / f"{FEATURES_FILE}.{os.getpid()}.tmp"
    torch.save({"options": options, "features": features}, partial)
    os.replace(partial, run_dir / FEATURES_FILE)
    counts = {f"{split}/{language}": len(seqs) for split, by in features.items() for language, seqs in by.items()}
    print(f"unpacked {counts} into {run_dir / FEATURES_FILE}", flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("pack")
    p.add_argument("run_dir", type=Path)
    p.add_argument("output", type=Path)
    u = commands.add_parser("unpack")
    u.add_argument("packed", type=Path)
    u.add_argument("run_dir", type=Path)
    u.add_argument("--data-dir", required=True, help="the --data-dir the stage will be run with")
    args = parser.parse_args(argv)
    if args.command == "pack":
        pack(args.run_dir, args.output)
    else:
        unpack(args.packed, args.run_dir, args.data_dir)


if __name__ == "__main__":
    sys.exit(main())
