"""The README's screenshot: the app with the default checkpoint answering an example, the explorer open.

Serves the app on 127.0.0.1, picks the Korean Jikji example in headless Debian Chromium (Playwright
through ``executable_path``, so no browser download), asks one of its suggested questions (the second by
default), opens the attention explorer and saves the whole page.

    python scripts/screenshot.py                 # writes docs/screenshot.png
    python scripts/screenshot.py --output /tmp/page.png
"""

from __future__ import annotations

import argparse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from littlebird.app.examples import find_example  # noqa: E402
from littlebird.app.ui import build_demo  # noqa: E402

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", default=None, help="default: assets/littlebird-qa")
    parser.add_argument("--example", default="ko-jikji")
    parser.add_argument("--question", type=int, default=1, help="which of the example's suggested questions")
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "screenshot.png")
    args = parser.parse_args(argv)

    from playwright.sync_api import sync_playwright

    demo = build_demo(args.checkpoint)
    demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True, ssr_mode=False)
    example = find_example(args.example)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(demo.local_url, wait_until="load")
            page.locator("#lb-example input").click()
            page.get_by_role("option", name=example.label).click()
            page.locator("#lb-suggestions label").nth(args.question).click()
            page.wait_for_function("q => document.querySelector('#lb-question textarea').value === q",
                                   arg=example.questions[args.question].question)
            page.locator("#lb-ask").click()
            page.locator("#lb-document mark").first.wait_for(timeout=120_000)
            page.locator("#lb-explorer").get_by_text("Attention explorer").first.click()
            page.wait_for_function(
                "() => (document.querySelector('#lb-plot-blocks .gtitle')?.textContent ?? '').includes('layer')",
                timeout=120_000)
            page.wait_for_timeout(1500)  # let plotly finish drawing
            args.output.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(args.output), full_page=True)
            browser.close()
    finally:
        demo.close()
    print(f"{args.output}: {example.questions[args.question].question}")


if __name__ == "__main__":
    main()
