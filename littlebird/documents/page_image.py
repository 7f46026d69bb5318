"""An answer shown on its page: a crop of a scanned page's image with a box drawn round the answer's words.

A document read by OCR keeps each word's place on its page (``Document.word_boxes``) and a small image of each
page it read (``Document.page_images``), so an answer found in the text can be shown where it stands on the
page. Pillow is imported only when a crop is made.
"""

from __future__ import annotations

import io
import statistics

from littlebird.documents.clean import Document
from littlebird.documents.decode import WordBox

ANSWER_COLOUR = (230, 81, 0)  # an orange that stands out on black text and white paper
CONTEXT_LINES = 3  # lines of the page shown above and below the answer


def answer_boxes(document: Document, start: int, end: int) -> list[WordBox]:
    """The boxes of the words that the answer ``document.text[start:end]`` covers, on the page its first word is
    on (an answer across a page break is shown on the page where it starts); empty where OCR read none of them."""
    words = [box for word_start, word_end, box in document.word_boxes if word_start < end and word_end > start]
    return [box for box in words if box.page == words[0].page] if words else []


def answer_crop(document: Document, start: int, end: int) -> bytes | None:
    """PNG bytes of the answer ``document.text[start:end]`` on its page: the page's full width, from a few lines
    above the answer to a few lines below, with a box in :data:`ANSWER_COLOUR` round each of the answer's lines.
    None where the answer's words were not read by OCR (a text layer's, a web page's)."""
    boxes = answer_boxes(document, start, end)
    page = boxes[0].page if boxes else None
    if page is None or page > len(document.page_images) or document.page_images[page - 1] is None:
        return None
    from PIL import Image, ImageDraw

    page_image = document.page_images[page - 1]
    image = Image.open(io.BytesIO(page_image.png)).convert("RGB")
    lines = [[round(value * page_image.scale) for value in line] for line in _answer_lines(boxes)]
    height = statistics.median(bottom - top for _, top, _, bottom in lines)
    context = round(CONTEXT_LINES * 2 * height)  # from one line to the next is about twice a word's height
    top = max(0, min(line[1] for line in lines) - context)
    bottom = min(image.height, max(line[3] for line in lines) + context)
    crop = image.crop((0, top, image.width, bottom))
    draw = ImageDraw.Draw(crop)
    width = max(2, round(height / 8))
    margin = width + 2
    for left, line_top, right, line_bottom in lines:
        draw.rectangle(
            (left - margin, line_top - top - margin, right + margin, line_bottom - top + margin),
            outline=ANSWER_COLOUR,
            width=width,
        )
    out = io.BytesIO()
    crop.save(out, "PNG")
    return out.getvalue()


def _answer_lines(boxes: list[WordBox]) -> list[tuple[int, int, int, int]]:
    """The answer's words joined into one box per line of the page (words that overlap in height), each
    ``(left, top, right, bottom)``."""
    lines: list[list[int]] = []
    for box in boxes:
        line = lines[-1] if lines else None
        if line is not None and box.top < line[3] and box.bottom > line[1] and box.left >= line[0]:
            line[:] = [line[0], min(line[1], box.top), max(line[2], box.right), max(line[3], box.bottom)]
        else:
            lines.append([box.left, box.top, box.right, box.bottom])
    return [tuple(line) for line in lines]
