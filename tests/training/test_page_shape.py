"""Page-shaped documents: answers at their offsets, the cleaner's own texts, hard negatives, the held-out dev file."""

import importlib.util
import random
import re
import sys
from pathlib import Path

import pytest

from littlebird.documents.clean import clean_document
from littlebird.documents.decode import RawDocument
from littlebird.training.data import article_documents, encode_articles, load_corpus, read_squad
from littlebird.training.dev_files import write_dev_files
from littlebird.training.options import long_documents
from littlebird.training.page_shape import Cell, page_shaped_documents, render_page, sentences, tokenize_punctuation
from tests.support.qa import model_answerable_at, qa_tokenizer
from tests.support.training import english_article, korean_article, write_toy_data

SEEDS = range(40)


def fact_article(index: int) -> dict:
    """An English article of short fact sentences with commas, copulas, possessives and dates, and prose."""
    name = f"Person{index}"
    facts = (
        f"{name} was born on April {index + 1}, 1965, in Yate.   Her first book, Stone {index}, "
        f"appeared in 1997.\nIn 2004, {name}'s series had sold (by one count) 300 million copies. "
        f"The series is published by Bloomsbury. {name} didn't stop writing."
    )
    prose = (
        f"Beyond her books, {name} has written for the stage, the screen and the press, and her charity "
        f"work, which began in 2000, helps children in poor countries; she lives in Edinburgh today."
    )
    qas = [
        ("When was {n} born?", f"April {index + 1}, 1965"),
        ("What was her first book?", f"Stone {index}"),
        ("Who publishes the series?", "Bloomsbury"),
        ("How many copies?", "300 million"),
        ("Whose series?", f"{name}'s series"),
        ("Where does she live?", "Edinburgh"),
    ]
    paragraphs = []
    for j, context in enumerate((facts, prose)):
        rows = [
            {
                "id": f"fact-{index}-{j}-{k}",
                "question": q.format(n=name),
                "answers": [{"text": a, "answer_start": context.index(a)}],
            }
            for k, (q, a) in enumerate(qas)
            if a in context
        ]
        paragraphs.append({"context": context, "qas": rows})
    return {"title": f"Fact_{name}", "paragraphs": paragraphs}


def korean_fact_article(index: int) -> dict:
    article = korean_article(index)
    context = article["paragraphs"][0]["context"].replace("\\n", "\n")
    extra = f" 이 나라는 산이 많다. 인구는 {index + 3}백만 명이다, 대부분 도시에 산다."
    context += extra
    qas = [
        {**qa, "answers": [{"text": a["text"], "answer_start": context.index(a["text"])} for a in qa["answers"]]}
        for qa in article["paragraphs"][0]["qas"]
    ]
    qas.append(
        {
            "id": f"ko-extra-{index}",
            "question": "인구는?",
            "answers": [{"text": f"{index + 3}백만 명", "answer_start": context.index(f"{index + 3}백만 명")}],
        }
    )
    return {"title": article["title"], "paragraphs": [{"context": context, "qas": qas}]}


ENGLISH = [fact_article(i) for i in range(4)] + [english_article(i) for i in range(4)]
KOREAN = [korean_fact_article(i) for i in range(8)]


def source_answers(articles):
    return {qa["id"]: qa["answers"][0]["text"] for a in articles for p in a["paragraphs"] for qa in p["qas"]}


def assert_answers_at_offsets(documents, originals):
    """Every answer's text is at its offsets, and holds the source answer's characters (spacing aside)."""
    expected = source_answers(originals)
    seen = 0
    for document in documents:
        for paragraph in document["paragraphs"]:
            for qa in paragraph["qas"]:
                [answer] = qa["answers"]
                start = answer["answer_start"]
                assert paragraph["context"][start : start + len(answer["text"])] == answer["text"]
                assert "".join(answer["text"].split()) == "".join(expected[qa["id"]].split())
                seen += 1
    return seen


