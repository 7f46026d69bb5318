"""Where a question's document comes from: a web address, an upload or a paste, cleaned once and cached.

Asking a second question about the same text, file or (for ten minutes) web page reuses the cleaned
:class:`~littlebird.documents.clean.Document`, so only the model runs again.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from littlebird.documents import formats
from littlebird.documents.clean import Document, clean_document
from littlebird.documents.errors import DocumentError
from littlebird.documents.fetch import fetch_document
from littlebird.documents.limits import Limits, check_characters
from littlebird.documents.upload import read_pasted_text, read_upload

SOURCES = ("paste", "url", "upload")
_DOCUMENTS_KEPT = 16
_URL_SECONDS = 600.0  # a fetched page is reused for this long, then fetched again

Report = Callable[[float, str], None]  # report(fraction done, what is happening)


def silent(fraction: float, message: str) -> None:
    """A progress reporter that reports nothing (the default outside Gradio)."""


_documents: "OrderedDict[tuple, tuple[float, Document]]" = OrderedDict()
_documents_lock = threading.Lock()


def read_document(
    source: str,
    *,
    pasted: str = "",
    url: str = "",
    upload: str | None = None,
    allow_local: bool = False,
    report: Report = silent,
    limits: Limits | None = None,
) -> Document:
    """Fetch, read or take the pasted document for ``source`` ("paste", "url" or "upload"), cleaned.

    The cleaned Document is cached, so asking a second question about the same text,
    file or (for ten minutes) URL skips fetching and cleaning; its timings then read 0.
    A document over the character limit of ``limits`` (default: from the environment) is
    refused before it is cleaned. Raises DocumentError with a sentence for the user.
    """
    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
    if source == "url":
        url = (url or "").strip()
        if not url:
            raise DocumentError("Please enter the address of a web page (http:// or https://).")
        key: tuple = ("url", url)
    elif source == "upload":
        if not upload:
            raise DocumentError(f"Please upload a file ({formats.suffix_list()}) first.")
        stat = Path(upload).stat()
        key = ("upload", str(upload), stat.st_size, stat.st_mtime_ns)
    else:
        key = ("paste", hashlib.sha256((pasted or "").encode("utf-8", "surrogatepass")).hexdigest())
    with _documents_lock:
        cached = _documents.get(key)
        if cached and (source != "url" or time.monotonic() - cached[0] < _URL_SECONDS):
            _documents.move_to_end(key)
            return _reused(cached[1])
    report(0.0, "Fetching the page" if source == "url" else "Reading the document")
    if source == "url":
        raw = fetch_document(url, allow_local=allow_local)
    elif source == "upload":
        raw = read_upload(upload)
    else:
        raw = read_pasted_text(pasted)
    check_characters(raw, Limits.from_environment() if limits is None else limits)
    report(0.15, "Cleaning the document")
    document = clean_document(raw)
    with _documents_lock:
        _documents[key] = (time.monotonic(), document)
        while len(_documents) > _DOCUMENTS_KEPT:
            _documents.popitem(last=False)
    return document


def _reused(document: Document) -> Document:
    """A cached document whose fetch and clean took no time this time round."""
    return replace(document, fetch_seconds=0.0, clean_seconds=0.0)
