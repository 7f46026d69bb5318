"""The masked-LM healing stage's data: text cut into sequences, and BERT's whole-word masks.

- sequences of ``max_length`` tokens cut from each document (SQuAD's contexts, the Korean Wikipedia
  sample), about ``ko_share`` of the training tokens Korean; documents of the QA dev split (and Korean
  pages that hold a dev passage) are left out of training, and ``heldout_sequences`` per language of them
  make a held-out set with fixed masks;
- ``mask_rate`` of the tokens of each sequence masked as whole words (a word starts at a piece beginning
  with "▁"), 80% of them as ``<mask>``, 10% as a random piece, 10% unchanged; the masks and the dropout
  seed of each sequence follow from (seed, epoch, sequence), so a resumed run replays exactly what an
  uninterrupted one does.
"""

from __future__ import annotations

import argparse
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset

from .batching import padded_width
from .data import KOREAN_PAGES_FILE, is_dev_title, load_corpus, read_korean_pages
from .options import cached_features

WORD_START = "\u2581"  # SentencePiece's metaspace: a piece that begins a word
IGNORE = -100  # label of a position that is not scored
_TRAIN_STREAM, _HELDOUT_STREAM = 0, 1  # keep the training masks and the held-out masks apart


# --------------------------------------------------------------------------- masking
@dataclass(frozen=True)
class MaskingVocabulary:
    """What masking needs to know of the tokenizer: which pieces begin a word, which are special."""

    starts_word: np.ndarray  # (V,) bool
    special: np.ndarray  # (V,) bool: never masked, never a word's part
    mask_id: int
    random_ids: tuple[int, int]  # random replacements are drawn from [low, high)

    @classmethod
    def from_tokenizer(cls, tokenizer) -> "MaskingVocabulary":
        pieces = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
        special = np.zeros(len(pieces), dtype=bool)
        special[tokenizer.all_special_ids] = True
        starts_word = np.array([piece.startswith(WORD_START) for piece in pieces])
        normal = [i for i in range(len(pieces)) if not special[i]]
        # e5's own pieces sit between its specials and <mask>; the added tokens (tags, [QUESTION]) after it
        return cls(starts_word, special, tokenizer.mask_token_id, (normal[0], tokenizer.mask_token_id))


def whole_word_mask(
    input_ids: np.ndarray, vocabulary: MaskingVocabulary, rate: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """BERT's masking with whole words: ``(masked input ids, labels)``, labels ``IGNORE`` where not masked.

    Words are drawn in random order and taken while their pieces fit in ``rate`` of the sequence's
    non-special tokens (at least one word). A piece begins a word when it starts with "▁" or follows a
    special token (a sequence cut mid-word begins with the word's rest).
    """
    special = vocabulary.special[input_ids]  # (n,)
    begins = vocabulary.starts_word[input_ids] | np.concatenate([[True], special[:-1]])
    word = np.cumsum(begins & ~special) - 1  # word index of each piece; specials: meaningless, excluded below
    word[special] = -1
    n_words = int(word.max()) + 1
    labels = np.full(input_ids.shape, IGNORE, dtype=np.int64)
    if n_words <= 0:
        return input_ids.copy(), labels
    lengths = np.bincount(word[~special], minlength=n_words)  # (n_words,)
    order = rng.permutation(n_words)
    budget = max(1, round(rate * int((~special).sum())))
    taken = order[np.cumsum(lengths[order]) <= budget]
    if taken.size == 0:
        taken = order[:1]
    chosen = np.zeros(n_words + 1, dtype=bool)
    chosen[taken] = True
    masked = chosen[word]  # word -1 reads the spare last entry: False
    labels[masked] = input_ids[masked]
    # 80% <mask>, 10% a random piece, 10% unchanged
    draw = rng.random(input_ids.shape)
    out = input_ids.copy()
    out[masked & (draw < 0.8)] = vocabulary.mask_id
    replace = masked & (draw >= 0.8) & (draw < 0.9)
    out[replace] = rng.integers(*vocabulary.random_ids, size=int(replace.sum()))
    return out, labels


@dataclass
class MaskedSequence:
    """One sequence as the model reads it, its labels, and the seed of its dropout."""

    input_ids: np.ndarray
    labels: np.ndarray
    seed: int


class MaskedSequences(Dataset):
    """Token sequences masked on access; the masks depend on (seed, stream, epoch, index) only.

    ``set_epoch`` (called by the shared loop) draws new masks for each pass over the text; the held-out
    set is never told an epoch, so its masks stay fixed.
    """

    def __init__(
        self,
        sequences: list[torch.Tensor],
        vocabulary: MaskingVocabulary,
        *,
        rate: float,
        seed: int,
        stream: int = _TRAIN_STREAM,
    ):
        self.sequences, self.vocabulary, self.rate, self.seed, self.stream = sequences, vocabulary, rate, seed, stream
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.sequences)

    def __getitem__(self, index: int) -> MaskedSequence:
        if not 0 <= index < len(self.sequences):
            raise IndexError(index)
        rng = np.random.default_rng([self.seed, self.stream, self.epoch, index])
        input_ids, labels = whole_word_mask(
            self.sequences[index].numpy().astype(np.int64), self.vocabulary, self.rate, rng
        )
        return MaskedSequence(input_ids, labels, int(rng.integers(2**62)))


