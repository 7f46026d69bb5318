"""End to end in real headless Chromium: paste, ask, see the highlighted answer and the plots.

Needs Debian's chromium (``apt-get install -y chromium``); Playwright drives it through
``executable_path``, so ``playwright install`` (which downloads a browser) is never needed.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from littlebird.app.examples import find_example
from littlebird.app.explorer.export import read_explorer_file
from tests.support.ui import CHROMIUM, long_document, serve_directory, wait_for_reading, watch_readings

README_SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "screenshot.png"
ANSWER_TIMEOUT_MS = 90_000  # a 5K-token document on two busy cores, plus the attention rerun

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium (apt-get install -y chromium)"
    ),
]


def shown_document(page) -> str:
    """The document view's current HTML ('' before the first answer)."""
    return page.evaluate("() => document.querySelector('#lb-document .lb-doc')?.innerHTML ?? ''")


def wait_for_new_answer(page, before: str) -> None:
    """Wait until the document view differs from ``before`` and no output shows progress any more."""
    page.wait_for_function(
        """before => {
            const view = document.querySelector('#lb-document .lb-doc');
            const busy = document.querySelectorAll('[data-testid="status-tracker"]:not(.hide)').length;
            return view !== null && view.innerHTML !== before && busy === 0;
        }""",
        arg=before,
        timeout=ANSWER_TIMEOUT_MS,
    )


def paste_and_ask(page, document: str, question: str) -> None:
    """Paste ``document``, type ``question``, press Enter and wait until the new answer is shown."""
    page.locator("#lb-paste textarea").fill(document)
    box = page.locator("#lb-question textarea")
    box.fill(question)
    before = shown_document(page)
    box.press("Enter")
    wait_for_new_answer(page, before)


def open_explorer(page) -> None:
    """Open the attention explorer and wait until it has drawn the answer's window (it computes nothing before)."""
    page.locator("#lb-explorer").get_by_text("Attention explorer").first.click()
    page.wait_for_function(
        "() => (document.querySelector('#lb-plot-blocks .gtitle')?.textContent ?? '').includes('layer')", timeout=60_000
    )


def download_export(page, folder):
    """Press "Export this view", download the file it offers into ``folder`` and return its path."""
    page.locator("#lb-export-button").click()
    link = page.locator("#lb-export a[download]").first
    link.wait_for(timeout=30_000)
    with page.expect_download() as download:
        link.click()
    saved = folder / download.value.suggested_filename
    download.value.save_as(saved)
    return saved


def test_document_html_is_shown_as_text_never_run(page):
    # plain text (no paragraph tags), so the markup below reaches the shown text as characters
    hostile = (
        'Markup such as <img src=x onerror="window.__pwned = 1"> or <svg onload="window.__pwned = 2"></svg> '
        "or <script>window.__pwned = 3</script> must stay text. The launch was in 1998."
    )
    paste_and_ask(page, hostile, "When was the launch?")
    shown = page.locator("#lb-document .lb-doc").inner_text()
    assert '<img src=x onerror="window.__pwned = 1">' in shown and "<script>" in shown
    assert page.locator("#lb-document img, #lb-document svg, #lb-document script").count() == 0
    assert page.evaluate("window.__pwned") is None


