"""Fixtures shared by the real-browser tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from browser_support import CHROMIUM, CHROMIUM_ARGS


@pytest.fixture(scope="module")  # per module: Playwright must not outlive it (asyncio)
def browser() -> Iterator[Any]:
    """Debian's Chromium driven by Playwright — never a downloaded browser."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: apt-get install chromium (scripts/setup.sh does)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield chromium
        finally:
            chromium.close()