@pytest.mark.parametrize("seed", SEEDS)
def test_every_answer_is_at_its_offsets_in_every_page(seed):
    english = page_shaped_documents(ENGLISH, "en", distractors=ENGLISH, seed=seed, tokenized_share=0.0)
    korean = page_shaped_documents(
        KOREAN, "ko", distractors=KOREAN, passages_per_document=3, seed=seed, tokenized_share=0.0
    )
    assert assert_answers_at_offsets(english, ENGLISH) == len(source_answers(ENGLISH))
    assert assert_answers_at_offsets(korean, KOREAN) == len(source_answers(KOREAN))


def test_pages_take_every_shape_across_seeds():
    contexts = [
        d["paragraphs"][0]["context"]
        for seed in SEEDS
        for d in page_shaped_documents(ENGLISH, "en", distractors=ENGLISH, seed=seed)
    ]
    joined = "\n".join(contexts)
    for mark in ("<ul> <li>", "<h2>", " | ", "\n• ", " › ", "Categories:", " 's ", " , "):
        assert mark in joined, mark
    assert re.search(r"<p> [^<:]+: (?:is|was|has) [^<]*\.", joined), (
        "a table row as the model reads it: <p> Key: Value."
    )
    assert any(c.startswith("<h1> ") for c in contexts) and any(not c.startswith("<") for c in contexts)


def test_tokenized_punctuation_keeps_answers_and_their_words():
    text = "Rowling's book (1997), out April 25, 2018, sold 300,000."
    cell = Cell(text, [(0, text.index("April"), text.index(", sold"))])
    tokenized = tokenize_punctuation(cell)
    assert tokenized.text == "Rowling 's book ( 1997 ) , out April 25 , 2018 , sold 300,000 ."
    [(_, start, end)] = tokenized.answers
    assert tokenized.text[start:end] == "April 25 , 2018"


def test_sentences_are_never_cut_inside_an_answer():
    text = "It was sold. Then it was gone. Far away."
    answer = (0, text.index("sold"), text.index(" was gone"))
    first, second = sentences(Cell(text, [answer]))
    assert first.text == "It was sold. Then it was gone." and first.answers == [answer]
    assert second.text == "Far away." and second.answers == []


def rendered_pages(seed, language):
    rng = random.Random(seed)
    if language == "en":
        groups = [([(None, a["paragraphs"])], a["title"]) for a in ENGLISH]
        pool = ENGLISH
    else:
        groups = [([(a["title"], a["paragraphs"]) for a in KOREAN[i : i + 3]], KOREAN[i]["title"]) for i in (0, 3)]
        pool = KOREAN
    return [
        render_page(sections, title, language=language, distractors=pool, rng=rng, tokenized=rng.random() < 0.3)
        for sections, title in groups
    ]


@pytest.mark.parametrize("language", ["en", "ko"])
@pytest.mark.parametrize("seed", range(6))
def test_the_cleaner_reads_the_page_as_rendered(language, seed):
    """The model text is what clean.py feeds the model from the page's HTML, the shown text what it shows;
    a pasted copy of the shown text is kept as it is."""
    for page in rendered_pages(seed, language):
        document = clean_document(RawDocument(page.html(), True, "page.html", "utf-8"))
        assert document.model_text == page.model_text()[0]
        assert document.text == page.shown_text()[0]
        pasted = clean_document(RawDocument(page.shown_text()[0], False, "page.txt", "utf-8"))
        assert pasted.text == page.shown_text()[0]
        for as_text in (False, True):
            article = page.article(as_text)
            context = article["paragraphs"][0]["context"]
            for qa in article["paragraphs"][0]["qas"]:
                answer = qa["answers"][0]
                assert context[answer["answer_start"] :].startswith(answer["text"])


def test_distractors_come_from_other_articles():
    titles = {a["title"].replace("_", " ") for a in ENGLISH}
    for seed in SEEDS:
        for page in rendered_pages(seed, "en"):
            for block in page.blocks[1:]:
                cells = [cell.text for row in block.rows for cell in row]
                navigation = " › " in cells[0] or cells[0].startswith("Categories:") or set(cells) <= titles
                infobox = block.kind == "table" and cells[0] in titles
                if navigation or infobox:
                    assert page.title not in " ".join(cells)
                    assert not any(cell.answers for row in block.rows for cell in row)


