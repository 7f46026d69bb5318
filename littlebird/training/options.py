"""What the training stages share: their groups of options (dataclasses) and what the options build.

- data: the short-input windows of the teacher and distillation stages, the long documents of the
  long-context and baseline stages (the same options and seed give the same windows in both);
- Padding Insertion, for the stages whose collator inserts virtual paddings;
- what trains: word embeddings always frozen, optionally the lowest layers.

A stage's options class inherits the groups it uses (see :mod:`littlebird.command_options`).
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from ..command_options import Options, option
from .batching import QACollator
from .data import (
    article_documents,
    count_questions,
    encode_articles,
    load_corpus,
    multi_passage_documents,
    near_miss_questions,
    take_questions,
    unanswerable_questions,
)
from .page_shape import page_shaped_documents
from .page_tables import load_table_articles
from .question_forms import with_search_style
from .table_lookups import english_lookup_articles, korean_lookup_articles


def _question_limits(args) -> list[tuple[str, int | None]]:
    return [("en", args.max_en_questions), ("ko", args.max_ko_questions)]


DATA_ENVIRONMENT = "LITTLEBIRD_DATA"


def data_folder(given: str | None) -> str:
    """The QA data folder: ``given``, else ``$LITTLEBIRD_DATA``; a clear error naming both when neither is set."""
    folder = given or os.environ.get(DATA_ENVIRONMENT)
    if not folder:
        raise ValueError(
            f"no data folder: give --data-dir (littlebird train: --data) or set {DATA_ENVIRONMENT} to "
            "the folder whose qa/ holds squad-v1.1-train.json.gz and ko-wiki-mrc-4192.json.gz"
        )
    return folder


@dataclass(kw_only=True)
class DataOptions(Options):
    """Where the QA data is and which training questions a stage reads."""

    data_dir: str | None = option(None, f"the data folder (its qa/ holds the QA files); default ${DATA_ENVIRONMENT}")
    dev_fraction: float = option(0.1, "share of articles held out as the dev split")
    max_en_questions: int | None = option(None, "subset of English training questions (default: all)")
    max_ko_questions: int | None = option(None, "subset of Korean training questions (default: all)")

    def __post_init__(self) -> None:
        super().__post_init__()
        self.data_dir = data_folder(self.data_dir)


@dataclass(kw_only=True)
class ShortDataOptions(DataOptions):
    """The short-input stages' windows (teacher, distillation, fine-tuning): question + paragraph."""

    max_length: int = option(384, "tokens per window")
    doc_stride: int | None = option(None, "tokens between window starts (default: half of max_length)")
    unanswerable_rate: float = option(
        0.1, "share of answer-less windows of long contexts kept (they teach 'no answer here')"
    )
    ko_repeat: int = option(
        1, "each Korean window this many times per pass (3,784 Korean training questions against 77,561 English ones)"
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.doc_stride is None:
            self.doc_stride = self.max_length // 2
        if self.ko_repeat < 1:
            raise ValueError(f"ko_repeat must be at least 1, got {self.ko_repeat}")


def paragraph_windows(
    corpus,
    tokenizer,
    limits: list[tuple[str, int | None]],
    *,
    max_length: int,
    stride: int,
    unanswerable_rate: float,
    with_sentence_ends: bool,
    seed: int,
    search_style_share: float = 0.0,
    negative_pair_share: float = 0.0,
    anchored: bool = False,
) -> list:
    """Windows of ``max_length`` over each question's own paragraph, for ``limits``' (language, questions);
    a ``search_style_share`` of the questions typed as keyword queries (:mod:`.question_forms`); a
    ``negative_pair_share`` of them also asked, without an answer, of another article's paragraph and of the
    training paragraph nearest in words that lacks the answer (the dev files' unanswerable and near-miss pairs).
    ``anchored`` marks the paragraph windows ``soft`` (:class:`~littlebird.training.objectives.AnchoredQAObjective`);
    the negative pairs keep their gold "no answer"."""
    features = []
    for language, limit in limits:
        articles = take_questions(corpus.train[language], limit, seed=seed)
        articles = with_search_style(articles, language, search_style_share, seed)
        if negative_pair_share > 0:
            asked = take_questions(articles, round(negative_pair_share * count_questions(articles)), seed=seed + 1)
            pairs = unanswerable_questions(asked) + near_miss_questions(asked, corpus.train[language])
            features += encode_articles(
                pairs,
                tokenizer,
                language=language,
                max_length=max_length,
                stride=stride,
                with_sentence_ends=with_sentence_ends,
                seed=seed,
            )
        windows = encode_articles(
            articles,
            tokenizer,
            language=language,
            max_length=max_length,
            stride=stride,
            unanswerable_rate=unanswerable_rate,
            with_sentence_ends=with_sentence_ends,
            seed=seed,
        )
        features += _anchored(windows, anchored)
    return features


def _anchored(features: list, anchored: bool) -> list:
    for feature in features:
        feature.soft = anchored
    return features


def short_context_features(args, tokenizer, *, with_sentence_ends: bool = False) -> list:
    """Short-input features of the training split: English subset + Korean (``--ko-repeat`` times),
    windows of ``max_length``."""
    corpus = load_corpus(args.data_dir, args.dev_fraction)
    features = []
    for language, limit in _question_limits(args):
        windows = paragraph_windows(
            corpus,
            tokenizer,
            [(language, limit)],
            max_length=args.max_length,
            stride=args.doc_stride,
            unanswerable_rate=args.unanswerable_rate,
            with_sentence_ends=with_sentence_ends,
            seed=args.seed,
        )
        features += windows * (args.ko_repeat if language == "ko" else 1)
    return features


# The key that marks a page-shaped document among long_documents' articles.
PAGE_SHAPED = "page_shaped"


def long_documents(
    articles: list[dict],
    language: str,
    *,
    html_share: float,
    passages_per_document: int,
    seed: int,
    page_shaped_share: float = 0.0,
) -> list[dict]:
    """Long SQuAD articles of ``articles``: half HTML-rendered (by ``html_share``), half plain.

    English articles are joined whole; Korean ones, mostly one passage each, are grouped
    ``passages_per_document`` at a time under their own headings. A ``page_shaped_share`` of the
    articles is rendered page-shaped instead (:mod:`littlebird.training.page_shape`: tables, lists,
    headings, another article's infobox and navigation lines), its distractors drawn from ``articles``,
    each marked ``PAGE_SHAPED``; at 0 the documents are those of the stages before it, draw for draw.
    """
    shaped = []
    if page_shaped_share > 0:
        draws = random.Random(f"page-shaped-{seed}")
        flags = [draws.random() < page_shaped_share for _ in articles]
        shaped = page_shaped_documents(
            [a for a, flag in zip(articles, flags) if flag],
            language,
            distractors=articles,
            passages_per_document=passages_per_document,
            seed=seed,
        )
        shaped = [{**page, PAGE_SHAPED: True} for page in shaped]
        articles = [a for a, flag in zip(articles, flags) if not flag]
    return shaped + _html_or_plain_documents(
        articles, language, html_share=html_share, passages_per_document=passages_per_document, seed=seed
    )


def _html_or_plain_documents(
    articles: list[dict], language: str, *, html_share: float, passages_per_document: int, seed: int
) -> list[dict]:
    rng = random.Random(seed)
    as_html = [rng.random() < html_share for _ in articles]
    html = [a for a, flag in zip(articles, as_html) if flag]
    plain = [a for a, flag in zip(articles, as_html) if not flag]
    if language == "ko":
        return multi_passage_documents(html, passages_per_document, html=True, seed=seed) + multi_passage_documents(
            plain, passages_per_document, html=False, seed=seed
        )
    return article_documents(html, html=True) + article_documents(plain, html=False)


@dataclass(kw_only=True)
class LongDataOptions(DataOptions):
    """The long-input stages' windows: whole articles and multi-passage pages, one window per question
    around its answer, optionally mixed with paragraph windows."""

    max_length: int = option(4096, "tokens per long window")
    unanswerable_rate: float = option(0.02, "share of the documents' answer-less windows kept")
    html_share: float = option(0.5, "share of documents rendered as the app's cleaner renders HTML")
    ko_passages_per_document: int = option(12, "Korean passages joined into one page")
    short_en_questions: int = option(
        0, "also train on the paragraph windows of this many English questions (keeps the paragraph skill)"
    )
    short_ko_questions: int = option(0, "the same for Korean questions")
    short_max_length: int = option(384, "the paragraph windows' length")
    document_max_length: int | None = option(
        None,
        "the whole articles' and pages' windows' length (default: max_length); the tables, lookups and "
        "paragraphs keep theirs. The reader reads 1,024-token windows",
    )
    page_shaped_share: float = option(
        0.0,
        "share of articles rendered as a cleaned web page (tables, lists, "
        "headings, another article's infobox and navigation lines); 0: none",
    )
    table_questions: int = option(
        0,
        "also train on this many table questions of real Wikipedia pages "
        "(qa/wtq-train-pages.jsonl.gz through the app's cleaner; training pages only)",
    )
    table_unanswerable_rate: float = option(
        0.05, "share of a table page's windows without the answer kept, labelled 'no answer here'"
    )
    lookup_questions_en: int = option(
        0,
        "also train on this many English lookups (a row named by one or two of its cells, another cell asked) "
        "in the tables of WikiTableQuestions' training pages",
    )
    lookup_questions_ko: int = option(
        0,
        "also train on this many Korean lookups, in tables built after a Korean article's opening "
        "(text/kowiki-sample.jsonl.gz)",
    )
    lookup_plain_share: float = option(
        0.0,
        "share of the Korean lookups asked by what the cell means, without its column's header "
        "('how long does it take' for a crossing time)",
    )
    lookup_vehicle_share: float = option(
        0.0,
        "share of the Korean route tables that name their vehicle in a column's header ('첫 배') and in the "
        "questions asked by meaning: a word of the question that also names another column must not pull the "
        "answer there",
    )
    search_style_share: float = option(
        0.0,
        "share of the SQuAD and Korean questions typed as keyword queries "
        "(lower case, no question mark, keyword order)",
    )
    negative_pair_share: float = option(
        0.0,
        "share of the paragraph questions also asked of another article's "
        "paragraph and of the nearest paragraph without their answer, "
        "labelled 'no answer'",
    )
    anchor_prose: bool = option(
        False,
        "prose windows (every window but the table questions') learn the starting "
        "model's own start, end and answerable distributions instead of their gold "
        "spans, so that prose cannot slide while tables are learnt",
    )
    gold_page_shaped: bool = option(
        False,
        "with anchor_prose: the page-shaped documents' windows keep their gold spans, so that the prose of "
        "pages with tables, lists and infoboxes learns while the other prose holds",
    )
    tydi_ko: bool = option(
        False, "add TyDi QA's Korean training questions (qa/tydiqa-goldp-ko-train.json.gz) to the Korean questions"
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        shares = ("page_shaped_share", "table_unanswerable_rate", "search_style_share", "negative_pair_share")
        for name in (*shares, "lookup_plain_share", "lookup_vehicle_share"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} is a share between 0 and 1, got {getattr(self, name)}")
        for name in ("table_questions", "lookup_questions_en", "lookup_questions_ko"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} is a count of questions, got {getattr(self, name)}")
        if self.gold_page_shaped and not self.anchor_prose:
            raise ValueError("gold_page_shaped keeps page-shaped gold spans among anchored prose: set anchor_prose")
        if self.document_max_length is not None and self.document_max_length < 16:
            raise ValueError(f"document_max_length is a window's length in tokens, got {self.document_max_length}")


def long_context_features(args, tokenizer, *, with_sentence_ends: bool) -> list:
    """The long-input stages' training windows; the same options and seed give the same windows.

    With ``--short-en-questions`` / ``--short-ko-questions`` the short windows of that many paragraph
    questions come too (as the fine-tuning stage cuts them), so a stage that teaches long inputs also
    keeps practising paragraphs: trained on long windows alone, a student loses paragraph F1 (the training
    log's rounds 2 and 3).
    """
    corpus = load_corpus(args.data_dir, args.dev_fraction, tydi_ko=args.tydi_ko)
    short = [
        (language, count)
        for language, count in [("en", args.short_en_questions), ("ko", args.short_ko_questions)]
        if count
    ]
    features = paragraph_windows(
        corpus,
        tokenizer,
        short,
        max_length=args.short_max_length,
        stride=args.short_max_length // 3,
        unanswerable_rate=0.1,
        with_sentence_ends=with_sentence_ends,
        seed=args.seed,
        search_style_share=args.search_style_share,
        negative_pair_share=args.negative_pair_share,
        anchored=args.anchor_prose,
    )
    for language, limit in _question_limits(args):
        documents = long_documents(
            corpus.train[language],
            language,
            html_share=args.html_share,
            passages_per_document=args.ko_passages_per_document,
            seed=args.seed,
            page_shaped_share=args.page_shaped_share,
        )
        documents = take_questions(documents, limit, seed=args.seed)
        documents = with_search_style(documents, language, args.search_style_share, args.seed)
        document_length = args.document_max_length or args.max_length
        origins: list[dict] = []  # each window's document
        windows = encode_articles(
            documents,
            tokenizer,
            language=language,
            max_length=document_length,
            stride=document_length // 4,
            unanswerable_rate=args.unanswerable_rate,
            answer_windows_per_question=1,
            with_sentence_ends=with_sentence_ends,
            seed=args.seed,
            article_of=origins,
        )
        # anchored prose; with gold_page_shaped, the page-shaped documents' windows learn their gold spans
        for feature, article in zip(windows, origins, strict=True):
            feature.soft = args.anchor_prose and not (args.gold_page_shaped and article.get(PAGE_SHAPED, False))
        features += windows

    def table_page_windows(articles: list[dict], language: str = "en") -> list:
        # Whole pages: the answer's window, and a share of every other window of the page as "no answer here".
        return encode_articles(
            articles,
            tokenizer,
            language=language,
            max_length=args.max_length,
            stride=args.max_length // 2,
            unanswerable_rate=args.table_unanswerable_rate,
            answer_windows_per_question=1,
            with_sentence_ends=with_sentence_ends,
            seed=args.seed,
        )

    if args.table_questions:
        pages, _ = load_table_articles(args.data_dir, args.dev_fraction, "train")
        pages = take_questions(pages, args.table_questions, seed=args.seed)
        features += table_page_windows(pages)
    for language, count in [("en", args.lookup_questions_en), ("ko", args.lookup_questions_ko)]:
        if not count:
            continue
        # Lookups in tables, gold-labelled and read as the table questions are.
        if language == "en":
            lookups = english_lookup_articles(args.data_dir, args.dev_fraction, count, seed=args.seed)
        else:
            lookups = korean_lookup_articles(
                args.data_dir,
                count,
                seed=args.seed,
                plain_share=args.lookup_plain_share,
                vehicle_share=args.lookup_vehicle_share,
            )
        features += table_page_windows(lookups, language)
    return features


@dataclass(kw_only=True)
class PaddingInsertionOptions(Options):
    """Padding Insertion (paper section 3.4), read by :class:`littlebird.training.batching.QACollator`."""

    pi_probability: float = option(0.2, "chance of virtual paddings after each sentence end")
    pi_max_padding: int = option(256, "at most this many virtual paddings")


def padding_insertion_collator(args, tokenizer) -> QACollator:
    """The batches of a stage with :func:`add_padding_insertion_arguments`: padded, with virtual paddings."""
    return QACollator(
        pad_id=tokenizer.pad_token_id,
        pi_probability=args.pi_probability,
        pi_max_padding=args.pi_max_padding,
        seed=args.seed,
    )


def freeze_word_embeddings(model: nn.Module) -> None:
    """Word embeddings stay as the source has them: fast, and they need not be stored."""
    for name, parameter in model.named_parameters():
        if name.endswith("word_embeddings.weight"):
            parameter.requires_grad_(False)


def encoder_layers(model: nn.Module, count: int, option: str) -> nn.ModuleList:
    """The encoder's layers (the teacher's and LittleBird's alike); a ValueError where ``option``'s ``count``
    exceeds them."""
    layers = next(module for name, module in model.littlebird.named_modules() if name.endswith("encoder.layer"))
    if count > len(layers):
        raise ValueError(f"--{option} {count} exceeds the encoder's {len(layers)} layers")
    return layers


def freeze_lower_layers(model: nn.Module, count: int) -> None:
    """The embeddings and the lowest ``count`` encoder layers stop learning, so the backward pass
    stops above them; works on the teacher and on LittleBird (whose initial pack P goes too)."""
    if count <= 0:
        return
    encoder = model.littlebird
    layers = encoder_layers(model, count, "freeze-layers")
    for module in (getattr(encoder, "bert", encoder).embeddings, *layers[:count]):
        module.requires_grad_(False)
    if hasattr(encoder, "encoder") and hasattr(encoder.encoder, "pack_embeddings"):
        encoder.encoder.pack_embeddings.requires_grad_(False)


def freeze_upper_layers(model: nn.Module, count: int) -> None:
    """The highest ``count`` encoder layers stop learning; the QA head above them and the layers below still learn
    (the backward pass goes through the fixed layers to reach those below)."""
    if count <= 0:
        return
    layers = encoder_layers(model, count, "freeze-upper-layers")
    for module in layers[len(layers) - count :]:
        module.requires_grad_(False)


@dataclass(kw_only=True)
class TrainableOptions(Options):
    """What a stage trains (word embeddings are always frozen) and whether it only builds its windows."""

    freeze_layers: int = option(0, "keep the embeddings and the lowest N encoder layers fixed (no backward below them)")
    freeze_upper_layers: int = option(
        0, "keep the highest N encoder layers fixed; the QA head and the layers below them still learn"
    )
    features_only: bool = option(
        False, "only build and save the windows (features.pt) and stop, before any model is read"
    )


def apply_trainable_options(model: nn.Module, args) -> None:
    """Word embeddings stay frozen; then ``freeze_layers`` and ``freeze_upper_layers``."""
    freeze_word_embeddings(model)
    freeze_lower_layers(model, args.freeze_layers)
    freeze_upper_layers(model, args.freeze_upper_layers)


FEATURES_FILE = "features.pt"
# Options that only say how long to run, when to save and where, what the anchor weighs, what dropout drops or
# which layers learn: a chunk of a stage may change them (a rerun with --max-minutes, a new --max-steps) and still
# reuse the windows.
_RUN_ONLY_OPTIONS = {
    "output_dir",
    "anchor_dir",
    "anchor_weight",
    "dropout",
    "max_minutes",
    "max_steps",
    "stop_at_step",
    "save_minutes",
    "log_every",
    "snapshots",
    "features_only",
    "freeze_layers",
    "freeze_upper_layers",
}
# Options added after runs started, at the value that leaves the windows as they were: left out of the
# comparison, so a run in progress keeps its saved windows.
_NEUTRAL_DEFAULTS = {
    "ko_repeat": 1,
    "init_encoder": None,
    "page_shaped_share": 0.0,
    "table_questions": 0,
    "table_unanswerable_rate": 0.05,
    "lookup_questions_en": 0,
    "lookup_questions_ko": 0,
    "lookup_plain_share": 0.0,
    "lookup_vehicle_share": 0.0,
    "search_style_share": 0.0,
    "negative_pair_share": 0.0,
    "anchor_prose": False,
    "gold_page_shaped": False,
    "tydi_ko": False,
    "document_max_length": None,
}


def cached_features(args, build: Callable[[], list]) -> list:
    """``build()``'s windows, kept in ``<output-dir>/features.pt`` for the next process of the same stage.

    A stage that is stopped and resumed starts a new process each time, and building the windows again
    (tokenizing tens of thousands of questions, splitting Korean sentences with Kiwi) would take minutes
    of each. The file is reused only when every other option
    is the same, so a changed data option, seed or rate builds anew.
    """
    path = Path(args.output_dir) / FEATURES_FILE
    options = {
        name: value
        for name, value in sorted(vars(args).items())
        if name not in _RUN_ONLY_OPTIONS and _NEUTRAL_DEFAULTS.get(name, object()) != value
    }
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
