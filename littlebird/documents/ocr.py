"""Pictures of text -> paragraphs and the words' places on the page, by Tesseract 5 (Debian's ``tesseract-ocr``
with its Korean data, ``tesseract-ocr-kor``).

Each page is read by one ``tesseract`` child process (:func:`littlebird.documents.child.run_bounded`) that takes
the page in PNG on standard input and writes TSV: every word with its box and its block, paragraph and line
numbers. A child is bounded in time and memory, and a crash in it refuses a file instead of ending the server.
``benchmarks/bench_ocr.py`` measured it against pytesseract (the same speed) and tesserocr (a quarter faster, from
loading the model once and the newer Tesseract its wheel bundles, but inside the server, unbounded, and one more
dependency that still needs the system's language data): docs/performance.md, "Scans (OCR)". The same
measurement chose the settings: the languages ``kor+eng`` and layout mode 6, one block of text (Tesseract's
automatic layout, mode 3, loses most of a Korean page), and a page mostly in Hangul read again in Korean alone.

:func:`read_pictures` reads the pages of a scan or a picture within one time budget, a few pages at a time,
and gives each page's paragraphs (TextBlocks that carry the page's number), its words' boxes and a small image
of the page for showing answers on it (:mod:`littlebird.documents.page_image`). Pillow is imported only when a
picture is read.
"""

from __future__ import annotations

import functools
import io
import math
import os
import re
import shutil
import statistics
import subprocess
import time
from collections import deque
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from littlebird.documents.child import run_bounded
from littlebird.documents.decode import PageImage, TextBlock, WordBox
from littlebird.documents.errors import DocumentError

if TYPE_CHECKING:
    from PIL import Image

TESSERACT_VARIABLE = "LITTLEBIRD_TESSERACT"  # the tesseract program to run, where it is not on PATH
LANGUAGES = "kor+eng"
LAYOUT = 6  # Tesseract's page segmentation mode: one uniform block of text
MAX_SCAN_PAGES = 50  # pages read by OCR per document: about a second and a half each on one core
OCR_SECONDS = 180.0  # rendering, decoding and reading every page of one document by OCR
OCR_MEMORY_BYTES = 1_500_000_000  # one tesseract process; a page of 12 million pixels needs a few hundred MB
MAX_OCR_PIXELS = 12_000_000  # an A4 page at 400 dpi; larger pictures are scaled down to this before OCR
PAGE_IMAGE_SIDE = 1600  # the longest side of the page image kept for showing answers
INSTALL_COMMAND = "apt-get install tesseract-ocr tesseract-ocr-kor"
_LANGUAGE_PACKAGES = {"kor": ("Korean", "tesseract-ocr-kor"), "eng": ("English", "tesseract-ocr-eng")}
_HEADING_HEIGHT = 1.25  # a line this many times as tall as the one before starts a paragraph (a heading's)
_HANGUL = re.compile(r"[\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f]")  # syllables and jamo
_LATIN = re.compile(r"[A-Za-z]")
_SPECK = 1 / 250  # of a page's longer side: 14 pixels, about 3 points, on an A4 page at 300 dpi
_PARAGRAPH_PITCH = 1.3  # a line this many usual line distances below the one before starts a paragraph


@dataclass(frozen=True)
class Picture:
    """One page to read: ``image`` (a Pillow image of any mode) is page ``number`` (from 1), scanned or rendered
    at ``dpi`` dots per inch where that is known."""

    number: int
    image: "Image.Image"
    dpi: int | None = None


@dataclass(frozen=True)
class ScannedPage:
    """A page read by OCR: its paragraphs (a heading is a ``<h2>`` block), its words' boxes in the order of the
    paragraphs' text, and its image for showing answers."""

    number: int
    blocks: tuple[TextBlock, ...]
    boxes: tuple[WordBox, ...]
    image: PageImage


@dataclass(frozen=True)
class _Word:
    text: str
    left: int
    top: int
    right: int
    bottom: int
    paragraph: tuple[int, int]  # Tesseract's (block, paragraph) numbers
    line: tuple[int, int, int]  # and its line number


