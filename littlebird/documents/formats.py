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
from littlebird.documents.errors import DocumentError

MAX_TEXT_BYTES = 5_000_000  # an HTML, text or Markdown file or page: its text is all there is
MAX_FILE_BYTES = (
    50_000_000  # a PDF, Word or Hangul file or an image: pictures and fonts make these far larger than their text
)
_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # the container of .hwp, old .doc and password-protected Office files


@dataclass(frozen=True)
class Format:
    """One file format.

    ``name`` is its short name ("pdf"); ``label`` how a sentence names it ("PDF"); ``suffixes`` its file name
    endings, the first the usual one; ``content_types`` the media types a server may give it; ``starts`` the
    first bytes that tell it without a name, with ``holds`` (bytes within the first 64 KB) where a container
    (a ZIP archive) needs them too. ``reader`` names the function that reads its bytes ("module:function",
    imported only when a file of the format arrives); None for the formats that are decoded as text, which
    ``markup`` says is HTML or not. ``max_bytes`` is the largest file of the format that is read. ``refusal`` is
    set for a format that is recognised but not read: the sentence (with ``{source}``) that says why and what to
    do instead; such a format is left out of the lists the help texts give.
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
    refusal: str | None = None

    @property
    def is_text(self) -> bool:
        """True for the formats decoded as text (HTML, text, Markdown)."""
        return self.reader is None and self.refusal is None

    def read(self, data: bytes, *, source: str) -> RawDocument:
        """The file ``data`` as a RawDocument, by the format's reader (not for the text formats). Raises
        DocumentError with the format's refusal for a format that is not read."""
        if self.refusal is not None:
            raise DocumentError(self.refusal.format(source=source))
        if self.reader is None:
            raise ValueError(f"{self.name} is decoded as text; it has no reader")
        module, function = self.reader.split(":")
        read: Callable[..., RawDocument] = getattr(importlib.import_module(module), function)
        return read(data, source=source)

    def recognises(self, data: bytes) -> bool:
        """True when ``data`` starts as a file of this format does."""
        head = data.lstrip()[:8] if self.name == "pdf" else data[:8]
        return any(head.startswith(start) for start in self.starts) and (
            self.holds is None or self.holds in data[:65536]
        )


FORMATS: tuple[Format, ...] = (
    Format(
        "pdf",
        "PDF",
        (".pdf",),
        ("application/pdf", "application/x-pdf"),
        starts=(b"%PDF-",),
        reader="littlebird.documents.pdf:read_pdf",
    ),
    Format(
        "docx",
        "Word (.docx)",
        (".docx",),
        ("application/vnd.openxmlformats-officedocument.wordprocessingml.document",),
        starts=(b"PK\x03\x04",),
        holds=b"word/",
        reader="littlebird.documents.word:read_docx",
    ),
    Format(
        "hwpx",
        "Hangul (.hwpx)",
        (".hwpx",),
        ("application/hwp+zip", "application/vnd.hancom.hwpx"),
        starts=(b"PK\x03\x04",),
        holds=b"application/hwp+zip",
        reader="littlebird.documents.hwpx:read_hwpx",
    ),
    # HWP 5 is a binary format that no permissively licensed library reads well yet (docs/architecture.md).
    Format(
        "hwp",
        "Hangul (.hwp)",
        (".hwp",),
        ("application/x-hwp", "application/haansofthwp", "application/vnd.hancom.hwp"),
        starts=(_OLE,),
        holds=b"HWP Document File",
        refusal="{source} is a Hangul file in the older binary format (.hwp), which this app does not read. "
        "Please open it in Hangul, save it as .hwpx without a password (파일 > 다른 이름으로 저장, "
        "파일 형식 HWPX) and upload that.",
    ),
    # Images of pages, read by OCR (littlebird/documents/image.py).
    Format(
        "png",
        "PNG",
        (".png",),
        ("image/png",),
        starts=(b"\x89PNG\r\n\x1a\n",),
        reader="littlebird.documents.image:read_image",
    ),
    Format(
        "jpeg",
        "JPEG",
        (".jpg", ".jpeg"),
        ("image/jpeg", "image/pjpeg"),
        starts=(b"\xff\xd8\xff",),
        reader="littlebird.documents.image:read_image",
    ),
    Format(
        "tiff",
        "TIFF",
        (".tif", ".tiff"),
        ("image/tiff",),
        starts=(b"II*\x00", b"MM\x00*"),
        reader="littlebird.documents.image:read_image",
    ),
    Format(
        "webp",
        "WebP",
        (".webp",),
        ("image/webp",),
        starts=(b"RIFF",),
        holds=b"WEBP",
        reader="littlebird.documents.image:read_image",
    ),
    Format(
        "html", "HTML", (".html", ".htm"), ("text/html", "application/xhtml+xml"), markup=True, max_bytes=MAX_TEXT_BYTES
    ),
    Format("text", "text", (".txt",), ("text/plain",), max_bytes=MAX_TEXT_BYTES),
    Format("markdown", "Markdown", (".md",), ("text/markdown", "text/x-markdown"), max_bytes=MAX_TEXT_BYTES),
)
TEXT = next(format for format in FORMATS if format.name == "text")
# Media types that say only "a file": the first bytes tell what it is.
UNNAMED_CONTENT_TYPES = (
    "application/octet-stream",
    "binary/octet-stream",
    "application/download",
    "application/force-download",
)


def suffixes() -> tuple[str, ...]:
    """Every file name ending that is read (".pdf", ".docx", ...), in the order of :data:`FORMATS`."""
    return tuple(suffix for format in FORMATS if format.refusal is None for suffix in format.suffixes)


def upload_suffixes() -> tuple[str, ...]:
    """The endings an upload box takes: those read, and those recognised so that their refusal can say what to do."""
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
    """The file format ``data`` starts as (a PDF, a Word file, ...), or None for text and anything unknown. Of two
    containers that start alike (a .docx and a .hwpx are both ZIP archives), the one whose mark comes first: a
    .hwpx's is its first part."""
    found = [format for format in FORMATS if not format.is_text and format.recognises(data)]
    return min(found, key=lambda format: data.find(format.holds) if format.holds else -1, default=None)


def _either(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def suffix_list() -> str:
    """The endings read, as a sentence lists them: ".pdf, .docx, .hwpx, .html, .htm, .txt or .md"."""
    return _either(list(suffixes()))


def label_list() -> str:
    """The formats read, as a sentence names them: "PDF, Word (.docx), Hangul (.hwpx), HTML, text or Markdown"."""
    return _either([format.label for format in FORMATS if format.refusal is None])


def accept_header() -> str:
    """An HTTP Accept header that asks for every format read, HTML first."""
    types = [type_ for format in FORMATS if format.markup for type_ in format.content_types]
    types += [
        f"{type_};q=0.9" for format in FORMATS if format.is_text and not format.markup for type_ in format.content_types
    ]
    types += [
        f"{type_};q=0.8"
        for format in FORMATS
        if not format.is_text and format.refusal is None
        for type_ in format.content_types
    ]
    return ",".join(types)
