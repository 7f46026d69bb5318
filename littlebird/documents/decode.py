"""Bytes of unknown encoding -> text, shared by the URL and the upload paths.

Korean pages in the wild are UTF-8 or CP949 (often labelled EUC-KR, of which CP949 is a
superset), so those two are tried first; charset_normalizer handles the rest.
"""

import codecs
import re
import unicodedata
from dataclasses import dataclass

import charset_normalizer

from littlebird.documents.errors import DocumentError
from littlebird.language import HANGUL

# Signatures of common binary formats people upload by mistake, with a name for the message.
_BINARY_SIGNATURES = {
    b"%PDF": "a PDF file",
    b"PK\x03\x04": "a ZIP archive or an Office document",
    b"\x89PNG": "a PNG image",
    b"GIF8": "a GIF image",
    b"\xff\xd8\xff": "a JPEG image",
    b"\x1f\x8b": "a gzip archive",
    b"\x7fELF": "a program",
    b"\xd0\xcf\x11\xe0": "an old Office document",
    b"Rar!": "a RAR archive",
    b"7z\xbc\xaf": "a 7-Zip archive",
}
_BOMS = [
    (codecs.BOM_UTF32_LE, "utf-32"),  # before UTF-16 LE, whose BOM is its prefix
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
]
# Labels that browsers decode as a wider encoding: EUC-KR pages routinely contain CP949-only
# syllables (e.g. "똠"), and Latin-1 labels mean windows-1252 in practice (WHATWG encoding spec).
_ENCODING_ALIASES = {
    "euc_kr": "cp949",
    "ks_c_5601-1987": "cp949",
    "ksc5601": "cp949",
    "korean": "cp949",
    "x-windows-949": "cp949",
    "windows-949": "cp949",
    "latin_1": "cp1252",
    "ascii": "cp1252",
}
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_:.-]+)""", re.IGNORECASE)
_HTML_START = re.compile(r"^\s*(<!--.*?-->\s*)*<(!doctype\s+html|html|head|body)\b", re.IGNORECASE | re.DOTALL)
_HTML_TAG = re.compile(
    r"</?(p|div|span|table|tr|td|th|h[1-6]|ul|ol|li|br|a|b|i|em|strong|section|article)\b[^<>]*>", re.IGNORECASE
)


@dataclass(frozen=True)
class TextBlock:
    """A heading, paragraph or table of a document that arrives with its layout (a PDF, a scan).


    ``kind`` is the tag token it starts with ("<h1>", "<h2>", "<p>" or "<table>"); ``pieces`` its text in order,
    each with the page (from 1) it is on: a paragraph that a page break cuts has a piece on each page, and every
    piece after the first starts with what separates it from the one before (a space, or nothing). A table has
    ``rows``, each a tuple of its cells' text ("" for an empty cell), and one piece: its rows as lines.
    """

    kind: str
    pieces: tuple[tuple[str, int], ...]
    rows: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True)
class WordBox:
    """A word that OCR read and where it stands on its page: ``left``, ``top``, ``right`` and ``bottom`` in pixels
    of the image OCR read (the scanned page or picture), ``page`` from 1."""

    page: int
    left: int
    top: int
    right: int
    bottom: int
    text: str


@dataclass(frozen=True)
class PageImage:
    """A page that OCR read, kept small for showing an answer on it: ``png`` the page's image in PNG, and ``scale``
    its pixels per pixel of the image OCR read (so a :class:`WordBox` times ``scale`` lies on it)."""

    png: bytes
    scale: float


@dataclass
class RawDocument:
    """A document as received: decoded text, before any cleaning."""

    text: str
    is_html: bool
    source: str  # the final URL, the file name or "pasted text"; shown to the user
    encoding: (
        str  # the encoding the bytes were decoded with ("str" for pasted text, "pdf" for a PDF, "ocr" for a picture)
    )
    fetch_seconds: float = 0.0
    blocks: tuple[TextBlock, ...] | None = None  # a PDF's headings and paragraphs with their pages; ``text`` joins them
    n_pages: int = 0  # a PDF's pages
    title: str | None = None  # a title the file states (a PDF's metadata)
    whole: bool = False  # HTML that is all content, no page furniture (a Word document's): every block is kept
    boxes: tuple[WordBox, ...] = ()  # the words OCR read (a scan's, a picture's), in the order of ``text``
    page_images: tuple[PageImage | None, ...] = ()  # per page, its image where OCR read it (None: a text layer's)


def normalize_encoding_name(label: str | None) -> str | None:
    """Python codec name for an HTTP or <meta> charset label, or None if Python does not know it."""
    if not label:
        return None
    try:
        name = codecs.lookup(label.strip().strip("\"'")).name
    except LookupError:
        return None
    return _ENCODING_ALIASES.get(name, name)


def binary_kind(data: bytes) -> str | None:
    """Describe ``data`` (e.g. "a PDF file") if it is clearly not text, else None."""
    for signature, kind in _BINARY_SIGNATURES.items():
        if data.startswith(signature):
            return kind
    head = data[:8192]
    if b"\x00" in head and not any(data.startswith(bom) for bom, _ in _BOMS):
        return "a binary file"
    return None


def looks_like_html(text: str) -> bool:
    """True if ``text`` is an HTML page or a fragment with a few block tags, not prose or Markdown."""
    if _HTML_START.match(text[:4096]):
        return True
    return len(_HTML_TAG.findall(text[:20000])) >= 2


def _control_char_share(text: str) -> float:
    """Share of control characters other than whitespace: high for binary data that happened to decode."""
    sample = text[:20000]
    if not sample:
        return 0.0
    bad = sum(1 for ch in sample if unicodedata.category(ch) == "Cc" and ch not in "\t\n\r\f\v")
    return bad / len(sample)


def _try_decode(data: bytes, encoding: str | None) -> str | None:
    if encoding is None:
        return None
    try:
        return data.decode(encoding)
    except (UnicodeDecodeError, LookupError):
        return None


def _mostly_hangul(text: str) -> bool:
    """A CP949 decoding of non-Korean bytes yields Hanja and symbols rather than Hangul syllables."""
    non_ascii = [ch for ch in text if ord(ch) > 127]
    if not non_ascii:
        return True
    return sum(1 for ch in non_ascii if HANGUL.match(ch)) / len(non_ascii) >= 0.6


def decode_bytes(data: bytes, *, declared: str | None = None) -> tuple[str, str]:
    """Decode ``data`` to (text, encoding name).

    Order: byte-order mark; strict UTF-8 (valid UTF-8 with non-ASCII bytes is almost never
    anything else); the declared charset (HTTP header) and the page's <meta> charset; CP949 if it
    yields Korean; charset_normalizer's guess. Raises DocumentError for binary data.
    """
    kind = binary_kind(data)
    if kind:
        raise DocumentError(
            f"This looks like {kind}, not a web page or text. Please give an HTML, text or Markdown file."
        )
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            text = _try_decode(data, encoding)
            if text is not None:
                return text.lstrip("\ufeff"), encoding
    text, encoding = _first_decoding(data, declared)
    if _control_char_share(text) > 0.05:
        raise DocumentError(
            "This file contains binary data, not readable text. Please give an HTML, text or Markdown file."
        )
    return text, encoding


def _first_decoding(data: bytes, declared: str | None) -> tuple[str, str]:
    meta = _META_CHARSET.search(data[:8192])
    meta_label = meta.group(1).decode("ascii", "replace") if meta else None
    for encoding in ("utf-8", normalize_encoding_name(declared), normalize_encoding_name(meta_label)):
        text = _try_decode(data, encoding)
        if text is not None:
            return text, encoding
    text = _try_decode(data, "cp949")
    if text is not None and _mostly_hangul(text):
        return text, "cp949"
    best = charset_normalizer.from_bytes(data).best()
    if best is not None:
        return str(best), normalize_encoding_name(best.encoding) or best.encoding
    # Nothing fits cleanly: keep the text readable and mark the broken bytes rather than refuse.
    return data.decode("utf-8", errors="replace"), "utf-8"
