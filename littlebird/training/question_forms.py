"""Questions as people type them into a search box: lower case, no question mark, keywords in order.

SQuAD's and the Korean set's questions are written as full sentences ("When was the bridge completed?").
People asking a page type "bridge completed when". A share of the training questions is rewritten so,
so that the reader stops depending on textbook phrasing:

- English: lower case; the question mark and function words (articles, auxiliaries, prepositions) go; the
  question word ("when", "who", ...) moves behind the content words, as a keyword query puts it;
- Korean: Kiwi's morphemes; nouns, numbers, foreign words, roots and verb stems stay in order, particles and
  endings go, and the question word (언제, 누구, 어디, 무엇, 몇, ...) moves to the end.

The answer's text and offsets are untouched: only the question changes.
"""

from __future__ import annotations

import random
import re

from ..answer_text import get_kiwi

_ENGLISH_QUESTION_WORDS = {"what", "which", "who", "whom", "whose", "when", "where", "why", "how"}
_ENGLISH_FUNCTION_WORDS = {
    "a",
    "an",
    "the",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "being",
    "do",
    "does",
    "did",
    "has",
    "have",
    "had",
    "of",
    "in",
    "on",
    "at",
    "to",
    "for",
    "by",
    "with",
    "from",
    "as",
    "that",
    "this",
    "these",
    "those",
    "it",
    "its",
    "and",
    "or",
    "there",
    "can",
    "could",
    "would",
    "should",
    "will",
    "may",
    "might",
    "into",
    "about",
    "name",
    "through",
}
_HOW_WHAT = {"many", "much", "long", "old", "far", "tall", "big", "large", "often", "high"}
_ENGLISH_WORD = re.compile(r"[\w'’.-]+")
_KOREAN_QUESTION_WORDS = {"언제", "누구", "어디", "무엇", "무슨", "몇", "어느", "얼마", "왜", "어떤", "어떻게", "뭐"}
_KOREAN_KEPT_TAGS = ("NNG", "NNP", "NNB", "NR", "NP", "SL", "SN", "SH", "XR", "VV", "VA", "MM")


def search_style_english(question: str) -> str:
    """``"When was the Eiffel Tower completed?"`` -> ``"eiffel tower completed when"``."""
    words = [w.strip(".'’-") for w in _ENGLISH_WORD.findall(question.lower())]
    words = [w for w in words if w]
    asked, content = [], []
    for index, word in enumerate(words):
        if word in _ENGLISH_QUESTION_WORDS:
            asked.append(word)
        elif index and words[index - 1] == "how" and word in _HOW_WHAT:
            asked.append(word)  # "how many", "how long": the asked quantity stays whole
        elif word not in _ENGLISH_FUNCTION_WORDS:
            content.append(word)
    if not content:
        return question.lower().rstrip("?").strip()
    return " ".join(content + asked[:2] if asked[:1] == ["how"] else content + asked[:1])


def search_style_korean(question: str) -> str:
    """``"훈민정음은 언제 반포되었는가?"`` -> ``"훈민정음 반포 언제"``."""
    tokens = get_kiwi().tokenize(question)
    asked, content = [], []
    for token in tokens:
        tag = token.tag.split("-", 1)[0]
        if token.form in _KOREAN_QUESTION_WORDS:
            asked.append(token.form)
        elif tag.startswith(_KOREAN_KEPT_TAGS):
            content.append(token.form)
    if not content:
        return question.rstrip("?").strip()
    return " ".join(content + asked[:1])


def search_style(question: str, language: str) -> str:
    """The question as a keyword query in ``language`` ("en" or "ko")."""
    return search_style_korean(question) if language == "ko" else search_style_english(question)


def with_search_style(articles: list[dict], language: str, share: float, seed: int) -> list[dict]:
    """``articles`` with a ``share`` of their questions (drawn with ``seed``) in search style; ids unchanged."""
    if share <= 0:
        return articles
    rng = random.Random(f"search-style-{seed}")
    out = []
    for article in articles:
        paragraphs = []
        for paragraph in article["paragraphs"]:
            qas = [
                {**qa, "question": search_style(qa["question"], language)} if rng.random() < share else qa
                for qa in paragraph["qas"]
            ]
            paragraphs.append({**paragraph, "qas": qas})
        out.append({**article, "paragraphs": paragraphs})
    return out
