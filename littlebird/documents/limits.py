"""How much one question may read and for how long: the bounds that keep a shared 2-core Space responsive.

The document is bounded by its size, never by its length in tokens: plain text by
``LITTLEBIRD_MAX_CHARACTERS`` (default :data:`DEFAULT_MAX_CHARACTERS`), checked on the raw text
before any cleaning or tokenizing, so a huge paste is refused at once, and HTML by the upload and
fetch cap (:data:`MAX_HTML_CHARACTERS`). A document of any length within them is answered: the
reader reads the windows whose words best match the question (``littlebird.reader``,
``max_windows``), so a 200K-token page costs about what an 8K one does. ``LITTLEBIRD_QUESTION_SECONDS``
(default :data:`DEFAULT_QUESTION_SECONDS`; "none" for no limit) is the time after which the reader
starts no further window. ``LITTLEBIRD_MAX_TOKENS`` (unset by default) lets a host refuse documents
over that many tokens after all.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from littlebird.documents.decode import RawDocument
from littlebird.documents.errors import DocumentError

# A million characters is about 250K English or 400K Korean tokens: tokenized and ranked in a few
# seconds on 2 cores, held in a few hundred MB (benchmarks/load_test.py measures the peak).
DEFAULT_MAX_CHARACTERS = 1_000_000
# The reader reads at most a few windows (seconds on 2 cores: docs/performance.md); the budget only bites when
# many questions share the cores at once, and then the best-ranked windows have been read first.
DEFAULT_QUESTION_SECONDS = 20.0
# Markup is most of a web page's source; HTML gets the upload and fetch cap instead (5 MB),
# and its cleaned text is read however long it is.
MAX_HTML_CHARACTERS = 5_000_000


@dataclass(frozen=True)
class Limits:
    """The bounds of one question: characters of plain text, the reader's time budget in seconds (None:
    none), and an optional wall in document tokens (None: any length is read)."""

    max_characters: int = DEFAULT_MAX_CHARACTERS
    question_seconds: float | None = DEFAULT_QUESTION_SECONDS
    max_tokens: int | None = None

    def __post_init__(self):
        if self.max_characters < 1:
            raise ValueError(f"max_characters must be at least 1, got {self.max_characters}")
        if self.question_seconds is not None and self.question_seconds <= 0:
            raise ValueError(f"question_seconds must be positive or None, got {self.question_seconds}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1 or None, got {self.max_tokens}")

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> "Limits":
        """``LITTLEBIRD_MAX_CHARACTERS``, ``LITTLEBIRD_QUESTION_SECONDS`` and ``LITTLEBIRD_MAX_TOKENS`` over the
        defaults."""
        characters = environ.get("LITTLEBIRD_MAX_CHARACTERS", "").strip()
        seconds = environ.get("LITTLEBIRD_QUESTION_SECONDS", "").strip().lower()
        tokens = environ.get("LITTLEBIRD_MAX_TOKENS", "").strip().lower()
        return cls(
            max_characters=int(characters) if characters else DEFAULT_MAX_CHARACTERS,
            question_seconds=None if seconds == "none" else float(seconds) if seconds else DEFAULT_QUESTION_SECONDS,
            max_tokens=int(tokens) if tokens and tokens != "none" else None,
        )


_ADVICE = "Please paste or upload only the part of the document that should hold the answer (a chapter or a section)."


def check_characters(raw: RawDocument, limits: Limits) -> None:
    """Refuse ``raw`` when it has more characters than the limits allow, before it is cleaned.

    Plain text is held to ``limits.max_characters``, HTML to :data:`MAX_HTML_CHARACTERS`.
    Raises DocumentError with a sentence that gives the size, the limit and what to do.
    """
    limit = MAX_HTML_CHARACTERS if raw.is_html else limits.max_characters
    if len(raw.text) > limit:
        raise DocumentError(
            f"The document is {len(raw.text):,} characters long; this app reads at most {limit:,} characters "
            f"of {'HTML' if raw.is_html else 'plain text'} per question. {_ADVICE}"
        )


def check_tokens(n_tokens: int, max_tokens: int) -> None:
    """Refuse a document of ``n_tokens`` tokens over ``max_tokens`` (a host's own wall), before the model reads it."""
    if n_tokens > max_tokens:
        raise DocumentError(
            f"The document is {n_tokens:,} tokens long; this app reads at most {max_tokens:,} tokens per "
            f"question. {_ADVICE}"
        )
