"""In real headless Chromium: a pasted 100K-token document is answered, and the card says how much was read;
the attention explorer is drawn only once it is opened."""

from __future__ import annotations

import re

import pytest

from littlebird.reader import DEFAULT_MAX_WINDOWS
from tests.browser.test_browser import CHROMIUM, browser, page, paste_and_ask, shown_document, wait_for_new_answer  # noqa: F401
from tests.ui_support import long_document

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium (apt-get install -y chromium)")]


def paste_large(page, text: str) -> None:
    """Put ``text`` in the paste box as a paste does: one input event with the whole text (Playwright's
    ``fill`` types it into the box's handlers piece by piece, minutes for 300K characters)."""
    page.evaluate(
        """text => { const box = document.querySelector('#lb-paste textarea');
                     box.value = text; box.dispatchEvent(new Event('input', {bubbles: true})); }""",
        text,
    )
    page.wait_for_function("n => document.querySelector('#lb-paste textarea').value.length === n", arg=len(text))


def test_a_100k_token_paste_is_answered_with_a_read_n_of_m_note(page):
    document = long_document(100_000)
    assert len(document) > 300_000
    paste_large(page, document)
    box = page.locator("#lb-question textarea")
    box.fill("When was Jikji printed with movable metal type?")
    before = shown_document(page)
    box.press("Enter")
    wait_for_new_answer(page, before)

    card = page.locator("#lb-answer-card").inner_text()
    note = re.search(r"Read (\d+) of (\d+) windows \(([\d,]+) of ([\d,]+) tokens\)", card)
    assert note, card
    read, planned, _, total = (int(g.replace(",", "")) for g in note.groups())
    # the best windows first, at most DEFAULT_MAX_WINDOWS: fewer once one is answerable (or three are not)
    assert 2 <= read <= DEFAULT_MAX_WINDOWS and planned > 90 and total > 95_000
    assert page.locator("#lb-document mark.lb-best, #lb-document mark.lb-best-weak").count() >= 1
    stats = page.locator("#lb-stats").inner_text()
    assert f"{read} of {planned} windows read" in stats and "rank" in stats


def test_the_explorer_is_drawn_when_opened_not_with_the_answer(page):
    paste_and_ask(page, long_document(3_000), "Where was Jikji printed?")
    title = "() => document.querySelector('#lb-plot-blocks .gtitle')?.textContent ?? ''"
    assert "layer" not in page.evaluate(title)  # the explorer is closed and nothing was computed for it
    page.locator("#lb-explorer").get_by_text("Attention explorer").first.click()
    page.wait_for_function(f"() => ({title})().includes('layer 0 head 0')", timeout=60_000)
    assert page.locator("#lb-plot-blocks .heatmaplayer image, #lb-plot-blocks .hm image").count() >= 1

    # with the explorer open, the next answer's window is drawn after the answer shows
    before = page.evaluate("() => document.querySelector('#lb-plot-blocks .js-plotly-plot')?.innerHTML ?? ''")
    paste_and_ask(page, long_document(2_000), "What was printed at Heungdeoksa temple?")
    page.wait_for_function(
        "before => { const p = document.querySelector('#lb-plot-blocks .js-plotly-plot');"
        " return p && p.innerHTML !== before && (p.querySelector('.gtitle')?.textContent ?? '').includes('layer'); }",
        arg=before, timeout=60_000,
    )
