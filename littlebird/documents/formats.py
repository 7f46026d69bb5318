"""The one list of the file formats LittleBird QA reads: how each is recognised and which module reads it.

A format is recognised by its file name's suffix (an upload, a local file), by the Content-Type a server gives
(a fetched address), or by its first bytes where neither says. Each file format's module turns its bytes into a
:class:`~littlebird.documents.decode.RawDocument`; HTML, text and Markdown are decoded instead
(:func:`~littlebird.documents.decode.decode_bytes`). The help texts, the page's upload box and the refusal
messages take their lists from here, so adding a format is its module and one entry in :data:`FORMATS`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from littlebird.documents.decode import RawDocument

MAX_TEXT_BYTES = 5_000_000  # an HTML, text or Markdown file or page: its text is all there is
MAX_FILE_BYTES = 50_000_000  # a PDF, Word file or image: pictures and fonts make these far larger than their text


@dataclass(frozen=True)
class Format:
    """One file format.

    ``name`` is its short name ("pdf"); ``label`` how a sentence names it ("PDF"); ``suffixes`` its file name
    endings, the first the usual one; ``content_types`` the media types a server may give it; ``starts`` the
    first bytes that tell it without a name, with ``holds`` (bytes within the first 64 KB) where a container
    (a ZIP archive) needs them too. ``reader`` names the function that reads its bytes ("module:function",
    imported only when a file of the format arrives); None for the formats that are decoded as text, which
    ``markup`` says is HTML or not. ``max_bytes`` is the largest file of the format that is read.
    """

    name: str
    label: str
    suffixes: tuple[str, ...]
    content_types: tuple[str, ...] = ()
    starts: tuple[bytes, ...] = ()
    holds: bytes | None = None
    reader: str | None = None
    markup: bool = False
    max_bytes: int = MAX_FILE_BYTES

    @property
    def is_text(self) -> bool:
        """True for the formats decoded as text (HTML, text, Markdown)."""
        return self.reader is None

    def read(self, data: bytes, *, source: str) -> RawDocument:
        """The file ``data`` as a RawDocument, by the format's reader (not for the text formats)."""
        if self.reader is None:
            raise ValueError(f"{self.name} is decoded as text; it has no reader")
        module, function = self.reader.split(":")
        read: Callable[..., RawDocument] = getattr(importlib.import_module(module), function)
        return read(data, source=source)

    def recognises(self, data: bytes) -> bool:
        """True when ``data`` starts as a file of this format does."""
        head = data.lstrip()[:8] if self.name == "pdf" else data[:8]
        return any(head.startswith(start) for start in self.starts) and (self.holds is None
                                                                          or self.holds in data[:65536])


FORMATS: tuple[Format, ...] = (
    Format("pdf", "PDF", (".pdf",), ("application/pdf", "application/x-pdf"), starts=(b"%PDF-",),
           reader="littlebird.documents.pdf:read_pdf"),
    Format("docx", "Word (.docx)", (".docx",),
           ("application/vnd.openxmlformats-officedocument.wordprocessingml.document",),
           starts=(b"PK\x03\x04",), holds=b"word/", reader="littlebird.documents.word:read_docx"),
    # Images of pages, read by OCR (littlebird/documents/image.py).
    Format("png", "PNG", (".png",), ("image/png",), starts=(b"\x89PNG\r\n\x1a\n",),
           reader="littlebird.documents.image:read_image"),
    Format("jpeg", "JPEG", (".jpg", ".jpeg"), ("image/jpeg", "image/pjpeg"), starts=(b"\xff\xd8\xff",),
           reader="littlebird.documents.image:read_image"),
    Format("tiff", "TIFF", (".tif", ".tiff"), ("image/tiff",), starts=(b"II*\x00", b"MM\x00*"),
           reader="littlebird.documents.image:read_image"),
    Format("webp", "WebP", (".webp",), ("image/webp",), starts=(b"RIFF",), holds=b"WEBP",
           reader="littlebird.documents.image:read_image"),
    Format("html", "HTML", (".html", ".htm"), ("text/html", "application/xhtml+xml"), markup=True,
           max_bytes=MAX_TEXT_BYTES),
    Format("text", "text", (".txt",), ("text/plain",), max_bytes=MAX_TEXT_BYTES),
    Format("markdown", "Markdown", (".md",), ("text/markdown", "text/x-markdown"), max_bytes=MAX_TEXT_BYTES),
)
TEXT = next(format for format in FORMATS if format.name == "text")
# Media types that say only "a file": the first bytes tell what it is.
UNNAMED_CONTENT_TYPES = ("application/octet-stream", "binary/octet-stream", "application/download",
                         "application/force-download")


def suffixes() -> tuple[str, ...]:
    """Every file name ending that is read (".pdf", ".docx", ...), in the order of :data:`FORMATS`."""
    return tuple(suffix for format in FORMATS for suffix in format.suffixes)


def by_suffix(suffix: str) -> Format | None:
    """The format of a file name ending (".PDF" or "pdf" alike), or None when none reads it."""
    suffix = suffix.lower() if suffix.startswith(".") else "." + suffix.lower()
    return next((format for format in FORMATS if suffix in format.suffixes), None)


def by_content_type(content_type: str) -> Format | None:
    """The format a server's media type ("application/pdf") names, or None."""
    content_type = content_type.split(";")[0].strip().lower()
    return next((format for format in FORMATS if content_type in format.content_types), None)


def by_first_bytes(data: bytes) -> Format | None:
    """The file format ``data`` starts as (a PDF, a Word file, ...), or None for text and anything unknown."""
    return next((format for format in FORMATS if not format.is_text and format.recognises(data)), None)


def _either(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def suffix_list() -> str:
    """The endings as a sentence lists them: ".pdf, .docx, .html, .htm, .txt or .md"."""
    return _either(list(suffixes()))


def label_list() -> str:
    """The formats as a sentence names them: "PDF, Word (.docx), HTML, text or Markdown"."""
    return _either([format.label for format in FORMATS])


def accept_header() -> str:
    """An HTTP Accept header that asks for every format read, HTML first."""
    types = [type_ for format in FORMATS if format.markup for type_ in format.content_types]
    types += [f"{type_};q=0.9" for format in FORMATS if format.is_text and not format.markup
              for type_ in format.content_types]
    types += [f"{type_};q=0.8" for format in FORMATS if not format.is_text for type_ in format.content_types]
    return ",".join(types)
