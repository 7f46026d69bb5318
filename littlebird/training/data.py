"""QA data: SQuAD-format reading, the by-article dev split, long documents, HTML rendering, features.

Every dataset here is a list of SQuAD "articles" (``{"title", "paragraphs": [{"context", "qas"}]}``),
so a dev set can be written back as a SQuAD file and scored by :mod:`littlebird.evaluation`.

Model inputs are :mod:`littlebird.reader`'s, so a model trains on what it will read: appendix A.2's
``[CLS] [QUESTION] question [SEP] document`` with the reader's question cap, and a document longer
than the window cut into the reader's windows (starts at most ``stride`` apart). A window without
the answer points at [CLS] (index 0), which the QA head reads as "no answer here".
"""

from __future__ import annotations

import bisect
import gzip
import json
import math
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from ..reader import question_prefix, special_ids, tokenize_questions, window_capacity, window_input_ids, window_starts
from .splits import is_dev_title, split_by_article  # noqa: F401  (the data API, as before)

SQUAD_FILE = "qa/squad-v1.1-train.json.gz"
KOREAN_FILE = "qa/ko-wiki-mrc-4192.json.gz"
TYDI_KOREAN_FILE = "qa/tydiqa-goldp-ko-train.json.gz"  # real information-seeking questions, training stages only
DATA_FILES = {"en": SQUAD_FILE, "ko": KOREAN_FILE}

# A sentence ends at . ! ? (plus closing quotes/brackets) followed by whitespace.
_ENGLISH_SENTENCE_END = re.compile(r"[.!?][\"')\]]*(?=\s)")


# --------------------------------------------------------------------------- reading and splitting
def read_squad(path: str | Path) -> list[dict]:
    """The ``data`` list of a SQuAD JSON file (``.json`` or ``.json.gz``)."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)["data"]


def write_squad(path: str | Path, articles: list[dict], version: str = "littlebird-dev") -> None:
    """Write ``articles`` as a SQuAD JSON file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"version": version, "data": articles}, ensure_ascii=False), encoding="utf-8")


def unescape_newlines(articles: list[dict]) -> list[dict]:
    """Turn the Korean file's two-character ``\\n`` into real line breaks, shifting answer offsets."""
    out = []
    for article in articles:
        paragraphs = []
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            qas = []
            for qa in paragraph["qas"]:
                answers = [
                    {
                        "text": a["text"].replace("\\n", "\n"),
                        "answer_start": a["answer_start"] - context.count("\\n", 0, a["answer_start"]),
                    }
                    for a in qa["answers"]
                ]
                qas.append({**qa, "answers": answers})
            paragraphs.append({"context": context.replace("\\n", "\n"), "qas": qas})
        out.append({**article, "paragraphs": paragraphs})
    return out


@dataclass
class Corpus:
    """Train and dev articles per language ("en", "ko")."""

    train: dict[str, list[dict]] = field(default_factory=dict)
    dev: dict[str, list[dict]] = field(default_factory=dict)


def load_corpus(
    data_dir: str | Path, dev_fraction: float = 0.1, languages: Sequence[str] = ("en", "ko"), *, tydi_ko: bool = False
) -> Corpus:
    """Read the shared QA files and split each by article. With ``tydi_ko``, TyDi QA's Korean training questions
    join the Korean training split (its own articles split the same way, its dev part left out, so the dev files
    stay the ones every checkpoint was measured on)."""
    corpus = Corpus()
    for language in languages:
        articles = read_squad(Path(data_dir) / DATA_FILES[language])
        if language == "ko":
            articles = unescape_newlines(articles)
        corpus.train[language], corpus.dev[language] = split_by_article(articles, dev_fraction)
    if tydi_ko and "ko" in languages:
        tydi, _ = split_by_article(unescape_newlines(read_squad(Path(data_dir) / TYDI_KOREAN_FILE)), dev_fraction)
        corpus.train["ko"] = corpus.train["ko"] + tydi
    return corpus


