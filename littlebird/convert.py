"""Convert a BERT-family encoder and its own tokenizer into a LittleBird QA checkpoint (paper section 3.4, step 1).

    python -m littlebird.convert --source <Hub id or local folder> --output DIR [--layers N]

Sources: BERT, RoBERTa, XLM-RoBERTa, ELECTRA (the discriminator) and MiniLM / e5 checkpoints in the
transformers format, with whatever fast tokenizer they ship. The weights go where
:mod:`littlebird.conversion` says (every attention into both pack and unpack attention, absolute
positions dropped); the tokenizer gains ``[QUESTION]`` and the HTML tag tokens
(:data:`littlebird.vocabulary.EXTRA_TOKENS`) as special tokens right after its own, their embedding
rows the vocabulary's mean plus a little noise (:func:`littlebird.conversion.extend_word_embeddings`).
DIR then holds a full LittleBird checkpoint (``config.json``, safetensors) and its tokenizer: the
reader, the evaluation, the training stages and the app take both from there.

What cannot be converted is refused before any weight is read, naming the model type: a decoder or
encoder-decoder, an encoder with relative position buckets (DeBERTa, T5), ELECTRA with an
``embedding_size`` apart from its hidden size, a tokenizer that already spells an added token, or
one longer than the embedding matrix.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from tokenizers import AddedToken
from transformers import AutoConfig, AutoModel, AutoTokenizer, PreTrainedConfig
from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
from transformers.tokenization_utils_base import VERY_LARGE_INTEGER

from .command_options import Options, option, parse_options
from .conversion import convert_bert_to_littlebird, quiet_loading_report
from .modeling_littlebird import LittleBirdForQuestionAnswering
from .vocabulary import EXTRA_TOKENS

# model_type -> family. MiniLM and e5 checkpoints are "bert" (English) or "xlm-roberta" / "bert" with an
# XLM-R tokenizer (multilingual): the same modules, so the same map.
CONVERTIBLE = {"bert": "BERT", "roberta": "RoBERTa", "xlm-roberta": "XLM-RoBERTa", "electra": "ELECTRA"}
# Encoders whose attention reads relative position buckets: LittleBird's BiALiBi cannot take them over.
RELATIVE_POSITION_TYPES = ("deberta", "deberta-v2", "t5", "mt5", "umt5", "longt5", "funnel", "mpnet")


class NotConvertible(ValueError):
    """The source cannot become a LittleBird; the message names its model type and why."""


def check_convertible(config: PreTrainedConfig) -> str:
    """The family of a source config (a key of :data:`CONVERTIBLE`), or :class:`NotConvertible`."""
    model_type = config.model_type
    if getattr(config, "is_encoder_decoder", False):
        raise NotConvertible(
            f"{model_type!r} is an encoder-decoder; LittleBird converts BERT-style encoders "
            f"({', '.join(CONVERTIBLE.values())})"
        )
    if (
        model_type in RELATIVE_POSITION_TYPES
        or getattr(config, "relative_attention", False)
        or getattr(config, "position_embedding_type", None) not in (None, "absolute")
    ):
        raise NotConvertible(
            f"{model_type!r} uses relative position buckets, which BiALiBi cannot take over; "
            f"convertible: {', '.join(CONVERTIBLE.values())}"
        )
    if model_type not in CONVERTIBLE:
        kind = (
            "a decoder (causal language model)"
            if model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
            else "not a BERT-family encoder"
        )
        raise NotConvertible(f"{model_type!r} is {kind}; convertible model types: {sorted(CONVERTIBLE)}")
    if getattr(config, "is_decoder", False) or getattr(config, "add_cross_attention", False):
        raise NotConvertible(
            f"this {model_type!r} checkpoint is configured as a decoder (is_decoder / "
            "cross-attention); LittleBird needs a bidirectional encoder"
        )
    embedding_size = getattr(config, "embedding_size", None)
    if embedding_size is not None and embedding_size != config.hidden_size:
        raise NotConvertible(
            f"{model_type!r} with embedding_size {embedding_size} != hidden_size "
            f"{config.hidden_size} projects its embeddings after their LayerNorm; LittleBird's "
            "embeddings have no such projection"
        )
    return model_type


def _extra_token(content: str) -> AddedToken:
    # lstrip: "text <p>" leaves no lone space piece before the tag (XLM-R's rule for <mask>);
    # normalized=False: an uncased tokenizer still matches "[QUESTION]" as written.
    return AddedToken(content, special=True, lstrip=True, normalized=False)


def add_extra_tokens(tokenizer, *, embedding_rows: int, model_type: str) -> int:
    """Add :data:`EXTRA_TOKENS` as special tokens right after the tokenizer's own; returns the first new id."""
    first_new = len(tokenizer)
    clashes = [token for token in EXTRA_TOKENS if token in tokenizer.get_vocab()]
    if clashes:
        raise NotConvertible(
            f"the {model_type!r} tokenizer already has {clashes}; LittleBird needs them as new special tokens"
        )
    if first_new > embedding_rows:
        raise NotConvertible(
            f"the {model_type!r} tokenizer has {first_new} tokens but the model only {embedding_rows} embedding rows"
        )
    tokenizer.add_tokens([_extra_token(token) for token in EXTRA_TOKENS], special_tokens=True)
    new_ids = tokenizer.convert_tokens_to_ids(list(EXTRA_TOKENS))
    if new_ids != list(range(first_new, first_new + len(EXTRA_TOKENS))):
        raise NotConvertible(
            f"the {model_type!r} tokenizer gave the added tokens ids {new_ids}, not {first_new}.. in order"
        )
    tokenizer.model_max_length = VERY_LARGE_INTEGER  # LittleBird reads any length
    return first_new


