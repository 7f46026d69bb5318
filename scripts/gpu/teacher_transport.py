"""A trained teacher brought back from a lent GPU machine, small enough for the files a call returns.

A call returns at most 8 files of 16 MiB each. The teacher's weights without word embeddings are 88 MB in
fp32 (``littlebird.training.teacher_model.save_teacher``), 44 MB in fp16: ``pack`` writes them in fp16 as
parts of at most 15 MiB, with the teacher's config, the stage's ``summary.json`` and a manifest of sha256
sums. ``unpack`` checks the sums, joins the parts and writes the stage folder as the CPU recipe would have
left it (``<stage>/model/teacher.safetensors`` in fp32 and ``<stage>/summary.json``), so
``scripts/in_chunks.sh`` finds that stage finished and the recipe goes on to the next one:

    python scripts/gpu/teacher_transport.py pack runs/gpu/teacher8 $OUT            # on the GPU machine
    python scripts/gpu/teacher_transport.py unpack <returned files> runs/healed-short/c7-teacher   # here
"""

import argparse
import hashlib
import json
import shutil
import sys
from pathlib import Path

import torch
from safetensors.torch import load, save, save_file

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run from a checkout without installing
from littlebird.training.teacher_model import TEACHER_CONFIG, TEACHER_WEIGHTS  # noqa: E402

MANIFEST = "teacher-manifest.json"
PART_BYTES = 15 * 2**20


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def pack(stage: Path, out: Path, part_bytes: int = PART_BYTES) -> list[Path]:
    """``stage`` (a finished teacher stage: ``model/`` and ``summary.json``) into ``out``; returns the files."""
    state = load((stage / "model" / TEACHER_WEIGHTS).read_bytes())
    data = save({name: tensor.to(torch.float16) if tensor.is_floating_point() else tensor
                 for name, tensor in state.items()})
    out.mkdir(parents=True, exist_ok=True)
    parts = []
    for index, start in enumerate(range(0, len(data), part_bytes)):
        part = out / f"teacher-fp16.part{index}"
        part.write_bytes(data[start : start + part_bytes])
        parts.append(part)
    summary = json.loads((stage / "summary.json").read_text())
    manifest = {"parts": [p.name for p in parts], "sha256": sha256(data),
                "part_sha256": [sha256(p.read_bytes()) for p in parts], "summary": summary}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1))
    shutil.copy(stage / "model" / TEACHER_CONFIG, out / TEACHER_CONFIG)
    return [*parts, out / MANIFEST, out / TEACHER_CONFIG]


def unpack(source: Path, stage: Path) -> dict:
    """The packed teacher in ``source`` as a finished teacher stage in ``stage``; returns its summary."""
    manifest = json.loads((source / MANIFEST).read_text())
    pieces = []
    for name, expected in zip(manifest["parts"], manifest["part_sha256"], strict=True):
        piece = (source / name).read_bytes()
        if sha256(piece) != expected:
            raise ValueError(f"{source / name} is damaged (its sha256 differs from the manifest's)")
        pieces.append(piece)
    data = b"".join(pieces)
    if sha256(data) != manifest["sha256"]:
        raise ValueError("the joined parts differ from what was packed")
    summary = manifest["summary"]
    if summary["step"] < summary.get("last_step", summary["total_steps"]):
        raise ValueError(f"the teacher stopped at step {summary['step']} of {summary['total_steps']}: "
                         "its learning-rate schedule did not finish")
    state = {name: tensor.float() if tensor.is_floating_point() else tensor for name, tensor in load(data).items()}
    (stage / "model").mkdir(parents=True, exist_ok=True)
    save_file(state, str(stage / "model" / TEACHER_WEIGHTS))
    shutil.copy(source / TEACHER_CONFIG, stage / "model" / TEACHER_CONFIG)
    (stage / "summary.json").write_text(json.dumps({**summary, "brought_from": "gpu (fp16)"}))
    return summary


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("pack", help="a finished teacher stage into fp16 parts")
    p.add_argument("stage", type=Path)
    p.add_argument("out", type=Path)
    u = commands.add_parser("unpack", help="the parts into a finished teacher stage")
    u.add_argument("source", type=Path)
    u.add_argument("stage", type=Path)
    args = parser.parse_args(argv)
    if args.command == "pack":
        for path in pack(args.stage, args.out):
            print(f"{path}: {path.stat().st_size / 2**20:.1f} MiB")
    else:
        try:
            summary = unpack(args.source, args.stage)
        except ValueError as error:
            sys.exit(f"teacher_transport: {error}")
        print(f"{args.stage}: teacher at step {summary['step']} of {summary['total_steps']}")


if __name__ == "__main__":
    main()
