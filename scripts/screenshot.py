"""The docs' screenshots: the app with the default checkpoint answering an example, the explorer open.

Serves the app on 127.0.0.1 and drives headless Debian Chromium (Playwright through ``executable_path``, so
no browser download).

By default it picks the Korean Jikji example, asks one of its suggested questions (the second by default),
opens the attention explorer and saves the whole page. With ``--views DIR`` it pastes the four examples'
cleaned text joined instead (~15K tokens: a reading map of many windows, ten of them read), asks the same
question, opens the explorer, exports the view, and saves one PNG per part of the explorer into DIR (see
``VIEWS``), as ``docs/explorer.md`` shows them.

    python scripts/screenshot.py                         # writes docs/screenshot.png
    python scripts/screenshot.py --output /tmp/page.png
    python scripts/screenshot.py --views docs/explorer   # writes docs/explorer/reading-map.png, ...
"""

from __future__ import annotations

import argparse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from littlebird.app.examples import find_example, web_pages  # noqa: E402
from littlebird.app.ui import build_demo  # noqa: E402
from littlebird.documents.clean import clean_document  # noqa: E402
from littlebird.documents.upload import read_upload  # noqa: E402

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WAIT_MS = 180_000  # a 15K-token document read on two busy cores, then its window again with attention

VIEWS = {
    "reading-map": ["#lb-reading-map", "#lb-aim"],
    "block-map": ["#lb-layer", "#lb-plot-blocks"],
    "answer-and-pack": ["#lb-plot-answer", "#lb-plot-pack"],
    "token-view": ["#lb-token", "#lb-token-view"],
    "head-atlas": ["#lb-atlas-metric", "#lb-atlas-cell", "#lb-head-atlas"],
    "rollout": ["#lb-rollout"],
    "document-tint": ["#lb-document"],
    "export": ["#lb-export-button", "#lb-export"],
}
"""Each view's PNG name and the elements (by elem_id) it frames together."""


def joined_examples() -> str:
    """The four example pages' cleaned text, joined: a document of many windows."""
    return "\n\n".join(clean_document(read_upload(example.path)).text for example in web_pages())


def fresh_page(browser, url: str):
    """A new page on the app, once its paste box is there."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(url, wait_until="load")
    page.locator("#lb-paste textarea").wait_for(state="visible", timeout=60_000)
    return page


def paste(page, text: str) -> None:
    """Put ``text`` in the paste box with one input event, as a paste does (``fill`` types it piece by piece)."""
    page.evaluate(
        """text => { const box = document.querySelector('#lb-paste textarea');
                               box.value = text; box.dispatchEvent(new Event('input', {bubbles: true})); }""",
        text,
    )
    page.wait_for_function("n => document.querySelector('#lb-paste textarea').value.length === n", arg=len(text))


def open_explorer(page) -> None:
    """Open the attention explorer and wait until its plots are drawn."""
    page.locator("#lb-explorer").get_by_text("Attention explorer").first.click()
    page.wait_for_function(
        "() => (document.querySelector('#lb-plot-blocks .gtitle')?.textContent ?? '').includes('layer')",
        timeout=WAIT_MS,
    )
    for plot in ("#lb-rollout", "#lb-head-atlas", "#lb-plot-blocks"):
        page.locator(f"{plot} .heatmaplayer image, {plot} .hm image").first.wait_for(timeout=WAIT_MS)
    page.locator("#lb-token-view .barlayer .point").first.wait_for(timeout=WAIT_MS)
    page.wait_for_timeout(1500)  # let plotly finish drawing


def shoot(page, selectors: list[str], path: Path, margin: int = 6) -> None:
    """Save the part of the page that frames every element of ``selectors`` to ``path`` (page coordinates, so
    it may reach beyond the viewport)."""
    boxes = page.evaluate(
        """selectors => selectors.map(s => { const r = document.querySelector(s).getBoundingClientRect();
               return [r.left + window.scrollX, r.top + window.scrollY, r.right + window.scrollX,
                       r.bottom + window.scrollY]; })""",
        selectors,
    )
    left, top = max(min(b[0] for b in boxes) - margin, 0), max(min(b[1] for b in boxes) - margin, 0)
    right, bottom = max(b[2] for b in boxes) + margin, max(b[3] for b in boxes) + margin
    page.screenshot(
        path=str(path), full_page=True, clip={"x": left, "y": top, "width": right - left, "height": bottom - top}
    )


def page_screenshot(page, example, question: int, output: Path) -> None:
    """The README's screenshot: ``example`` picked from the menu, its suggested ``question`` asked, the explorer
    open, the whole page."""
    page.locator("#lb-example input").click()
    page.get_by_role("option", name=example.label).click()
    page.locator("#lb-suggestions label").nth(question).click()
    page.wait_for_function(
        "q => document.querySelector('#lb-question textarea').value === q", arg=example.questions[question].question
    )
    page.locator("#lb-ask").click()
    page.locator("#lb-document mark").first.wait_for(timeout=WAIT_MS)
    open_explorer(page)
    output.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(output), full_page=True)


def view_screenshots(page, question: str, directory: Path) -> list[Path]:
    """The explorer's views on the joined examples, one PNG each (``VIEWS``), the export done."""
    paste(page, joined_examples())
    page.locator("#lb-question textarea").fill(question)
    page.locator("#lb-ask").click()
    page.locator("#lb-document mark").first.wait_for(timeout=WAIT_MS)
    open_explorer(page)
    page.locator("#lb-document .lb-tint-1").first.wait_for(timeout=WAIT_MS)
    page.evaluate("""() => { const box = document.querySelector('#lb-document .lb-doc');
                             const tint = box.querySelector('.lb-tint-1');
                             box.scrollTop = Math.max(0, tint.offsetTop - box.clientHeight / 3); }""")
    page.locator("#lb-export-button").click()
    page.locator("#lb-export a[download]").first.wait_for(timeout=WAIT_MS)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, selectors in VIEWS.items():
        shoot(page, selectors, directory / f"{name}.png")
        written.append(directory / f"{name}.png")
    return written


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", default=None, help="default: assets/littlebird-qa")
    parser.add_argument("--example", default="ko-jikji")
    parser.add_argument("--question", type=int, default=1, help="which of the example's suggested questions")
    parser.add_argument(
        "--output", type=Path, default=None, help="the whole page (default: docs/screenshot.png, or none with --views)"
    )
    parser.add_argument("--views", type=Path, default=None, metavar="DIR", help="one PNG per explorer view here")
    args = parser.parse_args(argv)
    output = args.output or (None if args.views else ROOT / "docs" / "screenshot.png")

    from playwright.sync_api import sync_playwright

    demo = build_demo(args.checkpoint)
    demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True, ssr_mode=False)
    example = find_example(args.example)
    question = example.questions[args.question].question
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            if output:
                page = fresh_page(browser, demo.local_url)
                page_screenshot(page, example, args.question, output)
                print(f"{output}: {question}")
                page.close()
            if args.views:
                page = fresh_page(browser, demo.local_url)
                for path in view_screenshots(page, question, args.views):
                    print(f"{path}: {question}, on the four examples joined")
            browser.close()
    finally:
        demo.close()


if __name__ == "__main__":
    main()