@dataclass
class Conversion:
    """What :func:`convert` made: the model, its tokenizer, and the source's family."""

    model: LittleBirdForQuestionAnswering
    tokenizer: object
    model_type: str


def convert(
    source: str | Path, *, layers: int | None = None, block_size: int = 64, pack_size: int = 64, seed: int = 0
) -> Conversion:
    """A LittleBird QA model and tokenizer from a Hub id or folder of a BERT-family encoder.

    ``layers``: keep this many evenly spaced source layers (:func:`littlebird.conversion.select_layers`),
    all by default. The QA head, the initial pack and BiALiBi's slopes start fresh.
    """
    source = str(source)
    config = AutoConfig.from_pretrained(source)
    model_type = check_convertible(config)
    tokenizer = AutoTokenizer.from_pretrained(source)
    first_new = add_extra_tokens(tokenizer, embedding_rows=config.vocab_size, model_type=model_type)
    with quiet_loading_report():  # a head the encoder drops (ELECTRA's discriminator, a pooler) is no news
        encoder = AutoModel.from_pretrained(source, dtype=torch.float32)
    overrides = {"block_size": block_size, "pack_size": pack_size}
    if tokenizer.pad_token_id is not None:
        overrides["pad_token_id"] = tokenizer.pad_token_id  # the padding row the embeddings keep at zero
    with torch.random.fork_rng():
        torch.manual_seed(seed)  # the fresh parameters
        model = convert_bert_to_littlebird(
            encoder.state_dict(), config, num_layers=layers, first_new_token_id=first_new, seed=seed, **overrides
        )
    return Conversion(model, tokenizer, model_type)


def save_conversion(conversion: Conversion, output: str | Path) -> Path:
    """Write the model (full weights) and its tokenizer to ``output``."""
    output = Path(output)
    conversion.model.save_pretrained(output)
    conversion.tokenizer.save_pretrained(output)
    return output


@dataclass(kw_only=True)
class ConvertOptions(Options):
    """Lengthen a short pretrained encoder into a LittleBird checkpoint (paper section 3.4, step 1)."""

    source: str = option(help="a Hub id or a local folder in the transformers format")
    output: str = option(help="the LittleBird checkpoint folder to write")
    layers: int | None = option(None, "keep N evenly spaced source layers (default all)")
    block_size: int = option(64, "LittleBird's block size")
    pack_size: int = option(64, "LittleBird's pack length")
    seed: int = option(0, "the fresh parameters' and new token rows' seed")


def run(args: ConvertOptions) -> Path:
    """Convert ``args.source`` into ``args.output``; returns the folder."""
    conversion = convert(
        args.source, layers=args.layers, block_size=args.block_size, pack_size=args.pack_size, seed=args.seed
    )
    output = save_conversion(conversion, args.output)
    config = conversion.model.config
    print(
        f"{args.source} ({CONVERTIBLE[conversion.model_type]}) -> {output}: layers {config.source_layers}, "
        f"vocabulary {len(conversion.tokenizer)} ([QUESTION] = {config.question_token_id}), "
        f"{sum(p.numel() for p in conversion.model.parameters()):,} parameters"
    )
    return output


def main(argv=None) -> Path:
    return run(parse_options(ConvertOptions, argv, description=__doc__))


if __name__ == "__main__":
    main()
