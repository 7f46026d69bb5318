"""What the training stages share: their command-line options and what the options build.

- data: the short-input windows of the teacher and distillation stages, the long documents of the
  long-context and baseline stages (the same options and seed give the same windows in both);
- Padding Insertion, for the stages whose collator inserts virtual paddings;
- what trains: word embeddings always frozen, optionally the lowest layers, attention dropout.
"""

from __future__ import annotations

import argparse
import os
import random
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

from ..modeling_littlebird import LittleBirdQAHead
from .batching import QACollator
from .data import article_documents, encode_articles, load_corpus, multi_passage_documents, take_questions

def _question_limits(args) -> list[tuple[str, int | None]]:
    return [("en", args.max_en_questions), ("ko", args.max_ko_questions)]


def add_data_arguments(parser: argparse.ArgumentParser, *, max_length: int) -> None:
    """The short-input stages' data options (teacher, distillation)."""
    parser.add_argument("--data-dir", default="../shared/data")
    parser.add_argument("--dev-fraction", type=float, default=0.1)
    parser.add_argument("--max-en-questions", type=int, default=None, help="subset of English training questions")
    parser.add_argument("--max-ko-questions", type=int, default=None, help="subset of Korean training questions")
    parser.add_argument("--max-length", type=int, default=max_length)
    parser.add_argument("--doc-stride", type=int, default=max_length // 2)
    parser.add_argument("--unanswerable-rate", type=float, default=0.1,
                        help="share of answer-less windows of long contexts kept (they teach 'no answer here')")
    parser.add_argument("--ko-repeat", type=int, default=1,
                        help="each Korean window this many times per pass (3,784 Korean training questions "
                             "against 77,561 English ones)")


def paragraph_windows(corpus, tokenizer, limits: list[tuple[str, int | None]], *, max_length: int, stride: int,
                      unanswerable_rate: float, with_sentence_ends: bool, seed: int) -> list:
    """Windows of ``max_length`` over each question's own paragraph, for ``limits``' (language, questions)."""
    features = []
    for language, limit in limits:
        articles = take_questions(corpus.train[language], limit, seed=seed)
        features += encode_articles(articles, tokenizer, language=language, max_length=max_length, stride=stride,
                                    unanswerable_rate=unanswerable_rate, with_sentence_ends=with_sentence_ends,
                                    seed=seed)
    return features


def short_context_features(args, tokenizer, *, with_sentence_ends: bool = False) -> list:
    """Short-input features of the training split: English subset + Korean (``--ko-repeat`` times),
    windows of ``max_length``."""
    corpus = load_corpus(args.data_dir, args.dev_fraction)
    features = []
    for language, limit in _question_limits(args):
        windows = paragraph_windows(corpus, tokenizer, [(language, limit)], max_length=args.max_length,
                                    stride=args.doc_stride, unanswerable_rate=args.unanswerable_rate,
                                    with_sentence_ends=with_sentence_ends, seed=args.seed)
        repeat = getattr(args, "ko_repeat", 1) if language == "ko" else 1
        if repeat < 1:
            raise ValueError(f"--ko-repeat must be at least 1, got {repeat}")
        features += windows * repeat
    return features


def long_documents(articles: list[dict], language: str, *, html_share: float, passages_per_document: int,
                   seed: int) -> list[dict]:
    """Long SQuAD articles of ``articles``: half HTML-rendered (by ``html_share``), half plain.

    English articles are joined whole; Korean ones, mostly one passage each, are grouped
    ``passages_per_document`` at a time under their own headings.
    """
    rng = random.Random(seed)
    as_html = [rng.random() < html_share for _ in articles]
    html = [a for a, flag in zip(articles, as_html) if flag]
    plain = [a for a, flag in zip(articles, as_html) if not flag]
    if language == "ko":
        return (multi_passage_documents(html, passages_per_document, html=True, seed=seed)
                + multi_passage_documents(plain, passages_per_document, html=False, seed=seed))
    return article_documents(html, html=True) + article_documents(plain, html=False)


def add_long_context_data_arguments(parser: argparse.ArgumentParser) -> None:
    """The long-input stages' data options (long context, baselines)."""
    parser.add_argument("--data-dir", default="../shared/data")
    parser.add_argument("--dev-fraction", type=float, default=0.1)
    parser.add_argument("--max-en-questions", type=int, default=None)
    parser.add_argument("--max-ko-questions", type=int, default=None)
    parser.add_argument("--max-length", type=int, default=4096)
    parser.add_argument("--unanswerable-rate", type=float, default=0.02)
    parser.add_argument("--html-share", type=float, default=0.5)
    parser.add_argument("--ko-passages-per-document", type=int, default=12)
    parser.add_argument("--short-en-questions", type=int, default=0,
                        help="also train on the short windows of this many English questions (keeps the paragraph skill)")
    parser.add_argument("--short-ko-questions", type=int, default=0, help="the same for Korean questions")
    parser.add_argument("--short-max-length", type=int, default=384, help="the short windows' length")


def long_context_features(args, tokenizer, *, with_sentence_ends: bool) -> list:
    """The long-input stages' training windows; the same options and seed give the same windows.

    With ``--short-en-questions`` / ``--short-ko-questions`` the short windows of that many paragraph
    questions come too (as the fine-tuning stage cuts them), so a stage that teaches long inputs also
    keeps practising paragraphs: trained on long windows alone, round 2 lost 7 (English) and 3 (Korean)
    points of paragraph F1.
    """
    corpus = load_corpus(args.data_dir, args.dev_fraction)
    short = [(language, count) for language, count in [("en", args.short_en_questions), ("ko", args.short_ko_questions)]
             if count]
    features = paragraph_windows(corpus, tokenizer, short, max_length=args.short_max_length,
                                 stride=args.short_max_length // 3, unanswerable_rate=0.1,
                                 with_sentence_ends=with_sentence_ends, seed=args.seed)
    for language, limit in _question_limits(args):
        documents = long_documents(corpus.train[language], language, html_share=args.html_share,
                                   passages_per_document=args.ko_passages_per_document, seed=args.seed)
        documents = take_questions(documents, limit, seed=args.seed)
        features += encode_articles(documents, tokenizer, language=language, max_length=args.max_length,
                                    stride=args.max_length // 4, unanswerable_rate=args.unanswerable_rate,
                                    answer_windows_per_question=1, with_sentence_ends=with_sentence_ends,
                                    seed=args.seed)
    return features


def add_padding_insertion_arguments(parser: argparse.ArgumentParser) -> None:
    """Padding Insertion's options, read by :class:`littlebird.training.batching.QACollator`."""
    parser.add_argument("--pi-probability", type=float, default=0.2,
                        help="Padding Insertion: chance of virtual paddings after each sentence end")
    parser.add_argument("--pi-max-padding", type=int, default=256, help="at most this many virtual paddings")


def padding_insertion_collator(args, tokenizer) -> QACollator:
    """The batches of a stage with :func:`add_padding_insertion_arguments`: padded, with virtual paddings."""
    return QACollator(pad_id=tokenizer.pad_token_id, pi_probability=args.pi_probability,
                      pi_max_padding=args.pi_max_padding, seed=args.seed)


def freeze_word_embeddings(model: nn.Module) -> None:
    """Word embeddings stay as the source has them: fast, and they need not be stored."""
    for name, parameter in model.named_parameters():
        if name.endswith("word_embeddings.weight"):
            parameter.requires_grad_(False)


def freeze_lower_layers(model: nn.Module, count: int) -> None:
    """The embeddings and the lowest ``count`` encoder layers stop learning, so the backward pass
    stops above them; works on the teacher and on LittleBird (whose initial pack P goes too)."""
    if count <= 0:
        return
    encoder = model.littlebird
    layers = next(module for name, module in encoder.named_modules() if name.endswith("encoder.layer"))
    if count > len(layers):
        raise ValueError(f"--freeze-layers {count} exceeds the encoder's {len(layers)} layers")
    for module in (getattr(encoder, "bert", encoder).embeddings, *layers[:count]):
        module.requires_grad_(False)
    if hasattr(encoder, "encoder") and hasattr(encoder.encoder, "pack_embeddings"):
        encoder.encoder.pack_embeddings.requires_grad_(False)


def set_attention_dropout(model: nn.Module, probability: float) -> None:
    """Dropout on the attention probabilities of the teacher, of LittleBird, or of a model holding the
    encoder as ``.bert`` (the masked-LM stage).

    On CPU, scaled_dot_product_attention with dropout leaves the fused kernel for the math one:
    about 4x slower attention at 384 tokens, most of a teacher step (benchmarks/bench_training.py).
    """
    config = getattr(model, "config", None)
    if config is not None:
        config.attention_probs_dropout_prob = probability  # LittleBird reads it at every forward
    bert = getattr(getattr(model, "littlebird", model), "bert", None)
    if bert is not None:
        bert.config.attention_probs_dropout_prob = probability
        for module in bert.modules():
            if type(module).__name__.endswith("SelfAttention"):
                module.dropout.p = probability


def add_features_only_argument(parser: argparse.ArgumentParser) -> None:
    """``--features-only``: build the stage's windows into ``<output-dir>/features.pt`` and stop."""
    parser.add_argument("--features-only", action="store_true",
                        help="only build and save the windows (features.pt) and stop, before any model is read: "
                             "prepared on one machine while another trains, the stage then starts at once")


def add_trainable_arguments(parser: argparse.ArgumentParser) -> None:
    """What a stage trains: frozen lower layers and attention dropout."""
    parser.add_argument("--freeze-layers", type=int, default=0,
                        help="keep the embeddings and the lowest N encoder layers fixed (no backward below them)")
    parser.add_argument("--attention-dropout", type=float, default=0.0,
                        help="dropout on attention probabilities (0: the fused CPU attention kernel stays usable)")
    parser.add_argument("--train-only", choices=("all", "answerable"), default="all",
                        help="'answerable': only the QA head's answerable part learns (the [CLS] MLP that says "
                             "'no answer here' and ranks a long document's windows); the encoder and the span "
                             "head stay as they are, so answers inside a window do not change")


def apply_trainable_arguments(model: nn.Module, args) -> None:
    """Word embeddings stay frozen; then ``--freeze-layers`` and ``--attention-dropout``."""
    freeze_word_embeddings(model)
    freeze_lower_layers(model, args.freeze_layers)
    if getattr(args, "train_only", "all") == "answerable":
        train_answerable_only(model)
    set_attention_dropout(model, args.attention_dropout)


def train_answerable_only(model: nn.Module) -> None:
    """Everything but the QA head's answerable MLP stops learning (``--train-only answerable``)."""
    heads = [module for module in model.modules() if isinstance(module, LittleBirdQAHead)]
    if len(heads) != 1:
        raise ValueError(f"--train-only answerable needs one LittleBird QA head, found {len(heads)}")
    model.requires_grad_(False)
    heads[0].answerable_dense.requires_grad_(True)
    heads[0].answerable.requires_grad_(True)


FEATURES_FILE = "features.pt"
# Options that only say how long to run, when to save and where: a chunk of a stage may change them
# (scripts/in_chunks.sh's --max-minutes, a shortened --max-steps) and still reuse the windows.
_RUN_ONLY_OPTIONS = {"output_dir", "max_minutes", "max_steps", "stop_at_step", "save_minutes", "log_every",
                     "snapshots", "schedule_minutes", "features_only", "train_only"}
# Options added after runs started, at the value that leaves the windows as they were: left out of the
# comparison, so a run in progress keeps its saved windows.
_NEUTRAL_DEFAULTS = {"ko_repeat": 1, "init_encoder": None}


def cached_features(args, build: Callable[[], list]) -> list:
    """``build()``'s windows, kept in ``<output-dir>/features.pt`` for the next process of the same stage.

    A stage run in chunks (``scripts/in_chunks.sh``) starts a new process every few minutes; building
    the windows again (tokenizing tens of thousands of questions, splitting Korean sentences with
    Kiwi) took about two minutes of each on 2 cores. The file is reused only when every other option
    is the same, so a changed data option, seed or rate builds anew.
    """
    path = Path(args.output_dir) / FEATURES_FILE
    options = {name: value for name, value in sorted(vars(args).items())
               if name not in _RUN_ONLY_OPTIONS and _NEUTRAL_DEFAULTS.get(name, object()) != value}
    if path.exists():
        saved = torch.load(path, map_location="cpu", weights_only=False)
        if saved.get("options") == options:
            return saved["features"]
    features = build()
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")  # several processes may write at once
    torch.save({"options": options, "features": features}, partial)
    os.replace(partial, path)
    return features
