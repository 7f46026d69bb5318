"""Which language a text is in, from the share of Hangul and Latin letters.

Script counting is enough for the choice the pipeline makes (apply Korean answer trimming
or not) and works on a question of three words, where statistical detectors guess.
"""

import re

HANGUL = re.compile(r"[\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f]")  # syllables, jamo, compatibility jamo
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]")
_LETTER = re.compile(r"[^\W\d_]")

# A Hangul syllable carries about as much as three Latin letters; weighting keeps a Korean
# text with a few English names "ko" and an English text quoting one Korean word "en".
_LATIN_PER_SYLLABLE = 3.0
_KOREAN_SHARE = 0.6  # weighted Hangul share from which a text reads as Korean ...
_ENGLISH_SHARE = 0.25  # ... and up to which it reads as English; between the two, "mixed"
_MIN_KNOWN = 0.5  # below this share of Hangul + Latin letters, the script is one we do not handle
_SAMPLE_CHARS = 200_000  # the ratio of a long document settles long before its end

LANGUAGES = ("ko", "en", "mixed", "unknown")


def script_counts(text: str) -> tuple[int, int, int]:
    """(Hangul letters, Latin letters, all letters) in ``text``."""
    sample = text[:_SAMPLE_CHARS]
    return len(HANGUL.findall(sample)), len(_LATIN.findall(sample)), len(_LETTER.findall(sample))


def detect_language(text: str) -> str:
    """ "ko", "en", "mixed" (both scripts in strength) or "unknown" (no letters, or another script)."""
    hangul, latin, letters = script_counts(text)
    if letters == 0 or (hangul + latin) / letters < _MIN_KNOWN:
        return "unknown"
    korean = hangul * _LATIN_PER_SYLLABLE
    share = korean / (korean + latin)
    if share >= _KOREAN_SHARE:
        return "ko"
    if share <= _ENGLISH_SHARE:
        return "en"
    return "mixed"


def has_hangul(text: str) -> bool:
    """True if ``text`` contains any Hangul: the cue for Korean particle trimming on an answer."""
    return HANGUL.search(text) is not None
