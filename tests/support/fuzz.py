"""Fuzzing the document readers (hypothesis): for every format in littlebird/documents/formats.py, a small real file
of it, and bytes made from it (random bytes, the file cut short, bits flipped, two files spliced). Each must be read
into a Document or refused with a sentence for the user; anything else is a crash. Shared by the quick profile in
``tests/app/test_fuzz_readers.py`` and the long run in ``scripts/fuzz_readers.py``."""

from __future__ import annotations

import functools
import resource
from collections.abc import Callable

from hypothesis import strategies as st

from littlebird.documents import formats
from littlebird.documents.clean import Document, clean_document
from littlebird.documents.errors import DocumentError
from littlebird.documents.upload import read_upload

HTML = (
    "<!DOCTYPE html><html><head><meta charset='utf-8'><title>Harbours</title></head><body><h1>Harbours</h1>"
    "<p>Riverton harbour opened in 1871. 리버턴 항구는 1871년에 열렸다.</p><table><tr><th>Harbour</th><th>Opened"
    "</th></tr><tr><td rowspan=2>Riverton</td><td>1871</td></tr><tr><td colspan=3>1902</td></tr></table>"
    "<ul><li>Fishing</li><li>Ferries</li></ul></body></html>"
)
TEXT = "Harbours\n\nRiverton harbour opened in 1871.\n리버턴 항구는 1871년에 열렸다.\n"
MARKDOWN = (
    "# Harbours\n\nRiverton harbour opened in **1871**.\n\n| Harbour | Opened |\n|---|---|\n| Riverton | 1871 |\n"
)


def _pdf() -> bytes:
    from tests.support.files import table_pdf

    return table_pdf(
        "Harbours",
        "Riverton harbour opened in 1871.",
        [("Harbour", "Opened", "Berths"), ("Riverton", "1871", "14"), ("Saltmarsh", "1902", "9")],
    )


def _docx() -> bytes:
    from tests.support.files import word_file

    return word_file(
        "Harbours",
        [
            ("p", "Riverton harbour opened in 1871."),
            ("page", None),
            ("table", [("Harbour", "Opened"), ("Riverton", "1871")]),
        ],
    )


def _hwpx() -> bytes:
    from tests.support.files import hangul_file

    return hangul_file(
        "항구",
        [
            ("h1", "리버턴 항구"),
            ("p", "리버턴 항구는 1871년에 열렸다."),
            ("page", None),
            ("table", [("항구", "개항"), (("리버턴", 1, 2), "1871"), ("1902",)]),
        ],
    )


def _hwp() -> bytes:  # the start of an HWP 5 file: its OLE container and the stream that names it
    return b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(1016) + b"HWP Document File".ljust(32, b"\0") + bytes(8)


def _picture(format: str) -> Callable[[], bytes]:
    """A small picture of a line of text in ``format`` (Pillow's name), as a phone or a scanner gives one."""

    def make() -> bytes:
        import io

        from PIL import Image, ImageDraw

        picture = Image.new("L", (360, 48), 255)
        ImageDraw.Draw(picture).text((8, 16), "Riverton harbour opened in 1871.", fill=0)
        out = io.BytesIO()
        picture.save(out, format)
        return out.getvalue()

    return make


# A seed file of each format, made on the fly. A format without one fails the quick profile.
SEEDS: dict[str, Callable[[], bytes]] = {
    "html": lambda: HTML.encode("utf-8"),
    "text": lambda: TEXT.encode("utf-8"),
    "markdown": lambda: MARKDOWN.encode("utf-8"),
    "pdf": _pdf,
    "docx": _docx,
    "hwpx": _hwpx,
    "hwp": _hwp,
    "png": _picture("PNG"),
    "jpeg": _picture("JPEG"),
    "tiff": _picture("TIFF"),
    "webp": _picture("WEBP"),
}


@functools.lru_cache(maxsize=None)
def seed(name: str) -> bytes:
    return SEEDS[name]()


def mutated(name: str, max_random: int = 4096) -> st.SearchStrategy[bytes]:
    """Bytes made from format ``name``'s seed file: random bytes, the file cut short, bits flipped, or a piece of
    it spliced with a piece of another format's seed."""
    data = seed(name)

    def flip(flips: list[tuple[int, int]]) -> bytes:
        changed = bytearray(data)
        for position, bit in flips:
            changed[position % len(changed)] ^= 1 << bit
        return bytes(changed)

    def splice(parts: tuple[int, str, int]) -> bytes:
        cut, other, cut_other = parts
        donor = seed(other)
        return data[: cut % (len(data) + 1)] + donor[cut_other % (len(donor) + 1) :]

    return st.one_of(
        st.binary(max_size=max_random),
        st.integers(0, len(data)).map(lambda n: data[:n]),
        st.lists(st.tuples(st.integers(0, len(data) - 1), st.integers(0, 7)), min_size=1, max_size=32).map(flip),
        st.tuples(st.integers(0, len(data)), st.sampled_from(sorted(SEEDS)), st.integers(0, 1 << 20)).map(splice),
    )


def read_or_refuse(data: bytes, suffix: str) -> Document | DocumentError:
    """``data`` uploaded as a file named with ``suffix`` and cleaned: the Document, or the DocumentError that
    refused it, whose message must be a sentence for the user. Anything else raised is a crash."""
    try:
        document = clean_document(read_upload(data, filename=f"fuzzed{suffix}"))
    except DocumentError as error:
        message = str(error)
        assert 20 <= len(message) <= 500 and message.rstrip().endswith((".", "?")) and "Traceback" not in message, (
            message
        )
        return error
    assert isinstance(document.text, str) and len(document.model_to_text) == len(document.model_text)
    return document


def peak_memory_mb() -> float:
    """This process's peak resident memory, in MB (Linux reports kilobytes)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def every_format() -> list[formats.Format]:
    return list(formats.FORMATS)