class _OutOfTime(Exception):
    """The time budget ran out while a page was read."""


def tesseract_command(languages: str = LANGUAGES) -> str:
    """The tesseract program to run (``LITTLEBIRD_TESSERACT``, else the one on PATH), once it is known to have
    ``languages``' data. Raises DocumentError saying what to install where it or a language's data is missing."""
    command = os.environ.get(TESSERACT_VARIABLE) or shutil.which("tesseract")
    try:
        installed = _installed_languages(command) if command and shutil.which(command) else None
    except (OSError, subprocess.SubprocessError):
        installed = None
    if installed is None:
        raise DocumentError(
            "Reading scans and images needs Tesseract OCR, which is not installed here. Please "
            f"install it with its Korean data (on Debian or Ubuntu: {INSTALL_COMMAND}), or upload "
            "a PDF with a text layer."
        )
    missing = [language for language in languages.split("+") if language not in installed]
    if missing:
        names = " and ".join(_LANGUAGE_PACKAGES.get(language, (language, ""))[0] for language in missing)
        packages = " ".join(
            _LANGUAGE_PACKAGES.get(language, ("", f"tesseract-ocr-{language}"))[1] for language in missing
        )
        raise DocumentError(
            f"Tesseract OCR is installed here without its {names} data, which reading scans and "
            f"images needs. Please install it (on Debian or Ubuntu: apt-get install {packages})."
        )
    return command


@functools.lru_cache(maxsize=8)
def _installed_languages(command: str) -> frozenset[str]:
    """The languages whose data ``command`` finds (``tesseract --list-langs``); a program that cannot be run
    raises, and is asked again next time."""
    done = subprocess.run([command, "--list-langs"], capture_output=True, timeout=30, check=True)
    # The first line names the data folder; the rest are languages (older versions write them to stderr).
    lines = (done.stdout or done.stderr).decode("utf-8", "replace").splitlines()
    return frozenset(line.strip() for line in lines[1:] if line.strip())


def read_pictures(
    pictures: Iterable[Picture],
    *,
    n_pages: int,
    what: str,
    languages: str = LANGUAGES,
    seconds: float = OCR_SECONDS,
    started: float | None = None,
    workers: int | None = None,
) -> list[ScannedPage]:
    """Read ``pictures`` (``n_pages`` of them, each prepared only when its turn comes) by OCR, ``workers`` pages
    at a time (default: one per core, at most four), and return their pages in order.

    Everything, preparing the pictures included, ends ``seconds`` after ``started`` (a :func:`time.monotonic`
    reading; default now). Raises DocumentError, naming the document as ``what`` ("this PDF's scanned pages"),
    when that time runs out, saying how many pages were read by then, and when Tesseract is missing or fails.
    """
    command = tesseract_command(languages)
    deadline = (time.monotonic() if started is None else started) + seconds
    workers = workers or max(1, min(4, os.cpu_count() or 1))
    read: list[ScannedPage] = []
    pending: deque[tuple[Picture, tuple[int, int], PageImage, Future]] = deque()

    def out_of_time() -> DocumentError:
        return DocumentError(
            f"Reading {what} by OCR took longer than {seconds:g} seconds, the most this app spends "
            f"on it; {len(read)} of {n_pages} page{'s' if n_pages != 1 else ''} had been read by "
            "then. Please upload fewer pages at a time, or a PDF with a text layer."
        )

    def finish_oldest() -> None:
        picture, size, page_image, future = pending.popleft()
        try:
            words = future.result()
        except _OutOfTime:
            raise out_of_time() from None
        read.append(_scanned_page(picture.number, words, size, page_image))

    with ThreadPoolExecutor(workers, thread_name_prefix="ocr") as pool:
        try:
            for picture in pictures:
                if time.monotonic() >= deadline:
                    raise out_of_time()
                size, data, page_image = _prepare(picture.image)
                pending.append(
                    (
                        picture,
                        size,
                        page_image,
                        pool.submit(_recognise, command, data, languages, picture.dpi, deadline),
                    )
                )
                while len(pending) >= workers:
                    finish_oldest()
            while pending:
                finish_oldest()
        finally:
            for *_, future in pending:
                future.cancel()
    return read


