"""Tidy an answer span in the shown text: no stray punctuation, no Korean particles.

Every function here moves the span's ends inward only, so the result is always a substring
of the original text at exact offsets.
"""

import unicodedata

from app.korean import korean_content_length
from app.language import has_hangul

_PAIRS = {"(": ")", "[": "]", "{": "}", "《": "》", "〈": "〉", "「": "」", "『": "』", "“": "”", "‘": "’", "\"": "\"", "'": "'"}
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
            elif _is_punctuation(last) and not (last in _CLOSERS and _CLOSERS[last] in span[:-1]) \
                    and not _keeps_abbreviation_dot(span):
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