def test_hard_negatives_come_from_other_parts_of_the_same_page():
    tokenizer = qa_tokenizer()
    documents = page_shaped_documents(ENGLISH[:2], "en", distractors=ENGLISH, seed=3, text_share=0.0)
    features = encode_articles(
        documents,
        tokenizer,
        language="en",
        max_length=48,
        stride=16,
        unanswerable_rate=1.0,
        answer_windows_per_question=1,
    )
    negatives = [f for f in features if f.start == 0]
    assert len(negatives) > len([f for f in features if f.start > 0]) > 0
    pages = []
    for document in documents:
        paragraph = document["paragraphs"][0]
        ids = tokenizer(paragraph["context"], add_special_tokens=False)["input_ids"]
        questions = {tuple(tokenizer(qa["question"], add_special_tokens=False)["input_ids"]) for qa in paragraph["qas"]}
        pages.append((ids, questions))
    for feature in negatives:  # each answer-less window is a part of its own question's page
        sep = feature.input_ids.index(tokenizer.sep_token_id)
        question, part = tuple(feature.input_ids[2:sep]), feature.input_ids[sep + 1 :]
        owners = [ids for ids, questions in pages if question in questions]
        assert any(ids[i : i + len(part)] == part for ids in owners for i in range(len(ids) - len(part) + 1))


def test_long_documents_without_page_shapes_are_as_before_and_with_them_page_shaped():
    rng = random.Random(5)  # what the long-context stages drew before page shapes existed
    flags = [rng.random() < 0.5 for _ in ENGLISH]
    before = article_documents([a for a, f in zip(ENGLISH, flags) if f], html=True) + article_documents(
        [a for a, f in zip(ENGLISH, flags) if not f], html=False
    )
    assert long_documents(ENGLISH, "en", html_share=0.5, passages_per_document=3, seed=5) == before
    shaped = long_documents(ENGLISH, "en", html_share=0.5, passages_per_document=3, seed=5, page_shaped_share=1.0)
    assert len(shaped) == len(ENGLISH)
    assert_answers_at_offsets(shaped, ENGLISH)
    plain = {b["paragraphs"][0]["context"] for b in before}
    assert not any(d["paragraphs"][0]["context"] in plain for d in shaped)


def test_page_shaped_dev_file_is_held_out_by_article(tmp_path):
    data = write_toy_data(tmp_path / "data")
    files = write_dev_files(data, tmp_path / "dev", dev_fraction=0.5)
    corpus = load_corpus(data, 0.5)
    for language in ("en", "ko"):
        pages = read_squad(files[f"dev-{language}-page-shaped"])
        paragraph = read_squad(files[f"dev-{language}-paragraph"])
        ids = {qa["id"] for a in paragraph for p in a["paragraphs"] for qa in p["qas"]}
        assert {qa["id"] for a in pages for p in a["paragraphs"] for qa in p["qas"]} == ids
        assert_answers_at_offsets(pages, corpus.dev[language])
        text = " ".join(p["context"] for a in pages for p in a["paragraphs"])
        for article in corpus.train[language]:  # no training article is in a dev page, not even as a distractor
            assert article["title"].replace("_", " ") not in text
            assert all(p["context"][:20] not in text for p in article["paragraphs"])


def _load_study():
    path = Path(__file__).resolve().parents[2] / "experiments" / "answerable-on-pages" / "answerable_on_pages.py"
    spec = importlib.util.spec_from_file_location("answerable_on_pages", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


def test_answerable_share_counts_every_window_of_every_question():
    study = _load_study()
    documents = page_shaped_documents(ENGLISH[:1], "en", distractors=ENGLISH, seed=1)
    sure = study.window_confidence(model_answerable_at(0.95), qa_tokenizer(), documents, max_length=48)
    unsure = study.window_confidence(model_answerable_at(0.5), qa_tokenizer(), documents, max_length=48)
    assert sure.questions == unsure.questions == len(source_answers(ENGLISH[:1]))
    assert sure.wrong_windows > 0 and sure.right_windows > 0
    assert sure.shares()[:2] == (1.0, 1.0) and unsure.shares()[:2] == (0.0, 0.0)
    assert "| wrong > 0.9 |" in study.table([("m", "d.json", sure)], 0.9)
