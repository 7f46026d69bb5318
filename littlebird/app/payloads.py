"""What a question's result looks like to its reader: the page's HTML and the /answer endpoint's JSON.

Every function takes plain data (the question's :class:`~littlebird.reader.Reading`, the document's text) and
returns a string or a dict. Nothing from the document is ever interpreted as HTML: all of it is escaped.
"""

from __future__ import annotations

import base64
import html
import itertools
from collections.abc import Sequence
from typing import Any

from littlebird.app.models import LoadedModel
from littlebird.documents.clean import Document, page_at
from littlebird.documents.page_image import answer_crop
from littlebird.language import detect_language
from littlebird.reader import Reading

N_BEST_HEADERS = ["#", "answer", "probability", "score", "characters"]  # the n-best table's columns


def answer_card(result: Reading, document: Document | None = None) -> str:
    """The answer, its probability, the decision and the n-best table, as escaped HTML; in a ``document`` with
    pages (a PDF's), the page the answer is on, and on a scan, the answer boxed on its page (:func:`scan_figure`).

    "No answer found" is said plainly when that is the decision; the model's best
    guesses then stay in the n-best table and are shaded lightly in the document, never shown on the scan.
    """
    page_starts = document.page_starts if document is not None else ()
    message = f'<p class="lb-note">{html.escape(result.note)}</p>' if result.note else ""
    answerable = f"{result.answerable_probability:.0%}"
    if result.no_answer or not result.answers:
        head = (
            '<div class="lb-answer lb-none">No answer found.</div>'
            f'<div class="lb-meta">The model thinks the text answers this with probability {answerable}.</div>'
        )
    else:
        best = result.answers[0]
        page = page_at(page_starts, best.start)
        where = "" if page is None else f'<span class="lb-page-ref">page {page} of {len(page_starts)}</span> · '
        head = (
            f'<div class="lb-answer">{html.escape(best.text)}</div>'
            f'<div class="lb-meta">{where}probability {best.probability:.0%} among the n-best · '
            f"answerable {answerable} · score {best.score:.2f}</div>"
        )
        if document is not None:
            head += scan_figure(answer_crop(document, best.start, best.end), page)
    return (
        f'<div class="lb-card"><div class="lb-label">Answer</div>{head}{message}'
        f"{n_best_table(n_best_rows(result))}</div>"
    )


def scan_figure(png: bytes | None, page: int | None) -> str:
    """The answer's crop of its scanned page (``png``, from :func:`~littlebird.documents.page_image.answer_crop`)
    as an inline image with its page under it; nothing without a crop. The image is our own PNG, sent as a
    ``data:`` address, so the page asks the server for nothing more."""
    if png is None:
        return ""
    alt = "The answer on the scan, boxed" if page is None else f"The answer on page {page} of the scan, boxed"
    caption = "" if page is None else f"<figcaption>page {page}</figcaption>"
    source = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    return f'<figure class="lb-scan"><img src="{source}" alt="{html.escape(alt, quote=True)}">{caption}</figure>'


def n_best_rows(result: Reading) -> list[list[Any]]:
    """One row of N_BEST_HEADERS per n-best answer: rank, text, probability, score, character range."""
    return [
        [rank, a.text, round(a.probability, 4), round(a.score, 3), f"{a.start}–{a.end}"]
        for rank, a in enumerate(result.answers, start=1)
    ]


def n_best_table(rows: list[list[Any]]) -> str:
    """The n-best rows as an escaped HTML table (nothing when there are none)."""
    if not rows:
        return ""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in N_BEST_HEADERS)
    body = "".join(
        f'<tr><td>{rank}</td><td class="lb-text">{html.escape(text)}</td>'
        f"<td>{p:.0%}</td><td>{score:.2f}</td><td>{span}</td></tr>"
        for rank, text, p, score, span in rows
    )
    return f'<table class="lb-nbest"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def highlight_document(text: str, result: Reading | None, page_starts: Sequence[int] = ()) -> str:
    """``text`` as escaped HTML with the best answer marked and the other n-best lighter (:func:`highlight_answers`)."""
    answers = result.answers if result is not None else []
    return highlight_answers(text, answers, no_answer=result is not None and result.no_answer, page_starts=page_starts)


