"""Korean answer spans: drop the particles, copulas and endings glued to the last word.

An extractive model trained on eojeol-level text often ends an answer inside the word that
carries it ("서울이다", "세종대왕이"); the answer is the noun phrase, not its grammar.
Kiwi's morpheme tags say where the content ends, with offsets into the answer text itself,
so the trimmed span stays aligned to the original characters.
"""

import functools

from kiwipiepy import Kiwi

# Morphemes that never end an answer: particles (J*), the copula 이다 (VCP), verbal endings
# (E*), and sentence punctuation (SF . ! ?, SP , : /, SE …).
_TRAILING_TAGS = ("JKS", "JKC", "JKG", "JKO", "JKB", "JKV", "JKQ", "JX", "JC", "VCP", "EP", "EF", "EC", "ETN", "ETM",
                  "SF", "SP", "SE")


@functools.lru_cache(maxsize=1)
def get_kiwi() -> Kiwi:
    """The shared Kiwi analyser, created and warmed up once (about 3 s; later calls take ~0.1 ms)."""
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
