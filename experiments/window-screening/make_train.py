"""Training-split documents for a window ranker: article documents (en), multi-passage pages (ko), page-shaped."""

import sys

from littlebird.training.data import (
    article_documents,
    count_questions,
    keep_questions,
    load_corpus,
    multi_passage_documents,
    take_questions,
    write_squad,
)
from littlebird.training.page_shape import page_shaped_documents

n = int(sys.argv[1])
corpus = load_corpus("../shared/data", 0.1)
for lang, articles in corpus.train.items():
    long = (
        multi_passage_documents(articles, 6, html=False, seed=1)
        if lang == "ko"
        else article_documents(articles, html=False)
    )
    picked = take_questions(articles, n, seed=1)
    ids = {qa["id"] for a in picked for p in a["paragraphs"] for qa in p["qas"]}
    write_squad(f"runs/cascade/train-{lang}-article.json", keep_questions(long, ids))
    picked2 = take_questions(articles, n // 2, seed=2)
    ids2 = {qa["id"] for a in picked2 for p in a["paragraphs"] for qa in p["qas"]} - ids
    pages = page_shaped_documents(articles, lang, distractors=articles, passages_per_document=6, seed=2)
    write_squad(f"runs/cascade/train-{lang}-page-shaped.json", keep_questions(pages, ids2))
    print(lang, count_questions(keep_questions(long, ids)), count_questions(keep_questions(pages, ids2)))