def test_paste_example_ask_and_explore(page):
    example = find_example("ko-hangul")
    paste_and_ask(page, example.read_html(), example.questions[0].question)

    # the answer card and the highlighted span say the same thing
    answer = page.locator("#lb-answer-card .lb-answer").inner_text().strip()
    marks = page.locator("#lb-document mark.lb-best")
    assert marks.count() >= 1
    assert "".join(marks.all_inner_texts()) == answer
    assert page.locator("#lb-answer-card table.lb-nbest tbody tr").count() >= 2
    # the other n-best are marked lighter exactly where they reach outside the best answer's span:
    # the n-best table's character ranges, read on the shown text, say which characters those are
    text = page.evaluate("() => document.querySelector('#lb-document .lb-doc').textContent")
    ranges = [
        tuple(map(int, cell.split("–")))
        for cell in page.locator("#lb-answer-card table.lb-nbest tbody tr td:nth-child(5)").all_inner_texts()
    ]
    (best_start, best_end), others = ranges[0], ranges[1:]
    assert text[best_start:best_end] == answer
    outside = "".join(
        ch
        for i, ch in enumerate(text)
        if not best_start <= i < best_end and any(start <= i < end for start, end in others)
    )
    assert outside.strip(), "the example's other answers should reach outside the best one"
    assert "".join(page.locator("#lb-document mark.lb-alt").all_text_contents()) == outside

    # the document box scrolled so the answer is in view
    visible = page.evaluate(
        "() => { const box = document.querySelector('#lb-document .lb-doc');"
        " const mark = document.querySelector('#lb-answer');"
        " const top = mark.offsetTop - box.scrollTop; return top >= 0 && top < box.clientHeight; }"
    )
    assert visible

    stats = page.locator("#lb-stats").inner_text()
    assert "tokens" in stats and "window" in stats and "model" in stats

    # opened, the explorer draws every plot with plotly, the block map as a heatmap
    open_explorer(page)
    for plot in ("blocks", "answer", "pack", "slopes", "curves"):
        page.locator(f"#lb-plot-{plot} .js-plotly-plot .main-svg").first.wait_for(timeout=30_000)
    assert page.locator("#lb-plot-blocks .heatmaplayer image, #lb-plot-blocks .hm image").count() >= 1
    assert page.locator("#lb-plot-answer .heatmaplayer image, #lb-plot-answer .hm image").count() >= 1

    # picking another head redraws the per-head plots
    head = page.locator("#lb-head input[type=number]")
    head.fill("3")
    head.press("Enter")
    page.wait_for_function(
        "() => document.querySelector('#lb-plot-blocks .gtitle')?.textContent.endsWith('layer 0 head 3')",
        timeout=30_000,
    )

    # any token: the view follows the head; a token picked by position shows its keys, their content and
    # BiALiBi terms, and weights that sum to one
    token_title = "() => document.querySelector('#lb-token-view .gtitle')?.textContent ?? ''"
    page.wait_for_function(f"() => ({token_title})().endsWith('layer 0 head 3')", timeout=30_000)
    token = page.locator("#lb-token input[type=number]")
    token.fill("2")
    token.press("Enter")
    page.wait_for_function(f"() => ({token_title})().startsWith('Token 2 ')", timeout=30_000)
    traces = page.evaluate(
        "() => document.querySelector('#lb-token-view .js-plotly-plot')._fullData.map(t => [t.name, Array.from(t.y)])"
    )
    names = [name for name, _ in traces]
    assert names == ["content q·k/√d", "BiALiBi bias", "score (logit)", "weight"]
    content, bias, score, weight = (values for _, values in traces)
    assert len(weight) > 64 and abs(sum(weight) - 1) < 1e-3  # the pack slots and the tokens it may read
    assert all(abs(c + b - s) < 1e-3 for c, b, s in zip(content, bias, score))
    assert page.locator("#lb-token-view .barlayer .point").count() > 64


def test_the_explorer_of_a_long_document(page, tmp_path):
    paste_and_ask(page, long_document(3_000), "Where was Jikji printed?")
    open_explorer(page)

    # the rollout: per token followed, a layers x blocks map with data and the pack route's share per layer;
    # the document tints the blocks the answer draws most from
    page.locator("#lb-rollout .heatmaplayer image, #lb-rollout .hm image").first.wait_for(timeout=30_000)
    maps = page.evaluate("""() => document.querySelector('#lb-rollout .js-plotly-plot')._fullData
        .filter(t => t.type === 'heatmap')
        .map(t => [t.z.length, t.z[0].length, Math.max(...t.z.map(r => Math.max(...r)))])""")
    assert len(maps) == 3 and all(rows == 2 and blocks >= 4 and -1 < peak <= 0 for rows, blocks, peak in maps)  # log10
    shares = page.evaluate("""() => document.querySelector('#lb-rollout .js-plotly-plot')._fullData
        .filter(t => t.type === 'bar').map(t => Array.from(t.x))""")
    assert len(shares) == 3 and all(len(bars) == 2 and all(0 <= x <= 1 for x in bars) for bars in shares)
    tints = page.locator("#lb-document .lb-tint")
    assert tints.count() >= 5 and tints.first.get_attribute("title").startswith("rollout #")
    assert page.locator("#lb-document .lb-tint-1").count() >= 1 and page.locator("#lb-answer").count() == 1

    # the reading map: one bar per window of the document, and the menu to aim the explorer with
    windows = page.evaluate("() => document.querySelector('#lb-reading-map .js-plotly-plot').data[0].x.length")
    assert windows >= 3
    page.locator("#lb-aim input").click()
    options = [o.split("\n")[-1] for o in page.get_by_role("option").all_inner_texts()]  # the chosen one has a tick
    assert options[0].startswith("answer #1") and sum(o.startswith("window ") for o in options) == windows
    unread = next(o for o in options if o.startswith("window ") and o.endswith("not read"))
    page.get_by_role("option", name=unread, exact=True).click()
    # the explorer reads that window now: it holds no answer, and the map shades it
    page.wait_for_function(
        "() => (document.querySelector('#lb-plot-answer')?.textContent ?? '').includes('No answer span')",
        timeout=60_000,
    )
    shaded = page.evaluate("() => document.querySelector('#lb-reading-map .js-plotly-plot').layout.shapes[0].x0")
    assert shaded == int(unread.split()[1]) - 0.5

    # the head atlas: another metric redraws it, and a head picked in its menu moves the sliders
    atlas_title = "() => document.querySelector('#lb-head-atlas .gtitle')?.textContent ?? ''"
    page.wait_for_function(f"() => ({atlas_title})().includes('pack slots')", timeout=30_000)
    page.locator("#lb-atlas-metric").get_by_text("mean attention distance (tokens)").click()
    page.wait_for_function(f"() => ({atlas_title})().includes('distance')", timeout=30_000)
    page.locator("#lb-atlas-cell input").click()
    cells = [o.split("\n")[-1] for o in page.get_by_role("option").all_inner_texts()]
    assert len(cells) == 2 * 4 and cells[0].startswith("layer ")  # the tiny model's layers x heads
    pick = next(c for c in reversed(cells) if not c.startswith("layer 0, head 0:"))  # not the head shown now
    page.get_by_role("option", name=pick, exact=True).click()
    chosen = pick.split(":")[0].replace(",", "")  # "layer 1 head 3"
    page.wait_for_function(
        "t => (document.querySelector('#lb-plot-blocks .gtitle')?.textContent ?? '').endsWith(t)",
        arg=chosen,
        timeout=30_000,
    )
    assert page.locator("#lb-layer input[type=number]").input_value() == chosen.split()[1]
    assert page.locator("#lb-head input[type=number]").input_value() == chosen.split()[3]

    # the export: the view's summary as an .npz, with the question, window, layer and head in its JSON
    saved = download_export(page, tmp_path)
    arrays, metadata = read_explorer_file(saved)
    layer, head = int(chosen.split()[1]), int(chosen.split()[3])
    assert saved.suffix == ".npz" and arrays["block_maps"].shape[:2] == (2, 4)
    assert (metadata["question"], metadata["layer"], metadata["head"], metadata["metric"]) == (
        "Where was Jikji printed?",
        layer,
        head,
        "distance",
    )
    assert metadata["window"]["index"] == int(unread.split()[1]) and metadata["answer"] is None


