"""How much one question may read and for how long: the bounds that keep a shared 2-core Space responsive.

One setting sizes the document: ``LITTLEBIRD_MAX_TOKENS`` (default :data:`DEFAULT_MAX_TOKENS`).
From it follows a character limit, checked on the raw text before any cleaning or tokenizing,
so a huge paste is refused at once; the exact token count is checked after tokenizing, before
the model runs. ``LITTLEBIRD_QUESTION_SECONDS`` (default :data:`DEFAULT_QUESTION_SECONDS`; "none" for no
limit) is the time after which the reader starts no further window.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from app.decode import RawDocument
from app.errors import DocumentError

# The shipped 12-layer model reads 32K tokens (37 windows of 1K) in about 14 s on 2 CPU cores with bf16
# linear layers (README, "Long documents"), so even with both concurrent questions running, one question
# stays well under a minute.
DEFAULT_MAX_TOKENS = 32768
DEFAULT_QUESTION_SECONDS = 60.0
# Cleaned text runs about 4 characters per token in English and 2-3 in Korean: 8 refuses no
# document within the token limit, yet stops a 2.4 MB paste before the tokenizer sees it.
CHARACTERS_PER_TOKEN = 8
# Markup is most of a web page's source; HTML gets the upload and fetch cap instead (5 MB),
# and its text is counted in tokens after cleaning.
MAX_HTML_CHARACTERS = 5_000_000


@dataclass(frozen=True)
class Limits:
    """The bounds of one question: document tokens and the reader's time budget in seconds (None: none)."""

    max_tokens: int = DEFAULT_MAX_TOKENS
    question_seconds: float | None = DEFAULT_QUESTION_SECONDS

    def __post_init__(self):
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {self.max_tokens}")
        if self.question_seconds is not None and self.question_seconds <= 0:
            raise ValueError(f"question_seconds must be positive or None, got {self.question_seconds}")

    @property
    def max_characters(self) -> int:
        """The most characters of plain text read before tokenizing."""
        return self.max_tokens * CHARACTERS_PER_TOKEN

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> "Limits":
        """``LITTLEBIRD_MAX_TOKENS`` and ``LITTLEBIRD_QUESTION_SECONDS`` over the defaults."""
        tokens = environ.get("LITTLEBIRD_MAX_TOKENS", "").strip()
        seconds = environ.get("LITTLEBIRD_QUESTION_SECONDS", "").strip().lower()
        return cls(
            max_tokens=int(tokens) if tokens else DEFAULT_MAX_TOKENS,
            question_seconds=None if seconds == "none" else float(seconds) if seconds else DEFAULT_QUESTION_SECONDS,
        )


_ADVICE = "Please paste or upload only the part of the document that should hold the answer (a chapter or a section)."


def check_characters(raw: RawDocument, limits: Limits) -> None:
    """Refuse ``raw`` when it has more characters than the limits allow, before it is cleaned.

    Plain text is held to :attr:`Limits.max_characters`, HTML to :data:`MAX_HTML_CHARACTERS`.
    Raises DocumentError with a sentence that gives the size, the limit and what to do.
    """
    limit = MAX_HTML_CHARACTERS if raw.is_html else limits.max_characters
    if len(raw.text) > limit:
        raise DocumentError(
            f"The document is {len(raw.text):,} characters long; this app reads at most {limit:,} characters "
            f"(about {limits.max_tokens:,} tokens) per question. {_ADVICE}"
        )


def check_tokens(n_tokens: int, max_tokens: int) -> None:
    """Refuse a document of ``n_tokens`` tokens over ``max_tokens``, before the model reads it."""
    if n_tokens > max_tokens:
        raise DocumentError(
            f"The document is {n_tokens:,} tokens long; this app reads at most {max_tokens:,} tokens per "
            f"question. {_ADVICE}"
        )
