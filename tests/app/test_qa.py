"""answer_question (the reader on a cleaned Document): windows, merging, no-answer threshold, offsets.

A scripted model (it finds a chosen token sequence and puts its logits there) checks that the
answer lands on exactly the right characters; a tiny random LittleBird checks the mechanics.
The reader's own rules (layout, window starts, decoding) are in ``test_reader.py``.
"""

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from littlebird.app.qa import Answer, answer_question
from littlebird.documents.clean import clean_document
from littlebird.documents.upload import read_pasted_text, read_upload
from littlebird.reader import ReadingOptions
from tests.support.qa import encode_document, qa_tokenizer, tiny_model_for_tokenizer

PAGES = Path(__file__).parents[1] / "fixtures" / "pages"


@pytest.fixture(scope="module")
def tokenizer():
    return qa_tokenizer()


@pytest.fixture(scope="module")
def korean():
    return clean_document(read_upload(PAGES / "ko_wiki_sejong.html"))


@pytest.fixture(scope="module")
def english():
    return clean_document(read_upload(PAGES / "en_wiki_baikal.html"))


class ScriptedModel(torch.nn.Module):
    """Stands in for LittleBirdForQuestionAnswering: high logits on ``target`` in the document part.

    Windows seen later get slightly higher start logits (and, with ``answerable_step``, answerable
    logits: what ranks windows once starts are normalised), so a merge must keep the best window's copy.
    """

    def __init__(self, target: list[int], answerable_logit: float = 2.0, answerable_step: float = 0.0):
        super().__init__()
        self.anchor = torch.nn.Parameter(torch.zeros(1))  # gives the model a device
        self.target = target
        self.answerable_logit = answerable_logit
        self.answerable_step = answerable_step
        self.calls = []
        self.inputs = []  # (input_ids, attention_mask) of every call
        self.rows_seen = 0

    def forward(self, input_ids, attention_mask, top_k_starts=5, max_answer_length=30, output_attentions=False):
        B, n = input_ids.shape
        self.calls.append(tuple(input_ids.shape))
        self.inputs.append((input_ids.clone(), attention_mask.clone()))
        start_logits = torch.zeros(B, n)
        end_logits = torch.zeros(B, top_k_starts, max_answer_length)
        found = torch.zeros(B, dtype=torch.bool)
        answerable = self.answerable_logit + self.answerable_step * (
            self.rows_seen + torch.arange(B, dtype=torch.float32)
        )
        for b in range(B):
            row = input_ids[b].tolist()
            for i in range(row.index(2) + 1, n - len(self.target) + 1):  # after [SEP]
                if row[i : i + len(self.target)] == self.target:
                    start_logits[b, i] = 10.0 + 0.1 * self.rows_seen
                    found[b] = True
                    break
            self.rows_seen += 1
        top_logits, top_indices = start_logits.topk(top_k_starts, dim=-1)
        for b in range(B):
            if found[b]:
                end_logits[b, 0, len(self.target) - 1] = 10.0
        ends = top_indices[:, :, None] + torch.arange(max_answer_length)
        end_logits = end_logits.masked_fill(
            (ends >= n) | ~torch.gather(attention_mask.bool(), 1, ends.clamp(max=n - 1).view(B, -1)).view(ends.shape),
            float("-inf"),
        )
        return SimpleNamespace(
            start_logits=start_logits,
            top_start_indices=top_indices,
            top_start_logits=top_logits,
            top_end_logits=end_logits,
            answerable_logits=answerable,
            attentions=("scripted",) if output_attentions else None,
        )


def target_ids(tokenizer, document, phrase: str) -> list[int]:
    """Token ids of ``phrase`` as it is tokenized inside the document's model text."""
    encoded = encode_document(document, tokenizer)
    start = document.text.index(phrase)
    inside = [i for i, (a, b) in enumerate(encoded.spans) if a >= start and b <= start + len(phrase) and a >= 0]
    return encoded.input_ids[inside[0] : inside[-1] + 1].tolist()


def test_input_layout_is_cls_question_sep_document(tokenizer, english):
    model = ScriptedModel([-1])
    answer_question(english, "How deep is it?", model=model, tokenizer=tokenizer)
    question_id = tokenizer.convert_tokens_to_ids("[QUESTION]")
    assert question_id not in (tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.unk_token_id)
    question = tokenizer("How deep is it?", add_special_tokens=False)["input_ids"]
    document = encode_document(english, tokenizer).input_ids.tolist()
    [(input_ids, attention_mask)] = model.inputs  # the whole page fits one window
    assert input_ids.tolist() == [[tokenizer.cls_token_id, question_id, *question, tokenizer.sep_token_id, *document]]
    assert attention_mask.bool().all()


@pytest.mark.parametrize(
    "phrase, expected", [("측우기는", "측우기"), ("1441년에", "1441년"), ("강우량 측정 기구", "강우량 측정 기구")]
)
def test_answer_lands_on_the_exact_characters(tokenizer, korean, phrase, expected):
    model = ScriptedModel(target_ids(tokenizer, korean, phrase))
    result = answer_question(korean, "측우기는 언제 만들어졌나?", model=model, tokenizer=tokenizer)
    best = result.answers[0]
    assert best.text == expected == korean.text[best.start : best.end]
    assert korean.text.index(phrase) == best.start
    assert not result.no_answer


