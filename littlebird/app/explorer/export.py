"""The explorer's view as a file to download: the window's summary as an ``.npz``, with a JSON inside it that
says what it shows.

The ``.npz`` holds every array of ``explorer.reductions.AttentionSummary`` (float16, indexed ``[layer, head, ...]``; the
rollout's float32, ``[layer, token followed, ...]``), the head atlas's metrics as ``metric_<name>`` (layers,
heads), the block, answer-token and followed-token labels and, exported with the token view, that token's keys
with their content and BiALiBi terms and weights (``token_*``). The JSON,
stored in the same archive as ``explorer.json``, names the question, the checkpoint, the window (its tokens,
first-pass rank and place in the reading order), the answer followed, and the layer, head and metric on
screen, and describes each array. ``np.load(path)["explorer.json"]`` gives its bytes; any unzip tool gives
both.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from littlebird.app.explorer.head_metrics import METRICS
from littlebird.app.explorer.keys import TokenKeys
from littlebird.app.explorer.reductions import AttentionSummary
from littlebird.app.explorer.target import ExplorerTarget

METADATA = "explorer.json"
KEEP_SECONDS = 3600  # files written here are deleted after an hour: the page has long copied them by then

ARRAYS = {
    "block_maps": "(layers, heads, cells, cells): per query cell, the weight each key cell received; a cell is "
    "`pool` blocks of `block_size` tokens",
    "answer_blocks": "(layers, heads, answer tokens, blocks): each answer token's weight per key block",
    "answer_pack": "(layers, heads, answer tokens, pack slots): each answer token's weight per pack slot",
    "pack_reads": "(layers, heads, pack slots, blocks): each pack slot's weight per input block",
    "block_labels": "(blocks,): the text each block starts with",
    "answer_tokens": "(answer tokens,): the answer's tokens as text",
    "rollout": "(layers, tokens followed, blocks): attention rollout through both routes (window and block 0, pack "
    "slots; A_eff = 0.5 A + 0.5 I, heads averaged): where each followed token's final representation draws "
    "from in each layer's input, per block; each row sums to 1",
    "rollout_pack_share": "(layers, tokens followed): the share of what each layer's attention moved of the rollout "
    "that went through the pack slots",
    "rollout_tokens": "(tokens followed,): [CLS], and the answer's first and last tokens",
    **{f"metric_{name}": f"(layers, heads): {label}" for name, label in METRICS.items()},
}
"""What each array of the file holds."""

TOKEN_ARRAYS = {
    "token_keys": "(keys,): the keys of the token on screen (metadata `token`): its pack slots' numbers, then "
    "the positions in the window of the tokens it may read",
    "token_key_labels": "(keys,): each key's text",
    "token_content": "(keys,): each key's content term q·k/√d",
    "token_bias": "(keys,): each key's BiALiBi term, added to the content: -D_P for a pack slot, -D for a token",
    "token_weight": "(keys,): the attention weight each key got: the softmax of content + bias",
}
"""The arrays of the token view, in a file exported with one."""


def explorer_metadata(
    target: ExplorerTarget,
    summary: AttentionSummary,
    *,
    layer: int,
    head: int,
    metric: str,
    token: TokenKeys | None = None,
) -> dict[str, Any]:
    """The JSON of the file: what the explorer shows of ``target``'s window (and of ``token``, the token
    view's), and what each array holds."""
    window = target.windows[target.window]
    answer = None
    if target.answer is not None:
        chosen = target.answers[target.answer]
        answer = {
            "rank": target.answer + 1,
            "text": chosen.text,
            "start": chosen.start,
            "end": chosen.end,
            "probability": chosen.probability,
        }
    return {
        "question": target.question,
        "checkpoint": target.checkpoint,
        "window": {
            "index": target.window,
            "tokens": [window.start, window.end],
            "first_pass_rank": window.rank + 1,
            "read": None if window.read is None else window.read + 1,
            "windows": len(target.windows),
        },
        "answer": answer,
        "layer": layer,
        "head": head,
        "metric": metric,
        "block_size": summary.block_size,
        "pool": summary.pool,
        "n_tokens": summary.n_tokens,
        "question_blocks": summary.question_blocks,
        "answer_block_range": summary.answer_block_range,
        "token": None
        if token is None
        else {
            "position": token.token,
            "text": token.text,
            "layer": token.layer,
            "head": token.head,
            "pack_slots": token.slots,
        },
        "arrays": ARRAYS if token is None else {**ARRAYS, **TOKEN_ARRAYS},
    }


def summary_arrays(summary: AttentionSummary, token: TokenKeys | None = None) -> dict[str, np.ndarray]:
    """Every array the file holds, by name (see :data:`ARRAYS`, and :data:`TOKEN_ARRAYS` with ``token``)."""
    arrays = {name: getattr(summary, name) for name in ("block_maps", "answer_blocks", "answer_pack", "pack_reads")}
    arrays["block_labels"] = np.asarray(summary.block_labels, dtype=str)
    arrays["answer_tokens"] = np.asarray(summary.answer_tokens, dtype=str)
    arrays["rollout"], arrays["rollout_pack_share"] = summary.rollout, summary.rollout_pack_share
    arrays["rollout_tokens"] = np.asarray(summary.rollout_tokens, dtype=str)
    arrays.update({f"metric_{name}": values for name, values in summary.head_metrics.items()})
    if token is not None:
        arrays.update(
            token_keys=token.positions,
            token_key_labels=np.asarray(token.labels, dtype=str),
            token_content=token.content,
            token_bias=token.bias,
            token_weight=token.weight,
        )
    return arrays


def write_explorer_file(
    path: str | Path, summary: AttentionSummary, metadata: dict[str, Any], token: TokenKeys | None = None
) -> Path:
    """Write ``summary``'s arrays (and ``token``'s), and ``metadata`` (as ``explorer.json``) to the ``.npz`` at
    ``path``."""
    path = Path(path)
    np.savez_compressed(path, **summary_arrays(summary, token))
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(METADATA, json.dumps(metadata, ensure_ascii=False, indent=2))
    return path


def read_explorer_file(path: str | Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The arrays and the metadata of a file :func:`write_explorer_file` wrote."""
    with np.load(path) as archive:
        metadata = json.loads(archive[METADATA])
        return {name: archive[name] for name in archive.files if name != METADATA}, metadata


def export_view(
    target: ExplorerTarget,
    summary: AttentionSummary,
    *,
    layer: int,
    head: int,
    metric: str,
    token: TokenKeys | None = None,
) -> Path:
    """The explorer's view (with the token view's ``token``, when given) as a new file, in a folder of its own
    under this process's export folder (where files older than :data:`KEEP_SECONDS` are deleted)."""
    exports = Path(tempfile.gettempdir()) / f"littlebird-exports-{os.getpid()}"
    exports.mkdir(exist_ok=True)
    for old in exports.glob("*/*.npz"):
        if time.time() - old.stat().st_mtime > KEEP_SECONDS:
            old.unlink(missing_ok=True)
            old.parent.rmdir()
    folder = Path(tempfile.mkdtemp(dir=exports))
    path = folder / f"littlebird-explorer-window{target.window}-layer{layer}-head{head}.npz"
    metadata = explorer_metadata(target, summary, layer=layer, head=head, metric=metric, token=token)
    return write_explorer_file(path, summary, metadata, token)