def count_questions(articles: Iterable[dict]) -> int:
    return sum(len(p["qas"]) for a in articles for p in a["paragraphs"])


def take_questions(articles: list[dict], limit: int | None, seed: int = 0) -> list[dict]:
    """At most ``limit`` questions, drawn at random, kept in their articles and paragraphs."""
    if limit is None or count_questions(articles) <= limit:
        return articles
    keys = [
        (i, j, k) for i, a in enumerate(articles) for j, p in enumerate(a["paragraphs"]) for k in range(len(p["qas"]))
    ]
    chosen = set(random.Random(seed).sample(keys, limit))
    out = []
    for i, article in enumerate(articles):
        paragraphs = []
        for j, paragraph in enumerate(article["paragraphs"]):
            qas = [qa for k, qa in enumerate(paragraph["qas"]) if (i, j, k) in chosen]
            if qas:
                paragraphs.append({**paragraph, "qas": qas})
        if paragraphs:
            out.append({**article, "paragraphs": paragraphs})
    return out


def keep_questions(articles: list[dict], ids: set[str]) -> list[dict]:
    """Only the questions whose id is in ``ids`` (contexts without any are dropped)."""
    out = []
    for article in articles:
        paragraphs = [{**p, "qas": [qa for qa in p["qas"] if qa["id"] in ids]} for p in article["paragraphs"]]
        paragraphs = [p for p in paragraphs if p["qas"]]
        if paragraphs:
            out.append({**article, "paragraphs": paragraphs})
    return out


# --------------------------------------------------------------------------- long documents
def _shifted_qas(qas: list[dict], offset: int) -> list[dict]:
    return [{**qa, "answers": [{**a, "answer_start": a["answer_start"] + offset} for a in qa["answers"]]} for qa in qas]


def join_sections(sections: Sequence[tuple[str, list[dict]]], html: bool, title: str) -> dict:
    """One SQuAD article whose only paragraph is ``sections`` (title, paragraphs) joined in order."""
    texts, owners = [], []
    for section_title, paragraphs in sections:
        if html and len(sections) > 1:
            texts.append(("<h2>", section_title))
            owners.append(None)
        for paragraph in paragraphs:
            texts.append(("p", paragraph["context"]))
            owners.append(paragraph)
    pieces, length, qas = [], 0, []
    if html:
        pieces.append(f"<h1> {title} ")
        length = len(pieces[0])
    for index, ((kind, text), owner) in enumerate(zip(texts, owners)):
        if kind == "<h2>":
            sep = "<h2> "
        else:
            sep = "<p> " if html else ("" if index == 0 else "\n\n")
        pieces.append(sep)
        length += len(sep)
        if owner is not None:
            qas += _shifted_qas(owner["qas"], length)
        pieces.append(text)
        length += len(text)
        if html:
            pieces.append(" ")
            length += 1
    return {"title": title, "paragraphs": [{"context": "".join(pieces).rstrip(" "), "qas": qas}]}


def article_documents(articles: list[dict], html: bool = False) -> list[dict]:
    """Each article's paragraphs joined into one long context (real questions, real long context)."""
    return [join_sections([(a["title"], a["paragraphs"])], html, a["title"]) for a in articles]


def multi_passage_documents(
    articles: list[dict], passages_per_document: int, html: bool = False, seed: int = 0
) -> list[dict]:
    """Long documents from short articles: groups of ``passages_per_document`` articles, in random order.

    The Korean file has mostly one passage per article, so its long contexts put a question's passage
    among other Wikipedia passages, each under its own heading (a multi-topic page).
    """
    order = list(range(len(articles)))
    random.Random(seed).shuffle(order)
    documents = []
    for start in range(0, len(order), passages_per_document):
        group = [articles[i] for i in order[start : start + passages_per_document]]
        sections = [(a["title"], a["paragraphs"]) for a in group]
        documents.append(join_sections(sections, html, " / ".join(a["title"] for a in group[:3])))
    return documents