def test_long_document_windows_and_merge(tokenizer, korean):
    phrase = "관련 인물"
    model = ScriptedModel(target_ids(tokenizer, korean, phrase), answerable_step=0.1)
    result = answer_question(
        korean,
        "누가?",
        model=model,
        tokenizer=tokenizer,
        options=ReadingOptions(max_length=160, stride=64, max_windows=None),
    )  # every window, in document order
    n = result.n_tokens
    spans = result.window_token_spans
    assert result.n_windows == len(spans) > 3
    assert spans[0][0] == 0 and spans[-1][1] == n
    assert all(b[0] - a[0] <= 64 for a, b in zip(spans, spans[1:]))  # stride, no gaps
    assert all(end - start == spans[0][1] - spans[0][0] for start, end in spans)
    assert sum(batch for batch, _ in model.calls) == result.n_windows and all(b <= 2 for b, _ in model.calls)
    holding = [
        w for w, (s, e) in enumerate(spans) if korean.text.index(phrase) in range(*_char_range(tokenizer, korean, s, e))
    ]
    assert len(holding) >= 2  # the phrase sits in overlapping windows ...
    assert result.answers[0].text == phrase and result.answers[0].window == holding[-1]  # ... and merges to one answer
    assert [a.text for a in result.answers].count(phrase) == 1


def _char_range(tokenizer, document, start, end):
    spans = encode_document(document, tokenizer).spans[start:end]
    spans = spans[spans[:, 0] >= 0]
    return int(spans[0, 0]), int(spans[-1, 1])


def test_no_answer_threshold(tokenizer, english):
    model = ScriptedModel(target_ids(tokenizer, english, "Kurbat Ivanov"), answerable_logit=0.0)  # p = 0.5
    sure = answer_question(
        english, "Who arrived first?", model=model, tokenizer=tokenizer, options=ReadingOptions(no_answer_threshold=0.4)
    )
    unsure = answer_question(
        english, "Who arrived first?", model=model, tokenizer=tokenizer, options=ReadingOptions(no_answer_threshold=0.6)
    )
    assert sure.answerable_probability == pytest.approx(0.5)
    assert not sure.no_answer and sure.note is None
    assert unsure.no_answer and "may not answer" in unsure.note
    assert unsure.answers[0].text == "Kurbat Ivanov"  # the guesses are kept


def test_empty_question_and_question_without_answer(tokenizer, english):
    model = ScriptedModel([-1])  # never finds its target: every start is on [CLS]/padding logits of 0
    for question in ("", "   ", "?!"):
        result = answer_question(english, question, model=model, tokenizer=tokenizer)
        assert result.no_answer and result.answers == [] and "Please type a question" in result.note
    assert model.calls == []


def test_tiny_littlebird_mechanics(tokenizer, korean):
    model = tiny_model_for_tokenizer()
    result = answer_question(
        korean,
        "측우기는 언제 만들어졌나?",
        model=model,
        tokenizer=tokenizer,
        options=ReadingOptions(max_length=256, stride=128, n_best=4),
    )
    assert set(result.timings) >= {"fetch", "clean", "tokenize", "model", "decode"}
    assert "attention" not in result.timings  # answering never reruns a window for its attention
    assert all(t >= 0 for t in result.timings.values())
    assert 1 <= len(result.answers) <= 4 and result.n_windows > 1
    assert sum(a.probability for a in result.answers) == pytest.approx(1.0)
    assert all(a.probability >= b.probability for a, b in zip(result.answers, result.answers[1:]))
    for answer in result.answers:
        assert (
            isinstance(answer, Answer) and answer.text == korean.text[answer.start : answer.end] and answer.text.strip()
        )
        assert len(tokenizer(answer.text, add_special_tokens=False)["input_ids"]) <= 30 + 2
    # the explorer's view of the best answer's window: the window the reading read, run again with its weights
    from littlebird.app.explorer.window import window_attention

    start = result.window_token_spans[result.answers[0].window][0]
    attention = window_attention(
        "측우기는 언제 만들어졌나?",
        korean.text,
        model=model,
        tokenizer=tokenizer,
        document_start=start,
        model_text=korean.model_text,
        model_to_text=korean.model_to_text,
        max_length=256,
    )
    assert len(attention.attentions) == 2 and attention.document_tokens[0] == start
    assert len(attention.token_spans) == len(attention.tokens) <= 256
    assert attention.tokens[:2] == ["<s>", "[QUESTION]"] and attention.question_length > 3
    for first, end in attention.token_spans[attention.question_length :]:
        assert first == -1 or korean.text[first:end].strip()
    best = result.answers[0]  # the best answer's text lies in the window's tokens
    assert any(s <= best.start < e for s, e in attention.token_spans[attention.question_length :])


def test_single_window_is_one_model_call_and_mixed_language(tokenizer):
    document = clean_document(read_pasted_text("LittleBird는 긴 문서를 읽는다. It reads long documents in one pass.\n"))
    result = answer_question(
        document, "What does LittleBird read?", model=tiny_model_for_tokenizer(), tokenizer=tokenizer
    )
    assert result.n_windows == 1 and result.window_token_spans == [(0, result.n_tokens)]
    assert document.language in ("mixed", "ko")


def test_tokenization_cache_tells_apart_documents_with_equal_model_text(tokenizer):
    first, second = clean_document(read_pasted_text("x y")), clean_document(read_pasted_text("   x   y"))
    assert first.model_text == second.model_text and first.text != second.text
    assert encode_document(first, tokenizer).spans[-1].tolist() == [2, 3]
    assert encode_document(second, tokenizer).spans[-1].tolist() == [7, 8]
