"""A long text is tokenized in pieces, on every core, into exactly the tokens and offsets of one call."""

from pathlib import Path

import numpy as np
import pytest
from transformers import AutoTokenizer

from littlebird.documents.clean import clean_document
from littlebird.documents.decode import RawDocument
from littlebird.reader import encode_text, piece_starts, tokenize_in_pieces
from tests.support.encoders import FAMILIES, write_toy_encoder
from tests.support.qa import qa_tokenizer

EXAMPLES = Path(__file__).resolve().parents[2] / "assets" / "examples"
# what a cut must not change: runs of spaces, tabs, no-break spaces, combining marks, digits, Hangul, punctuation
AWKWARD = (
    "The  city\tof Arland\u00a0was founded in 1,204 by e\u0301migre\u0301s.  \n\n수도는 아를란드이다 . "
    "What (is) the river's name?   ¿Qué?  x" + "\u0301" + " 2024-05-01 "
)


def one_call(text, tokenizer):
    encoding = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    return np.asarray(encoding["input_ids"]), np.asarray(encoding["offset_mapping"]).reshape(-1, 2)


def example_model_texts() -> list[str]:
    texts = []
    for page in sorted(EXAMPLES.glob("*.html")):
        texts.append(clean_document(RawDocument(page.read_text(encoding="utf-8"), True, page.name, "utf-8")).model_text)
    return texts


def test_pieces_start_at_single_spaces_between_letters_and_only_in_long_texts():
    text = ("word " * 50 + "a  b ") * 40
    starts = piece_starts(text, 300)
    assert starts[0] == 0 and len(starts) > 5 and starts == sorted(set(starts))
    for start in starts[1:]:
        assert text[start] == " " and text[start - 1].isalnum() and text[start + 1].isalnum()
    assert piece_starts(text, len(text)) == [0]  # a text under two pieces' length goes whole
    assert piece_starts("x" * 10_000, 100) == [0]  # no space: no cut


def test_the_project_tokenizer_gives_one_calls_tokens_on_cleaned_pages_and_awkward_text():
    tokenizer = qa_tokenizer()
    for text in [*example_model_texts(), AWKWARD * 200]:
        ids, offsets = tokenize_in_pieces(text, tokenizer, piece_chars=997)
        want_ids, want_offsets = one_call(text, tokenizer)
        assert len(piece_starts(text, 997)) > 3
        np.testing.assert_array_equal(ids, want_ids)
        np.testing.assert_array_equal(offsets, want_offsets)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_convertible_familys_tokenizer_gives_one_calls_tokens(family, tmp_path):
    tokenizer = AutoTokenizer.from_pretrained(write_toy_encoder(family, tmp_path))
    assert tokenizer.is_fast
    text = (AWKWARD + " the capital of corvia is dunmore. ") * 100
    ids, offsets = tokenize_in_pieces(text, tokenizer, piece_chars=501)
    want_ids, want_offsets = one_call(text, tokenizer)
    np.testing.assert_array_equal(ids, want_ids)
    np.testing.assert_array_equal(offsets, want_offsets)


def test_an_empty_text_has_no_tokens():
    ids, offsets = tokenize_in_pieces("", qa_tokenizer())
    assert ids.shape == (0,) and offsets.shape == (0, 2)


def test_a_cached_tokenization_is_only_given_to_its_own_tokenizer(tmp_path):
    """The cache's key holds id(tokenizer), and Python gives a gone object's id to a new one: a model loaded after
    another (two converted encoders in one process) must not be handed the first vocabulary's ids."""
    from littlebird.reader import tokens

    bert = AutoTokenizer.from_pretrained(write_toy_encoder("bert", tmp_path / "bert"))
    roberta = AutoTokenizer.from_pretrained(write_toy_encoder("roberta", tmp_path / "roberta"))
    text = "arland is a small country. the capital of arland is bexford."
    tokens.forget_encodings()
    from_bert = encode_text(text, bert).input_ids
    own = one_call(text, roberta)[0]
    assert not np.array_equal(from_bert, own)  # the two vocabularies differ on this text
    # What id reuse does: bert's entry found under the key roberta asks with.
    ((key, entry),) = tokens._encoded_cache.items()
    tokens._encoded_cache.clear()
    tokens._encoded_cache[(id(roberta),) + key[1:]] = entry
    np.testing.assert_array_equal(encode_text(text, roberta).input_ids, own)
    assert encode_text(text, roberta) is encode_text(text, roberta)  # its own entry is still reused