KOREAN_PAGES_FILE = "text/kowiki-sample.jsonl.gz"
LONG_MIN_TOKENS, LONG_MAX_TOKENS = 32_768, 160_000  # a long document's target range; one more section may follow
_LONG_SECTION_CHARACTERS = 60_000  # longer filler pages are skipped, so no document overshoots far


def read_korean_pages(path: str | Path) -> list[dict]:
    """The Korean Wikipedia sample as SQuAD articles without questions (``title``, one paragraph each)."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        pages = [json.loads(line) for line in handle]
    return [
        {"title": p["title"], "paragraphs": [{"context": p["text"].strip(), "qas": []}]}
        for p in pages
        if p["text"].strip()
    ]


def long_documents(
    articles: list[dict],
    filler: list[dict],
    tokenizer,
    *,
    n_questions: int,
    seed: int = 0,
    min_tokens: int = LONG_MIN_TOKENS,
    max_tokens: int = LONG_MAX_TOKENS,
) -> list[dict]:
    """Documents of ``min_tokens``..``max_tokens`` tokens (log-uniform targets), one question each.

    Each holds one dev question's whole article at a random place among whole other articles, drawn
    from ``articles`` (the same dev split, their questions dropped) and ``filler`` (pages without
    questions, e.g. :func:`read_korean_pages`): what "ask a long page" looks like, with the answer
    in one of its parts. A document ends with the section that takes it past its target.
    """
    rng = random.Random(seed)
    keys = [
        (i, j, k) for i, a in enumerate(articles) for j, p in enumerate(a["paragraphs"]) for k in range(len(p["qas"]))
    ]
    pool = [a for a in articles + filler if sum(len(p["context"]) for p in a["paragraphs"]) <= _LONG_SECTION_CHARACTERS]
    sizes: dict[int, int] = {}

    def tokens(index: int) -> int:
        if index not in sizes:
            text = "\n\n".join(p["context"] for p in pool[index]["paragraphs"])
            sizes[index] = len(tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])
        return sizes[index]

    documents = []
    for i, j, k in rng.sample(keys, min(n_questions, len(keys))):
        owner = articles[i]
        qa = owner["paragraphs"][j]["qas"][k]
        target = math.exp(rng.uniform(math.log(min_tokens), math.log(max_tokens)))
        own = [{**p, "qas": [qa] if n == j else []} for n, p in enumerate(owner["paragraphs"])]
        total = sum(len(tokenizer(p["context"], add_special_tokens=False, verbose=False)["input_ids"]) for p in own)
        others = []
        for index in rng.sample(range(len(pool)), len(pool)):
            if total >= target:
                break
            if pool[index]["title"] == owner["title"]:
                continue
            others.append((pool[index]["title"], [{**p, "qas": []} for p in pool[index]["paragraphs"]]))
            total += tokens(index)
        others.insert(rng.randrange(len(others) + 1), (owner["title"], own))
        documents.append(join_sections(others, html=False, title=f"{owner['title']} among {len(others) - 1} pages"))
    return documents


# --------------------------------------------------------------------------- sentence ends (Padding Insertion)
def sentence_ends(text: str, language: str) -> list[int]:
    """Character offsets where sentences end: kiwipiepy for Korean, punctuation for English."""
    if language == "ko":
        from ..answer_text import get_kiwi  # Kiwi loads a model: only Korean sentence ends need it

        return [sentence.end for sentence in get_kiwi().split_into_sents(text)]
    return [match.end() for match in _ENGLISH_SENTENCE_END.finditer(text)]


# --------------------------------------------------------------------------- features
@dataclass
class Feature:
    """One model input window: ``[CLS] [QUESTION] question [SEP] document window``.

    ``start``/``end`` index the gold span in ``input_ids`` (0 = [CLS] = no answer in this window);
    ``sentence_ends`` are the indices of tokens that end a sentence (where Padding Insertion may shift).
    """

    input_ids: list[int]
    start: int
    end: int
    sentence_ends: list[int]
    language: str
    soft: bool = False  # learn the starting model's distributions here, not the gold span (AnchoredQAObjective)


def answer_token_span(offsets: Sequence[tuple[int, int]], start_char: int, end_char: int) -> tuple[int, int] | None:
    """First and last document token overlapping [start_char, end_char), or None."""
    ends = [end for _, end in offsets]
    first = bisect.bisect_right(ends, start_char)
    last = first
    while last + 1 < len(offsets) and offsets[last + 1][0] < end_char:
        last += 1
    if first >= len(offsets) or offsets[first][0] >= end_char:
        return None
    return first, last


def encode_articles(
    articles: list[dict],
    tokenizer,
    *,
    language: str,
    max_length: int,
    stride: int,
    unanswerable_rate: float = 0.0,
    answer_windows_per_question: int | None = None,
    with_sentence_ends: bool = False,
    seed: int = 0,
    article_of: list[dict] | None = None,
) -> list[Feature]:
    """Training features of every question in ``articles`` (first gold answer).

    Windows holding the whole answer are kept (at most ``answer_windows_per_question`` of them,
    drawn at random); windows without it are kept with probability ``unanswerable_rate``. A question with
    no answer (:func:`unanswerable_questions`, :func:`near_miss_questions`) keeps every window, each
    labelled "no answer here". A list given as ``article_of`` receives each feature's article, in order.
    """
    ids = special_ids(tokenizer)
    rng = random.Random(seed)
    features = []
    for article in articles:
        before = len(features)
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            encoding = tokenizer(context, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
            doc_ids, offsets = encoding["input_ids"], encoding["offset_mapping"]
            if not doc_ids:
                continue
            ends_tokens = []
            if with_sentence_ends:
                token_ends = [end for _, end in offsets]
                ends_tokens = sorted(
                    {min(len(doc_ids) - 1, bisect.bisect_left(token_ends, c)) for c in sentence_ends(context, language)}
                )
            questions = tokenize_questions([qa["question"] for qa in paragraph["qas"]], tokenizer)
            for qa, question_ids in zip(paragraph["qas"], questions):
                if not qa["answers"]:  # a question asked of a context without its answer: every window says so
                    prefix = question_prefix(question_ids, ids, max_length)
                    capacity = window_capacity(len(doc_ids), len(prefix), max_length)
                    for start in window_starts(len(doc_ids), capacity, stride):
                        features.append(
                            Feature(
                                input_ids=window_input_ids(prefix, doc_ids, start, capacity),
                                start=0,
                                end=0,
                                sentence_ends=[
                                    t + len(prefix) - start for t in ends_tokens if start <= t < start + capacity
                                ],
                                language=language,
                            )
                        )
                    continue
                answer = qa["answers"][0]
                span = answer_token_span(offsets, answer["answer_start"], answer["answer_start"] + len(answer["text"]))
                if span is None:
                    continue
                prefix = question_prefix(question_ids, ids, max_length)
                capacity = window_capacity(len(doc_ids), len(prefix), max_length)
                with_answer, without = [], []
                for start in window_starts(len(doc_ids), capacity, stride):
                    inside = start <= span[0] and span[1] < start + capacity
                    (with_answer if inside else without).append(start)
                if answer_windows_per_question is not None and len(with_answer) > answer_windows_per_question:
                    with_answer = rng.sample(with_answer, answer_windows_per_question)
                chosen = [(s, True) for s in with_answer] + [
                    (s, False) for s in without if rng.random() < unanswerable_rate
                ]
                for start, inside in chosen:
                    input_ids = window_input_ids(prefix, doc_ids, start, capacity)
                    shift = len(prefix) - start
                    features.append(
                        Feature(
                            input_ids=input_ids,
                            start=span[0] + shift if inside else 0,
                            end=span[1] + shift if inside else 0,
                            sentence_ends=[
                                t + shift for t in ends_tokens if start <= t < start + len(input_ids) - len(prefix)
                            ],
                            language=language,
                        )
                    )
        if article_of is not None:
            article_of.extend([article] * (len(features) - before))
    return features


# --------------------------------------------------------------------------- dev files
def unanswerable_questions(articles: list[dict]) -> list[dict]:
    """Each question of ``articles`` asked of the paragraph of the next question from ANOTHER article (in
    file order, wrapping around): SQuAD 2.0-style ``is_impossible`` questions with no answers.

    Real questions against real paragraphs of the same kind, so the reader's "No answer found" rate on
    them measures the other half of its no-answer decision (how often it says so on dev questions that
    have an answer is reported by the evaluation next to F1). Empty when all questions share one article.
    """
    rows = [(a["title"], p["context"], qa) for a in articles for p in a["paragraphs"] for qa in p["qas"]]
    out = []
    for i, (title, _, qa) in enumerate(rows):
        following = (rows[(i + k) % len(rows)] for k in range(1, len(rows)))
        other = next((row for row in following if row[0] != title), None)
        if other is None:
            return []
        impossible = {
            "id": f"{qa['id']}-unanswerable",
            "question": qa["question"],
            "answers": [],
            "is_impossible": True,
        }
        out.append({"title": f"{title} / {other[0]}", "paragraphs": [{"context": other[1], "qas": [impossible]}]})
    return out


def _terms(text: str) -> set[str]:
    """Lowercased words, with words holding Hangul cut into syllable bigrams so that a Korean stem
    matches under its particles (서울은 / 서울의 share 서울): a word-overlap measure without a tokenizer."""
    terms = set()
    for word in re.findall(r"\w+", text.lower()):
        if re.search("[\uac00-\ud7a3]", word) and len(word) > 2:
            terms.update(word[i : i + 2] for i in range(len(word) - 1))
        else:
            terms.add(word)
    return terms


def near_miss_questions(questions: list[dict], pool: list[dict]) -> list[dict]:
    """Each question of ``questions`` asked of the paragraph of ``pool`` that shares the most of its
    words (:func:`_terms`), among those that are not its own paragraph and contain none of its answers.

    The harder half of the no-answer decision: a paragraph on the question's subject, often from its
    own article, that does not hold the answer (which :func:`unanswerable_questions`' paragraphs of
    another article seldom resemble). Shared words are weighted by their inverse paragraph frequency
    in ``pool``, so names count and "the" does not. A question whose every
    candidate contains an answer is left out.
    """
    paragraphs = [
        (a["title"], p["context"], _terms(p["context"]), p["context"].lower()) for a in pool for p in a["paragraphs"]
    ]
    frequency = Counter(g for _, _, grams, _ in paragraphs for g in grams)
    weight = {g: math.log(len(paragraphs) / n) for g, n in frequency.items()}
    out = []
    for article in questions:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                words = _terms(qa["question"])
                answers = [a["text"].lower() for a in qa["answers"] if a["text"].strip()]
                best, best_score = None, -1.0
                for title, context, grams, lowered in paragraphs:
                    # fsum: exact, so the same in any order of the set (which the hash seed sets)
                    score = math.fsum(weight[g] for g in words & grams)
                    if (
                        score > best_score
                        and context != paragraph["context"]
                        and not any(a in lowered for a in answers)
                    ):
                        best, best_score = (title, context), score
                if best is None:
                    continue
                impossible = {
                    "id": f"{qa['id']}-near-miss",
                    "question": qa["question"],
                    "answers": [],
                    "is_impossible": True,
                }
                out.append(
                    {
                        "title": f"{article['title']} / {best[0]}",
                        "paragraphs": [{"context": best[1], "qas": [impossible]}],
                    }
                )
    return out