def highlight_answers(
    text: str,
    answers: Sequence[Any],
    *,
    no_answer: bool = False,
    tints: Sequence[tuple[int, int, str]] = (),
    page_starts: Sequence[int] = (),
) -> str:
    """``text`` as escaped HTML with the best of ``answers`` (n-best, best first) marked, weakly when
    ``no_answer``, and the others lighter; each ``tints`` span (start, end, note) is tinted by its place in
    the list (``lb-tint-1`` the strongest), with ``note`` as its hover text. Where each of ``page_starts``
    (a PDF's pages) starts, an empty ``<span class="lb-page" data-page="N">`` marks the page break; the
    page's style sheet writes its number, so the marks are no part of the document's text.

    Overlapping answers are painted by rank: each character takes the best rank that
    covers it. The best answer's first piece gets ``id="lb-answer"``, which the page
    scrolls to. Nothing from the document is ever interpreted as HTML.
    """
    edges = [p for a in answers for p in (a.start, a.end)] + [p for start, end, _ in tints for p in (start, end)]
    breaks: dict[int, list[int]] = {}
    for page, start in enumerate(page_starts, start=1):
        breaks.setdefault(min(max(start, 0), len(text)), []).append(page)
    bounds = sorted({0, len(text), *breaks, *(p for p in edges if 0 <= p <= len(text))})
    pieces, anchored = [], False
    best_class = "lb-best-weak" if no_answer else "lb-best"
    for start, end in itertools.pairwise(bounds):
        pieces.extend(f'<span class="lb-page" data-page="{page}"></span>' for page in breaks.get(start, ()))
        chunk = html.escape(text[start:end])
        ranks = [r for r, a in enumerate(answers) if a.start <= start and end <= a.end]
        if ranks:
            rank = min(ranks)
            answer = answers[rank]
            css = best_class if rank == 0 else "lb-alt"
            anchor = ' id="lb-answer"' if rank == 0 and not anchored else ""
            anchored = anchored or rank == 0
            tip = html.escape(f"#{rank + 1} · {answer.probability:.0%}", quote=True)
            chunk = f'<mark class="{css}"{anchor} title="{tip}">{chunk}</mark>'
        tinted = next((i for i, (first, last, _) in enumerate(tints) if first <= start and end <= last), None)
        if tinted is not None:
            chunk = (
                f'<span class="lb-tint lb-tint-{tinted + 1}" '
                f'title="{html.escape(tints[tinted][2], quote=True)}">{chunk}</span>'
            )
        pieces.append(chunk)
    pieces.extend(f'<span class="lb-page" data-page="{page}"></span>' for page in breaks.get(len(text), ()) if text)
    return f'<div class="lb-doc" lang="{_lang(text)}">{"".join(pieces)}</div>'


def _lang(text: str) -> str:
    """ "ko" when the start of ``text`` reads as Korean or mixed, else "en": for fonts and line breaking."""
    return "ko" if detect_language(text[:2000]) in ("ko", "mixed") else "en"


def stats_line(result: Reading, loaded: LoadedModel) -> str:
    """Tokens, windows read, device and seconds per stage, on one line."""
    times = " · ".join(f"{name} {seconds:.2f} s" for name, seconds in result.timings.items())
    windows = f"{result.n_windows} window{'s' if result.n_windows != 1 else ''}"
    if result.windows_planned > result.n_windows:
        windows = f"{result.n_windows} of {result.windows_planned} windows read"
    return f"{result.n_tokens:,} tokens · {windows} · {loaded.device} ({loaded.dtype}) · {times}"


def api_payload(result: Reading, document: Document, device: str) -> dict:
    """The JSON the /answer endpoint returns for ``result``, read on ``device``."""
    n_best = [
        {
            "answer": a.text,
            "score": round(a.score, 4),
            "probability": round(a.probability, 4),
            "start": a.start,
            "end": a.end,
            "page": document.page_of(a.start),
        }
        for a in result.answers
    ]
    best = n_best[0] if n_best and not result.no_answer else None
    return {
        "answer": best["answer"] if best else None,
        "score": best["score"] if best else None,
        "probability": best["probability"] if best else None,
        "start": best["start"] if best else None,
        "end": best["end"] if best else None,
        "page": best["page"] if best else None,
        "n_pages": len(document.page_starts) or None,
        "no_answer": bool(result.no_answer),
        "answerable_probability": round(result.answerable_probability, 4),
        "n_best": n_best,
        "message": result.note,
        "text": document.text,
        "n_tokens": result.n_tokens,
        "n_windows": result.n_windows,
        "windows_planned": result.windows_planned,
        "device": device,
        "timings": {k: round(v, 4) for k, v in result.timings.items()},
    }