def test_example_menu_pastes_the_document_and_suggests_questions(page, tmp_path):
    example = find_example("ko-jikji")
    page.locator("#lb-example input").click()
    page.get_by_role("option", name=example.label).click()
    suggestions = page.locator("#lb-suggestions label")
    suggestions.first.wait_for(timeout=10_000)
    assert suggestions.all_inner_texts() == [q.question for q in example.questions]
    assert page.locator("#lb-paste textarea").input_value() == example.read_html()

    suggestions.nth(1).click()
    page.wait_for_function(
        "q => document.querySelector('#lb-question textarea').value === q", arg=example.questions[1].question
    )
    before = shown_document(page)
    page.locator("#lb-ask").click()
    wait_for_new_answer(page, before)
    assert "흥덕사" in page.locator("#lb-document .lb-doc").inner_text()
    open_explorer(page)

    # the whole page, as the README shows it (copied there only on request: the timings differ each run)
    shot = tmp_path / "littlebird-qa.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 20_000
    if os.environ.get("LITTLEBIRD_UPDATE_SCREENSHOT") == "1":
        README_SCREENSHOT.parent.mkdir(exist_ok=True)
        shutil.copyfile(shot, README_SCREENSHOT)


def test_asking_again_stops_the_question_before(page, monkeypatch, tmp_path):
    readings = watch_readings(monkeypatch, pause=1.0)
    (tmp_path / "long.txt").write_text(long_document(), encoding="utf-8")  # several windows, each followed by a pause
    first_question, second_question = "When was Jikji printed, asked first?", "Where was Jikji printed, asked again?"
    with serve_directory(tmp_path) as base:
        page.get_by_role("tab", name="URL").click()
        page.locator("#lb-url input, #lb-url textarea").first.fill(f"{base}/long.txt")
        box = page.locator("#lb-question textarea")
        box.fill(first_question)
        box.press("Enter")
        first = wait_for_reading(readings, first_question)
        before = shown_document(page)
        box.fill(second_question)
        page.locator("#lb-ask").click()

        assert first.ended.wait(60), "the first question was still being read"
        assert first.outcome == "stopped" and first.windows_read < first.windows_planned
        wait_for_new_answer(page, before)  # the second question's answer, once it has been read in full
    second = wait_for_reading(readings, second_question, timeout=1)
    assert second.ended.is_set() and second.outcome == "answered" and second.windows_read == second.windows_planned
    assert second.started >= first.ended_at  # one question of a page reads at a time
    assert [r.question for r in readings] == [first_question, second_question]
