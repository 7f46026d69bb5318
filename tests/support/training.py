"""Toy-scale inputs for the training recipe: a tiny data folder in the shared layout and a tiny BERT source."""

import gzip
import json
from pathlib import Path

import torch
from transformers import BertConfig, BertModel

from littlebird.training.data import DATA_FILES, is_dev_title

E5_VOCAB_ROWS = 250037  # the real tokenizer's ids (extra tokens included) fit a matrix of e5's size

EN_FACTS = [
    ("Arland", "Bexford", "1821"),
    ("Corvia", "Dunmore", "1790"),
    ("Elmora", "Fallow", "1902"),
    ("Gandria", "Hollin", "1655"),
    ("Istria", "Jorvik", "1744"),
    ("Kelmar", "Lindon", "1833"),
    ("Morvia", "Nethers", "1711"),
    ("Ostland", "Pellam", "1888"),
]
KO_FACTS = [
    ("가람국", "나루시", "1821"),
    ("다온국", "라온시", "1790"),
    ("마루국", "바다시", "1902"),
    ("사랑국", "아라시", "1655"),
    ("자람국", "차오시", "1744"),
    ("카라국", "타라시", "1833"),
    ("파랑국", "하늘시", "1711"),
    ("고운국", "노을시", "1888"),
]


def _qa(qid, question, context, answer):
    return {"id": qid, "question": question, "answers": [{"text": answer, "answer_start": context.index(answer)}]}


def english_article(index: int) -> dict:
    country, city, year = EN_FACTS[index]
    first = f"{country} is a small country. The capital of {country} is {city}. It has many rivers."
    second = f"The city of {city} was founded in {year}. Its people like music! Many visit it each year."
    return {
        "title": f"Toy_{country}",
        "paragraphs": [
            {"context": first, "qas": [_qa(f"en-{index}-0", f"What is the capital of {country}?", first, city)]},
            {"context": second, "qas": [_qa(f"en-{index}-1", f"When was {city} founded?", second, year)]},
        ],
    }


def korean_article(index: int) -> dict:
    country, city, year = KO_FACTS[index]
    # The Korean file writes line breaks as the two characters backslash-n.
    context = f"{country}은 작은 나라이다.\\n{country}의 수도는 {city}이다. {city}는 {year}년에 세워졌다."
    return {
        "title": f"토이 {country}",
        "paragraphs": [
            {
                "context": context,
                "qas": [
                    _qa(f"ko-{index}-0", f"{country}의 수도는 어디인가?", context, city),
                    _qa(f"ko-{index}-1", f"{city}는 언제 세워졌는가?", context, year),
                ],
            }
        ],
    }


def write_toy_data(root: Path, dev_fraction: float = 0.5) -> Path:
    """``root/qa/*.json.gz`` in the shared data layout, with dev and train articles in both languages."""
    for language, make in (("en", english_article), ("ko", korean_article)):
        articles = [make(i) for i in range(len(EN_FACTS))]
        dev = [is_dev_title(a["title"], dev_fraction) for a in articles]
        assert any(dev) and not all(dev), "toy titles must fall on both sides of the split"
        path = root / DATA_FILES[language]
        path.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            json.dump({"version": "toy", "data": articles}, handle, ensure_ascii=False)
    return root


def write_tiny_bert(directory: Path, seed: int = 0) -> Path:
    """A random two-layer BERT with e5's vocabulary size, saved as a transformers folder."""
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=E5_VOCAB_ROWS,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        type_vocab_size=1,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
    )
    BertModel(config, add_pooling_layer=False).save_pretrained(directory)
    return directory
