"""Tidy an answer span: no stray punctuation, no Korean particles (the reader's tidying hook).

Every function here moves the span's ends inward only, so the result is always a substring of
the original text at exact offsets. :func:`tidy_answer_span` is what the app and the evaluation
pass to :func:`littlebird.reader.read`, so the answers users see are the answers that are scored.

Korean: an extractive model trained on eojeol-level text often ends an answer inside the word
that carries it ("서울이다", "세종대왕이"); the answer is the noun phrase, not its grammar. Kiwi's
morpheme tags say where the content ends, with offsets into the answer text itself.
"""

import functools
import unicodedata

from kiwipiepy import Kiwi

from .language import has_hangul

# Morphemes that never end an answer: particles (J*), the copula 이다 (VCP), verbal endings
# (E*), and sentence punctuation (SF . ! ?, SP , : /, SE …).
_TRAILING_TAGS = (
    "JKS",
    "JKC",
    "JKG",
    "JKO",
    "JKB",
    "JKV",
    "JKQ",
    "JX",
    "JC",
    "VCP",
    "EP",
    "EF",
    "EC",
    "ETN",
    "ETM",
    "SF",
    "SP",
    "SE",
)


@functools.lru_cache(maxsize=1)
def get_kiwi() -> Kiwi:
    """The shared Kiwi analyser, created and warmed up once: creating it takes seconds, later calls are quick."""
    kiwi = Kiwi()
    kiwi.tokenize("세종은 조선의 국왕이다.")  # the first analysis loads the model lazily
    return kiwi


def _is_trailing(tag: str) -> bool:
    # Kiwi marks irregular conjugations as e.g. "VCP-I"; only the base tag matters here.
    return tag.split("-", 1)[0] in _TRAILING_TAGS


def korean_content_length(answer: str) -> int:
    """Length of ``answer`` without its trailing particles, copula and endings.

    ``korean_content_length("서울이다") == 2``; an answer that is all grammar, or that Kiwi
    cannot split, keeps its full length.
    """
    if not answer.strip():
        return len(answer)
    tokens = get_kiwi().tokenize(answer)
    content_end = 0
    for token in tokens:
        if not _is_trailing(token.tag):
            content_end = max(content_end, token.start + token.len)
    if content_end == 0:
        return len(answer)
    # Only cut after the last content morpheme, and never inside it (contractions such as
    # "학교예요" put the copula at the content's end with zero length).
    return content_end


_PAIRS = {
    "(": ")",
    "[": "]",
    "{": "}",
    "《": "》",
    "〈": "〉",
    "「": "」",
    "『": "』",
    "“": "”",
    "‘": "’",
    '"': '"',
    "'": "'",
}
_CLOSERS = {closer: opener for opener, closer in _PAIRS.items()}


def _is_punctuation(ch: str) -> bool:
    return unicodedata.category(ch).startswith("P") or ch in "|•·"


def _keeps_abbreviation_dot(span: str) -> bool:
    """'U.S.' and 'e.g.' end in a dot that belongs to them."""
    return len(span) >= 4 and span[-1] == "." and span[-3] == "." and span[-2].isalpha()


def _wrapped(span: str) -> bool:
    """True if the first character opens a bracket or quote that the last character closes."""
    opener, closer = span[0], span[-1]
    if len(span) < 2 or _PAIRS.get(opener) != closer:
        return False
    if opener == closer:
        return opener not in span[1:-1]
    depth = 0
    for ch in span[:-1]:
        depth += (ch == opener) - (ch == closer)
        if depth == 0:
            return False
    return True


def trim_punctuation(text: str, start: int, end: int) -> tuple[int, int]:
    """Move ``start`` and ``end`` past whitespace and punctuation, keeping balanced brackets and quotes."""
    while True:
        before = (start, end)
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if start < end:
            first, last = text[start], text[end - 1]
            span = text[start:end]
            if _wrapped(span):
                start, end = start + 1, end - 1  # a quote or bracket around the whole answer
            elif _is_punctuation(first) and not (first in _PAIRS and _PAIRS[first] in span[1:]):
                start += 1
            elif (
                _is_punctuation(last)
                and not (last in _CLOSERS and _CLOSERS[last] in span[:-1])
                and not _keeps_abbreviation_dot(span)
            ):
                end -= 1
        if (start, end) == before:
            return start, end


def tidy_answer_span(text: str, start: int, end: int) -> tuple[int, int]:
    """The answer span [start, end) of ``text`` without surrounding punctuation and, for Korean,
    without trailing particles and copulas ("세종대왕이" -> "세종대왕"). Never returns an empty
    span for a non-empty one: if trimming would remove everything, the original stays."""
    new_start, new_end = trim_punctuation(text, start, end)
    if new_start < new_end and has_hangul(text[new_start:new_end]):
        new_end = new_start + korean_content_length(text[new_start:new_end])
        new_start, new_end = trim_punctuation(text, new_start, new_end)
    if new_start >= new_end:
        return start, end
    return new_start, new_end