@dataclass
class MaskedLMCollator:
    """Pads a batch to its longest sequence, rounded up to ``pad_to_multiple_of`` and capped at
    ``max_length`` (:func:`littlebird.training.batching.padded_width`: few distinct widths keep the
    allocator's memory bounded; 64 divides BERT's 512, so a batch never outgrows the encoder)."""

    pad_id: int
    pad_to_multiple_of: int = 64
    max_length: int | None = None

    def __call__(self, items: list[MaskedSequence]) -> dict[str, torch.Tensor]:
        n = padded_width(max(len(item.input_ids) for item in items), self.pad_to_multiple_of, self.max_length)
        input_ids = torch.full((len(items), n), self.pad_id, dtype=torch.long)
        labels = torch.full((len(items), n), IGNORE, dtype=torch.long)
        attention_mask = torch.zeros((len(items), n), dtype=torch.long)
        for row, item in enumerate(items):
            m = len(item.input_ids)
            input_ids[row, :m] = torch.from_numpy(item.input_ids)
            labels[row, :m] = torch.from_numpy(item.labels)
            attention_mask[row, :m] = 1
        seed = 0
        for item in items:  # the batch's dropout seed from its sequences' seeds, in order
            seed = (seed * 1_000_003 + item.seed) % 2**62
        return {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
            "labels": labels,
            "dropout_seed": torch.tensor(seed),
        }


# --------------------------------------------------------------------------- text
def cut_sequences(
    token_ids: list[int], *, max_length: int, cls_id: int, sep_id: int, min_length: int
) -> list[torch.Tensor]:
    """``[CLS] piece ... [SEP]`` sequences of at most ``max_length`` tokens, one after another through a
    document; a last piece shorter than ``min_length`` tokens is dropped."""
    body = max_length - 2
    out = []
    for first in range(0, len(token_ids), body):
        chunk = token_ids[first : first + body]
        if len(chunk) + 2 < min_length:
            break
        out.append(torch.tensor([cls_id, *chunk, sep_id], dtype=torch.int32))
    return out


def text_documents(data_dir: str | Path, dev_fraction: float) -> dict[str, dict[str, list[str]]]:
    """``{"train"|"heldout": {"en"|"ko": [document text]}}``.

    English: each SQuAD article's paragraphs joined, the QA dev split held out. Korean: the Wikipedia
    sample; held out are pages titled like a Korean QA dev article, holding one of its passages, or in
    the dev split by their own title (as the QA split is made), so the teacher's dev passages are never
    trained on.
    """
    corpus = load_corpus(data_dir, dev_fraction)

    def article_text(article: dict) -> str:
        return "\n".join(paragraph["context"] for paragraph in article["paragraphs"])

    documents = {
        "train": {"en": [article_text(a) for a in corpus.train["en"]], "ko": []},
        "heldout": {"en": [article_text(a) for a in corpus.dev["en"]], "ko": []},
    }
    dev_titles = {a["title"] for a in corpus.dev["ko"]}
    dev_passages = [p["context"][:60] for a in corpus.dev["ko"] for p in a["paragraphs"]]
    for page in read_korean_pages(Path(data_dir) / KOREAN_PAGES_FILE):
        text = page["paragraphs"][0]["context"]
        held = (
            page["title"] in dev_titles
            or any(passage in text for passage in dev_passages)
            or is_dev_title(page["title"], dev_fraction)
        )
        documents["heldout" if held else "train"]["ko"].append(text)
    return documents


