"""In real headless Chromium: a pasted 100K-token document is answered, the card says how much was read, and
each view of the attention explorer works on it; the explorer is drawn only once it is opened."""

from __future__ import annotations

import re

import pytest

from littlebird.app.explorer.export import read_explorer_file
from littlebird.reader import DEFAULT_MAX_WINDOWS
from tests.browser.test_browser import (
    download_export,
    open_explorer,
    paste_and_ask,
    shown_document,
    wait_for_new_answer,
)
from tests.support.ui import CHROMIUM, long_document

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium (apt-get install -y chromium)"
    ),
]


def paste_large(page, text: str) -> None:
    """Put ``text`` in the paste box as a paste does: one input event with the whole text (Playwright's
    ``fill`` types it into the box's handlers piece by piece, minutes for 300K characters)."""
    page.evaluate(
        """text => { const box = document.querySelector('#lb-paste textarea');
                     box.value = text; box.dispatchEvent(new Event('input', {bubbles: true})); }""",
        text,
    )
    page.wait_for_function("n => document.querySelector('#lb-paste textarea').value.length === n", arg=len(text))


def plot_data(page, elem_id: str) -> list:
    """The plotly traces drawn in ``elem_id``'s plot: (type, name, z or y) each, numbers as lists."""
    return page.evaluate(
        """id => document.querySelector(`#${id} .js-plotly-plot`)._fullData.map(t => [t.type, t.name ?? '',
               t.type === 'heatmap' ? Array.from(t.z, row => Array.from(row)) : Array.from(t.y ?? [])])""",
        elem_id,
    )


def test_a_100k_token_paste_is_answered_with_a_read_n_of_m_note_and_explored(page, tmp_path):
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

    # the explorer on that document: the reading map has a mark per window, the windows read among them
    open_explorer(page)
    windows = page.evaluate("() => document.querySelector('#lb-reading-map .js-plotly-plot').data[0].x.length")
    seen = page.evaluate("() => document.querySelector('#lb-reading-map .js-plotly-plot').data[1].x.length")
    assert windows == planned and seen == read

    # aimed at another window the model read: drawn again, and the map shades it
    shaded = "() => document.querySelector('#lb-reading-map .js-plotly-plot').layout.shapes[0].x0"
    shown = int(page.evaluate(shaded) + 0.5)  # the best answer's window
    page.locator("#lb-aim input").click()
    options = [o.split("\n")[-1] for o in page.get_by_role("option").all_inner_texts()]
    # the menu lists the windows (the browser renders part of a long list): every window read among them
    assert sum(o.startswith("window ") and "· read " in o for o in options) == read
    other = next(o for o in options if o.startswith("window ") and "· read " in o and int(o.split()[1]) != shown)
    index = int(other.split()[1])
    before = page.evaluate("() => document.querySelector('#lb-plot-blocks .js-plotly-plot')?.innerHTML ?? ''")
    page.get_by_role("option", name=other, exact=True).click()
    page.wait_for_function(
        "before => { const p = document.querySelector('#lb-plot-blocks .js-plotly-plot');"
        " const busy = document.querySelectorAll('[data-testid=\"status-tracker\"]:not(.hide)').length;"
        " return p && p.innerHTML !== before && busy === 0; }",
        arg=before,
        timeout=90_000,
    )
    assert page.evaluate(shaded) == index - 0.5

    # the head atlas, the rollout and the token view of that window hold data
    (kind, _, atlas), *_ = plot_data(page, "lb-head-atlas")
    assert kind == "heatmap" and len(atlas) == 2 and len(atlas[0]) == 4 and all(0 <= v <= 1 for r in atlas for v in r)
    maps = [z for kind, _, z in plot_data(page, "lb-rollout") if kind == "heatmap"]
    assert maps and all(len(z) == 2 and len(z[0]) >= 4 and max(map(max, z)) > -1 for z in maps)
    weights = next(y for _, name, y in plot_data(page, "lb-token-view") if name == "weight")
    assert len(weights) > 64 and abs(sum(weights) - 1) < 1e-3

    # the export of that view
    arrays, metadata = read_explorer_file(download_export(page, tmp_path))
    assert arrays["block_maps"].shape[:2] == (2, 4) and metadata["window"]["index"] == index


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
        arg=before,
        timeout=60_000,
    )
