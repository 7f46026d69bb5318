"""The browser tests' shared fixtures: one headless Chromium per module and a fresh page on the served app."""

from __future__ import annotations

import pytest

from tests.support.ui import CHROMIUM, CHROMIUM_ARGS, served_app


@pytest.fixture(scope="module")
def browser():
    """Headless Debian chromium, driven by Playwright, for this module's tests."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    """A fresh page on the served app, ready for input."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(served_app(), wait_until="load")
    for box in ("#lb-paste textarea", "#lb-question textarea"):
        page.locator(box).wait_for(state="visible", timeout=30_000)
    yield page
    page.close()