def tokenized_sequences(args, tokenizer) -> dict[str, dict[str, list[torch.Tensor]]]:
    """Every document of :func:`text_documents` cut into sequences: ``{split: {language: [ids]}}``."""
    documents = text_documents(args.data_dir, args.dev_fraction)
    out = {}
    for split, by_language in documents.items():
        out[split] = {}
        for language, texts in by_language.items():
            out[split][language] = []
            # in slices: every text's ids at once, as Python ints, take many times their tensors' memory
            for first in range(0, len(texts), 256):
                ids = tokenizer(texts[first : first + 256], add_special_tokens=False, verbose=False)["input_ids"]
                out[split][language] += [
                    sequence
                    for document in ids
                    for sequence in cut_sequences(
                        document,
                        max_length=args.max_length,
                        cls_id=tokenizer.cls_token_id,
                        sep_id=tokenizer.sep_token_id,
                        min_length=args.min_length,
                    )
                ]
    return out


def mixed_training_sequences(
    sequences: dict[str, list[torch.Tensor]], ko_share: float, seed: int
) -> list[torch.Tensor]:
    """All of the smaller language's sequences and as many of the other's, drawn at random, as make
    ``ko_share`` of the tokens Korean: every token of the scarcer side is used, none is repeated."""
    tokens = {language: sum(len(s) for s in seqs) for language, seqs in sequences.items()}
    rng = random.Random(seed)
    wanted = {"ko": tokens["en"] * ko_share / (1 - ko_share), "en": tokens["ko"] * (1 - ko_share) / ko_share}
    keep_all = "en" if wanted["ko"] <= tokens["ko"] else "ko"
    other = "ko" if keep_all == "en" else "en"
    chosen, total = [], 0
    for sequence in rng.sample(sequences[other], len(sequences[other])):
        if total >= wanted[other]:
            break
        chosen.append(sequence)
        total += len(sequence)
    return sequences[keep_all] + chosen


def heldout_sequences(sequences: list[torch.Tensor], count: int, seed: int) -> list[torch.Tensor]:
    """``count`` of the held-out sequences, full-length ones first (comparable losses across languages)."""
    rng = random.Random(seed)
    longest = max(len(s) for s in sequences)
    full = [s for s in sequences if len(s) == longest]
    rest = [s for s in sequences if len(s) != longest]
    return rng.sample(full, min(count, len(full))) + rng.sample(rest, max(0, min(count - len(full), len(rest))))


def training_data(args, tokenizer) -> tuple[MaskedSequences, dict[str, MaskedSequences]]:
    """The mixed training sequences and the held-out ones, cut once into ``<output-dir>/features.pt``."""
    data_options = argparse.Namespace(
        output_dir=args.output_dir,
        data_dir=str(args.data_dir),
        dev_fraction=args.dev_fraction,
        max_length=args.max_length,
        min_length=args.min_length,
        stage="mlm",
    )
    sequences = cached_features(data_options, lambda: tokenized_sequences(args, tokenizer))
    vocabulary = MaskingVocabulary.from_tokenizer(tokenizer)
    train = MaskedSequences(
        mixed_training_sequences(sequences["train"], args.ko_share, args.seed),
        vocabulary,
        rate=args.mask_rate,
        seed=args.seed,
    )
    heldout = {
        language: MaskedSequences(
            heldout_sequences(seqs, args.heldout_sequences, args.seed),
            vocabulary,
            rate=args.mask_rate,
            seed=args.seed,
            stream=_HELDOUT_STREAM,
        )
        for language, seqs in sorted(sequences["heldout"].items())
    }
    return train, heldout
