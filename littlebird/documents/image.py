"""Images of pages (PNG, JPEG, every page of a TIFF, WebP) -> RawDocument, read by OCR
(:mod:`littlebird.documents.ocr`).

An image's size is checked from its header before its pixels are decoded (Pillow opens files lazily), so a
file that declares 60,000 × 60,000 pixels is refused at once instead of asking for gigabytes; a TIFF's pages
are counted, and each checked, the same way. Each page becomes one page of the document, with its words'
boxes and a small copy of it for showing answers.
"""

from __future__ import annotations

import io
import re
import struct
import time
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING

from littlebird.documents.decode import RawDocument
from littlebird.documents.errors import DocumentError
from littlebird.documents.ocr import MAX_SCAN_PAGES, OCR_SECONDS, Picture, read_pictures, tesseract_command

if TYPE_CHECKING:
    from PIL import Image

MAX_IMAGE_PIXELS = 50_000_000  # a page photographed at 50 megapixels; a larger image is refused undecoded
_READ = {"PNG": "PNG", "JPEG": "JPEG", "MPO": "JPEG", "TIFF": "TIFF", "WEBP": "WebP"}  # Pillow's names: ours
# What Pillow raises for a file that is damaged, cut short or not what it claims.
_DAMAGED = (OSError, SyntaxError, ValueError, EOFError, struct.error, IndexError, KeyError, TypeError)


def read_image(
    data: bytes,
    *,
    source: str,
    max_pages: int = MAX_SCAN_PAGES,
    max_pixels: int = MAX_IMAGE_PIXELS,
    seconds: float = OCR_SECONDS,
) -> RawDocument:
    """A PNG, JPEG, TIFF (all its pages) or WebP image of text as a RawDocument, read by OCR: one page per image
    page, each paragraph a block with its page, the words' boxes and the pages' images kept.

    Raises DocumentError, with a sentence for the user, where Tesseract is not installed, for a damaged or
    truncated file, one with more than ``max_pages`` pages or a page over ``max_pixels`` pixels, one whose
    reading takes more than ``seconds``, and one in which OCR finds no text.
    """
    started = time.monotonic()
    tesseract_command()  # first: without it nothing here can be read, and the sentence says what to install
    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # our own limit is lower
            image = Image.open(io.BytesIO(data))
            n_pages = getattr(image, "n_frames", 1)
    except Image.DecompressionBombError as error:
        pixels = re.search(r"\((\d+) pixels\)", str(error))
        raise DocumentError(
            f"This image declares {int(pixels.group(1)) if pixels else 0:,} pixels; this app reads "
            f"images of at most {max_pixels:,} pixels. Please scale it down or crop it to the text, "
            "and upload it again."
        ) from None
    except _DAMAGED:
        raise _damaged() from None
    if image.format not in _READ:
        raise DocumentError(
            f"{source} is not a PNG, JPEG, TIFF or WebP image that this app can read. Please save it "
            "as PNG and upload that."
        )
    if n_pages > max_pages:
        raise DocumentError(
            f"This image has {n_pages:,} pages; this app reads at most {max_pages:,} scanned pages "
            "per document. Please upload the pages you need as a smaller file."
        )
    pages = read_pictures(
        _pages(image, n_pages, max_pixels),
        n_pages=n_pages,
        what=f"this {_READ[image.format]} image",
        seconds=seconds,
        started=started,
    )
    blocks = tuple(block for page in pages for block in page.blocks)
    if not blocks:
        raise DocumentError(
            f"No text was found in this image (OCR read {n_pages} page{'s' if n_pages != 1 else ''}): "
            "it may be blank, or its text too small or faint. Please upload a sharper image of the "
            "page, or the document itself."
        )
    return RawDocument(
        text="\n\n".join(block.pieces[0][0] for block in blocks),
        is_html=False,
        source=source,
        encoding="ocr",
        fetch_seconds=time.monotonic() - started,
        blocks=blocks,
        n_pages=n_pages,
        boxes=tuple(box for page in pages for box in page.boxes),
        page_images=tuple(page.image for page in pages),
    )


def _pages(image: "Image.Image", n_pages: int, max_pixels: int) -> Iterator[Picture]:
    """Each page of ``image``, decoded only after its size passed ``max_pixels``, upright as its EXIF says."""
    from PIL import ImageOps

    for index in range(n_pages):
        try:
            image.seek(index)
        except _DAMAGED:
            raise _damaged() from None
        if image.width * image.height > max_pixels:
            where = "This image" if n_pages == 1 else f"Page {index + 1} of this image"
            raise DocumentError(
                f"{where} is {image.width:,} × {image.height:,} pixels; this app reads images of at "
                f"most {max_pixels:,} pixels. Please scale it down or crop it to the text, and "
                "upload it again."
            )
        try:
            page = ImageOps.exif_transpose(image)
            page.load()
        except _DAMAGED:
            raise _damaged() from None
        yield Picture(index + 1, page)


def _damaged() -> DocumentError:
    return DocumentError(
        "This image could not be read: it is damaged or incomplete. Please save or export it again and upload that."
    )