def _prepare(image: "Image.Image") -> tuple[tuple[int, int], bytes, PageImage]:
    """The picture as OCR reads it (grey, on white where it was transparent, at most :data:`MAX_OCR_PIXELS`): its
    size, its bytes in PNG at the fastest compression (Tesseract reads a page from PNG about 30% faster than
    from uncompressed PGM, encoding included: ``benchmarks/bench_ocr.py``), and the small page image for showing
    answers."""
    from PIL import Image

    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        image = Image.alpha_composite(Image.new("RGBA", image.size, "white"), image.convert("RGBA"))
    image = image.convert("L")
    if image.width * image.height > MAX_OCR_PIXELS:
        factor = math.sqrt(MAX_OCR_PIXELS / (image.width * image.height))
        image = image.resize(
            (max(1, int(image.width * factor)), max(1, int(image.height * factor))),
            Image.Resampling.LANCZOS,
            reducing_gap=3.0,
        )
    data = io.BytesIO()
    image.save(data, "PNG", compress_level=1)
    small = image.copy()
    small.thumbnail((PAGE_IMAGE_SIDE, PAGE_IMAGE_SIDE), Image.Resampling.LANCZOS)
    png = io.BytesIO()
    small.save(png, "PNG")
    return image.size, data.getvalue(), PageImage(png.getvalue(), small.width / image.width)


def _recognise(command: str, data: bytes, languages: str, dpi: int | None, deadline: float) -> list[_Word]:
    """The words Tesseract reads in the picture ``data``, in its reading order. A page mostly in Hangul, read
    with English beside Korean, is read again in Korean alone, whose words replace the Latin look-alikes the
    English data put in place of some Korean words ("문을" read as "FS")."""
    words = _tesseract(command, data, languages, dpi, deadline)
    if languages.split("+")[0] == "kor" and languages != "kor" and _hangul_share(words) >= 0.5:
        words = _korean_words_kept(words, _tesseract(command, data, "kor", dpi, deadline))
    return words


def _tesseract(command: str, data: bytes, languages: str, dpi: int | None, deadline: float) -> list[_Word]:
    arguments = [command, "stdin", "stdout", "-l", languages, "--psm", str(LAYOUT)]
    if dpi:
        arguments += ["--dpi", str(dpi)]
    try:
        # One thread each: pages are read side by side instead, which is faster than threads within a page.
        done = run_bounded(
            [*arguments, "tsv"],
            data,
            seconds=deadline - time.monotonic(),
            memory_bytes=OCR_MEMORY_BYTES,
            environment={"OMP_THREAD_LIMIT": "1"},
        )
    except subprocess.TimeoutExpired:
        raise _OutOfTime() from None
    if done.returncode != 0:
        if done.returncode < 0 or b"alloc" in done.stderr.lower():
            raise DocumentError(
                f"Reading a page by OCR needed more than {OCR_MEMORY_BYTES / 1e9:g} GB of memory, so "
                "it was not read. Please upload smaller pictures of the pages."
            )
        raise DocumentError(
            "Tesseract OCR could not read a page of this document. Please save the pages again as "
            "PNG or PDF and upload that."
        )
    return parse_tsv(done.stdout.decode("utf-8", "replace"))


def _hangul_share(words: list[_Word]) -> float:
    """The share of Hangul among the letters of ``words``."""
    text = "".join(word.text for word in words)
    hangul = len(_HANGUL.findall(text))
    return hangul / max(1, hangul + len(_LATIN.findall(text)))


