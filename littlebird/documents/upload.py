"""Uploaded files and pasted text -> RawDocument, each file by its format (:mod:`littlebird.documents.formats`)."""

import os
from pathlib import Path

from littlebird.documents import formats
from littlebird.documents.decode import RawDocument, decode_bytes, looks_like_html
from littlebird.documents.errors import DocumentError
from littlebird.documents.formats import MAX_FILE_BYTES, MAX_TEXT_BYTES, Format


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


def read_upload(
    path_or_bytes, *, filename: str | None = None, max_bytes: int = MAX_TEXT_BYTES, max_file_bytes: int = MAX_FILE_BYTES
) -> RawDocument:
    """Read an uploaded file of any format in :data:`littlebird.documents.formats.FORMATS`.

    ``path_or_bytes`` is a path, the file's bytes or an open binary file. ``filename`` (the name
    the user chose) decides the format; without one, the first bytes do (text when they name none).
    Raises DocumentError for other file types, binary or empty files, files over ``max_bytes`` (text formats)
    or ``max_file_bytes`` (the others), and files their format's reader cannot read.
    """
    data, path_name = _read_source(path_or_bytes, max(max_bytes, max_file_bytes))
    name = filename or path_name
    suffix = Path(name).suffix.lower() if name else ""
    format = formats.by_suffix(suffix) if name else formats.by_first_bytes(data) or formats.TEXT
    if format is None:
        raise DocumentError(
            f"Files of type {suffix or 'without an extension'} cannot be read. "
            f"Please upload one of: {', '.join(formats.suffixes())}."
        )
    return read_file(
        data,
        format,
        source=name or "uploaded file",
        sniff=not name,
        max_bytes=max_bytes if format.is_text else max_file_bytes,
    )


def read_file(
    data: bytes,
    format: Format,
    *,
    source: str,
    max_bytes: int | None = None,
    declared: str | None = None,
    sniff: bool = False,
) -> RawDocument:
    """``data``, a file of ``format``, as a RawDocument: its reader's, or decoded (``declared``: the charset a
    server gave) for the text formats, as HTML when the format is or, with ``sniff`` (nothing named the
    format), when the text looks like it. Raises DocumentError for an empty file or one over ``max_bytes``
    (default: the format's own limit)."""
    limit = format.max_bytes if max_bytes is None else max_bytes
    if len(data) > limit:
        raise DocumentError(
            f"The file is larger than {limit / 1e6:g} MB. Please upload a smaller file or paste the part you need."
        )
    if not format.is_text:
        if not data:
            raise DocumentError("The file is empty. Please upload a file that contains text.")
        return format.read(data, source=source)
    text, encoding = decode_bytes(data, declared=declared)
    if not text.strip():
        raise DocumentError("The file is empty. Please upload a file that contains text.")
    is_html = format.markup or (sniff and looks_like_html(text))
    return RawDocument(text=text, is_html=is_html, source=source, encoding=encoding)


def read_pasted_text(text: str) -> RawDocument:
    """Wrap pasted text; pasted HTML (a page's source or a fragment) is detected and treated as HTML."""
    if text is None or not text.strip():
        raise DocumentError("The pasted text is empty. Please paste the document you want to ask about.")
    if "\x00" in text:
        raise DocumentError("The pasted text contains binary data. Please paste readable text or HTML.")
    return RawDocument(text=text, is_html=looks_like_html(text), source="pasted text", encoding="str")
