"""Uploaded files and pasted text -> RawDocument."""

import os
from pathlib import Path

from littlebird.app.decode import RawDocument, decode_bytes, looks_like_html
from littlebird.app.errors import DocumentError

ALLOWED_SUFFIXES = (".html", ".htm", ".txt", ".md", ".pdf", ".docx")
_HTML_SUFFIXES = (".html", ".htm")
MAX_FILE_BYTES = 50_000_000  # a PDF or Word file: pictures and fonts make these far larger than their text
_DOCX_SUFFIX = ".docx"


def file_kind(data: bytes, suffix: str) -> str:
    """"pdf", "docx" or "text" (HTML, text or Markdown, decoded by ``decode_bytes``): by the file's extension
    ``suffix`` (".pdf"), or without one by its first bytes."""
    if suffix in (".pdf", _DOCX_SUFFIX):
        return suffix[1:]
    if not suffix and data.lstrip()[:5] == b"%PDF-":
        return "pdf"
    if not suffix and data.startswith(b"PK\x03\x04") and b"word/" in data[:65536]:
        return "docx"
    return "text"


def read_file_bytes(data: bytes, kind: str, *, source: str) -> RawDocument:
    """A PDF (its text layer, :mod:`littlebird.app.pdf`) or Word file (:mod:`littlebird.app.word`) as a
    RawDocument; ``kind`` as :func:`file_kind` gives it."""
    if kind == "pdf":
        from littlebird.app.pdf import read_pdf

        return read_pdf(data, source=source)
    from littlebird.app.word import read_docx

    return read_docx(data, source=source)


def _read_source(path_or_bytes, max_bytes: int) -> tuple[bytes, str | None]:
    """Bytes and file name from a path, bytes, or a file-like object (Gradio passes any of these)."""
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        return bytes(path_or_bytes[: max_bytes + 1]), None
    if isinstance(path_or_bytes, (str, os.PathLike)):
        path = Path(path_or_bytes)
        try:
            with path.open("rb") as handle:
                return handle.read(max_bytes + 1), path.name
        except OSError:
            raise DocumentError(f"The file {path.name!r} could not be read. Please upload it again.") from None
    if hasattr(path_or_bytes, "read"):
        name = getattr(path_or_bytes, "name", None)
        return path_or_bytes.read(max_bytes + 1), (Path(name).name if isinstance(name, str) else None)
    raise TypeError(f"read_upload expects a path, bytes or a file object, not {type(path_or_bytes).__name__}")


def read_upload(path_or_bytes, *, filename: str | None = None, max_bytes: int = 5_000_000,
                max_file_bytes: int = MAX_FILE_BYTES) -> RawDocument:
    """Read an uploaded .html, .htm, .txt, .md, .pdf or .docx file and decode it.

    ``path_or_bytes`` is a path, the file's bytes or an open binary file. ``filename`` (the name
    the user chose) decides the type; without one, the content does. Raises DocumentError for
    other file types, binary or empty files, files over ``max_bytes`` (PDF and Word: ``max_file_bytes``),
    and PDF and Word files that cannot be read (see :func:`littlebird.app.pdf.read_pdf`).
    """
    data, path_name = _read_source(path_or_bytes, max(max_bytes, max_file_bytes))
    name = filename or path_name
    suffix = Path(name).suffix.lower() if name else ""
    if name and suffix not in ALLOWED_SUFFIXES:
        allowed = ", ".join(ALLOWED_SUFFIXES)
        raise DocumentError(f"Files of type {suffix or 'without an extension'} cannot be read. Please upload one of: {allowed}.")
    kind = file_kind(data, suffix)
    limit = max_bytes if kind == "text" else max_file_bytes
    if len(data) > limit:
        raise DocumentError(f"The file is larger than {limit / 1e6:g} MB. Please upload a smaller file or paste the part you need.")
    if kind != "text":
        if not data:
            raise DocumentError("The file is empty. Please upload a file that contains text.")
        return read_file_bytes(data, kind, source=name or "uploaded file")
    text, encoding = decode_bytes(data)
    if not text.strip():
        raise DocumentError("The file is empty. Please upload a file that contains text.")
    is_html = suffix in _HTML_SUFFIXES or (suffix not in (".txt", ".md") and looks_like_html(text))
    return RawDocument(text=text, is_html=is_html, source=name or "uploaded file", encoding=encoding)


def read_pasted_text(text: str) -> RawDocument:
    """Wrap pasted text; pasted HTML (a page's source or a fragment) is detected and treated as HTML."""
    if text is None or not text.strip():
        raise DocumentError("The pasted text is empty. Please paste the document you want to ask about.")
    if "\x00" in text:
        raise DocumentError("The pasted text contains binary data. Please paste readable text or HTML.")
    return RawDocument(text=text, is_html=looks_like_html(text), source="pasted text", encoding="str")
