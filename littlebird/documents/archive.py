"""ZIP containers (Word and Hangul files) opened under a bound, so that a zip bomb is refused before any
part of it is inflated."""

from __future__ import annotations

import io
import zipfile
import zlib

from littlebird.documents.errors import DocumentError

MAX_UNZIPPED_BYTES = 200_000_000  # what a file's parts may inflate to, all together
# CPython inflates a deflated part in bounded steps, but a bzip2 or LZMA part in whole chunks whose size the
# archive does not bound; no office program writes them, so a file that uses them is refused.
_BOUNDED_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)
# What a damaged archive raises, from its directory or from a part as it is read.
ARCHIVE_ERRORS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    zlib.error,
    EOFError,
    OSError,
    ValueError,
    NotImplementedError,
)


def open_archive(data: bytes, *, source: str, not_archive: str) -> zipfile.ZipFile:
    """``data`` as a ZIP archive whose parts are read under a bound.

    Raises DocumentError with ``not_archive`` (a sentence) for bytes that are no ZIP archive or a damaged one,
    and with a sentence of its own for an archive whose parts inflate past :data:`MAX_UNZIPPED_BYTES` or that
    packs a part in a way that cannot be inflated under a bound.
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.infolist()
    except ARCHIVE_ERRORS:
        raise DocumentError(not_archive) from None
    unzipped = sum(member.file_size for member in members)
    if unzipped > MAX_UNZIPPED_BYTES:
        raise DocumentError(
            f"{source} unpacks to {unzipped / 1e6:,.0f} MB, more than the {MAX_UNZIPPED_BYTES / 1e6:g} "
            "MB this app reads. Please upload the part you need."
        )
    if any(member.compress_type not in _BOUNDED_METHODS for member in members):
        raise DocumentError(
            f"{source} is packed in a way office programs do not use (bzip2 or LZMA), so it is not "
            "read. Please save it again from the program that made it and upload that."
        )
    return archive
