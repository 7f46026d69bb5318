"""Tiny random encoders of each convertible family, with a small tokenizer of their own kind, saved as a
Hub-style folder (config, safetensors, tokenizer files): what ``python -m littlebird.convert --source``
reads, built offline in a moment."""

from pathlib import Path

from tokenizers.pre_tokenizers import ByteLevel
from transformers import (
    BertConfig,
    BertModel,
    BertTokenizer,
    ElectraConfig,
    ElectraForPreTraining,
    ElectraTokenizer,
    RobertaConfig,
    RobertaModel,
    RobertaTokenizer,
    XLMRobertaConfig,
    XLMRobertaModel,
    XLMRobertaTokenizer,
)

WORDS = (
    "the",
    "capital",
    "of",
    "is",
    "city",
    "was",
    "founded",
    "in",
    "what",
    "when",
    "country",
    "small",
    "arland",
    "bexford",
    "corvia",
    "dunmore",
    "river",
    "music",
    "people",
    "year",
    "수도",
    "나라",
    "도시",
)
SIZES = dict(
    hidden_size=32, num_hidden_layers=4, num_attention_heads=4, intermediate_size=48, max_position_embeddings=128
)
FAMILIES = ("bert", "roberta", "xlm-roberta", "electra", "e5")


def _wordpiece_vocab() -> dict[str, int]:
    pieces = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, *"abcdefghijklmnopqrstuvwxyz0123456789.,?!"]
    pieces += ["##" + c for c in "abcdefghijklmnopqrstuvwxyz0123456789"]
    return {piece: i for i, piece in enumerate(pieces)}


def _unigram_vocab() -> list[tuple[str, float]]:
    pieces = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)]
    pieces += [("\u2581" + word, -2.0) for word in WORDS]
    pieces += [(c, -5.0) for c in "abcdefghijklmnopqrstuvwxyz0123456789.,?!\u2581"]
    return pieces + [("<mask>", 0.0)]


def _bpe_vocab() -> tuple[dict[str, int], list[tuple[str, str]]]:
    pieces = ["<s>", "<pad>", "</s>", "<unk>", *sorted(ByteLevel.alphabet())]
    merges = []
    for word in ("\u0120the", "\u0120of", "\u0120is", "\u0120city"):
        for end in range(2, len(word) + 1):
            merged = word[:end]
            if merged not in pieces:
                merges.append((word[: end - 1], word[end - 1]))
                pieces.append(merged)
    pieces.append("<mask>")
    return {piece: i for i, piece in enumerate(pieces)}, merges


def write_toy_encoder(family: str, directory: Path, seed: int = 0) -> Path:
    """A random 4-layer encoder of ``family`` (one of :data:`FAMILIES`) and its tokenizer, saved in ``directory``."""
    import torch

    torch.manual_seed(seed)
    if family in ("bert", "electra"):
        tokenizer = (BertTokenizer if family == "bert" else ElectraTokenizer)(vocab=_wordpiece_vocab())
        if family == "bert":
            model = BertModel(BertConfig(vocab_size=len(tokenizer) + 3, pad_token_id=0, **SIZES))
        else:  # the discriminator, as published: ElectraForPreTraining
            model = ElectraForPreTraining(
                ElectraConfig(vocab_size=len(tokenizer), embedding_size=SIZES["hidden_size"], pad_token_id=0, **SIZES)
            )
    elif family == "roberta":
        vocab, merges = _bpe_vocab()
        tokenizer = RobertaTokenizer(vocab=vocab, merges=merges)
        model = RobertaModel(RobertaConfig(vocab_size=len(tokenizer), pad_token_id=1, type_vocab_size=1, **SIZES))
    elif family in ("xlm-roberta", "e5"):
        tokenizer = XLMRobertaTokenizer(vocab=_unigram_vocab())
        if family == "xlm-roberta":
            model = XLMRobertaModel(XLMRobertaConfig(vocab_size=len(tokenizer), pad_token_id=1, **SIZES))
        else:  # multilingual-e5 / MiniLM: a BERT encoder under an XLM-R tokenizer, its matrix padded past it
            model = BertModel(BertConfig(vocab_size=len(tokenizer) + 5, pad_token_id=1, **SIZES))
    else:
        raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")
    directory = Path(directory)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory
