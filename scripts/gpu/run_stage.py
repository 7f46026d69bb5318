"""``python scripts/gpu/run_stage.py NAME ARGS`` runs ``python -m NAME ARGS`` on the trimmed e5 of
``scripts/gpu/prepare.py``: the added tokens' rows come from ``.gpu/extra_rows.pt``, built from the full matrix
(the mean and spread of all of e5's rows, which the trimmed file no longer has)."""
import os
import runpy
import sys
from pathlib import Path

import torch

import littlebird.checkpoint as checkpoint
import littlebird.conversion as conversion
import littlebird.training.teacher_model as teacher_model
from littlebird.training.teacher_model import E5_FIRST_NEW_TOKEN

EXTRA = torch.load(Path(os.environ.get("LITTLEBIRD_GPU_DIR", ".gpu")) / "extra_rows.pt")
_original = conversion.extend_word_embeddings


def extend_word_embeddings(weight, *, first_new_id, num_new, noise_scale=0.1, seed=0):
    out = _original(weight, first_new_id=first_new_id, num_new=num_new, noise_scale=noise_scale, seed=seed)
    if (first_new_id, num_new, noise_scale, seed) != (E5_FIRST_NEW_TOKEN, len(EXTRA), 0.1, 0):
        raise RuntimeError(f"unexpected extra rows {(first_new_id, num_new, noise_scale, seed)}")
    out[first_new_id:first_new_id + num_new] = EXTRA.to(out.dtype)
    return out


for module in (conversion, checkpoint, teacher_model):
    module.extend_word_embeddings = extend_word_embeddings
name = sys.argv[1]
sys.argv = [name, *sys.argv[2:]]
runpy.run_module(name, run_name="__main__", alter_sys=True)