def _korean_words_kept(mixed: list[_Word], korean: list[_Word]) -> list[_Word]:
    """``mixed`` (read in Korean and English) with each word that has Latin letters replaced by the Korean
    reading's words whose middles lie in its box, where those are all Hangul; other words stay as they are."""
    kept = []
    for word in mixed:
        if _LATIN.search(word.text):
            inside = [
                other
                for other in korean
                if other.top < word.bottom
                and other.bottom > word.top
                and word.left <= (other.left + other.right) / 2 <= word.right
            ]
            if inside and all(_HANGUL.search(other.text) for other in inside):
                kept += [replace(other, paragraph=word.paragraph, line=word.line) for other in inside]
                continue
        kept.append(word)
    return kept


def parse_tsv(tsv: str) -> list[_Word]:
    """The words of Tesseract's TSV output (level 5 rows with text), with their boxes and their paragraph and
    line; a word Tesseract read with a space inside becomes one word per part, in the same box."""
    words = []
    for row in tsv.splitlines()[1:]:
        fields = row.split("\t", 11)
        if len(fields) < 12 or fields[0] != "5":
            continue
        block, paragraph, line = int(fields[2]), int(fields[3]), int(fields[4])
        left, top, width, height = (int(value) for value in fields[6:10])
        for text in fields[11].split():
            words.append(
                _Word(text, left, top, left + width, top + height, (block, paragraph), (block, paragraph, line))
            )
    return words


def _scanned_page(number: int, words: list[_Word], size: tuple[int, int], image: PageImage) -> ScannedPage:
    """Page ``number``'s paragraphs from its words in Tesseract's order. A paragraph is Tesseract's, cut further
    where a line stands further below the one before than lines usually do (:data:`_PARAGRAPH_PITCH` times the
    page's usual distance from one line's top to the next's) or is set in another size (:data:`_HEADING_HEIGHT`),
    as a heading over its text is; a paragraph of one line set larger than the page's usual line is a heading.
    Specks (a word's box within :data:`_SPECK` of the page's longer side ``size``) are no words: dust on a
    scanned page is read as dots at high confidence."""
    speck = max(size) * _SPECK
    words = [word for word in words if word.right - word.left > speck or word.bottom - word.top > speck]
    lines: dict[tuple[int, int, int], list[_Word]] = {}
    for word in words:
        lines.setdefault(word.line, []).append(word)
    # A line's top and bottom are its words' middle ones: Tesseract gives some Hangul syllables boxes far too tall.
    extents = {
        key: (statistics.median(w.top for w in line), statistics.median(w.bottom for w in line))
        for key, line in lines.items()
    }
    keys = list(extents)
    usual = statistics.median(bottom - top for top, bottom in extents.values()) if keys else 0
    pitches = [extents[b][0] - extents[a][0] for a, b in zip(keys, keys[1:]) if a[:2] == b[:2]]
    pitch = statistics.median(pitches) if pitches else None
    paragraphs: list[list[tuple[int, int, int]]] = []
    for previous, key in zip([None, *keys], keys):
        if (
            previous is None
            or key[:2] != previous[:2]
            or (pitch and extents[key][0] - extents[previous][0] > _PARAGRAPH_PITCH * pitch)
            or _ratio(extents[key][1] - extents[key][0], extents[previous][1] - extents[previous][0]) > _HEADING_HEIGHT
        ):
            paragraphs.append([])
        paragraphs[-1].append(key)
    blocks, boxes = [], []
    for group in paragraphs:
        paragraph = [word for key in group for word in lines[key]]
        text = " ".join(word.text for word in paragraph)
        top, bottom = extents[group[0]]
        heading = (
            len(group) == 1 and len(paragraphs) > 1 and len(text) <= 150 and bottom - top > _HEADING_HEIGHT * usual
        )
        blocks.append(TextBlock("<h2>" if heading else "<p>", ((text, number),)))
        boxes += [WordBox(number, word.left, word.top, word.right, word.bottom, word.text) for word in paragraph]
    return ScannedPage(number, tuple(blocks), tuple(boxes), image)


def _ratio(a: float, b: float) -> float:
    """How many times the larger of two heights is the smaller."""
    return max(a, b) / max(1, min(a, b))
