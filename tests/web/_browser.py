"""Debian's headless Chromium for the browser tests, driven by Playwright (never a browser it would download).

Test modules take the ``browser`` fixture (module-scoped, from tests/web/conftest.py) and these constants.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page

REPO = Path(__file__).resolve().parents[2]
#: Screenshots land here (git-ignored).
ARTIFACTS = REPO / "test-artifacts" / "browser"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
#: Generous bound for every wait (a run, an action, a page load); nothing asserts on timing.
WAIT_MS = 30_000


@contextmanager
def chromium() -> Iterator[Any]:
    """Launch Chromium headless; skip without it, except under CI=true, where its absence fails the test."""
    if not Path(CHROMIUM).is_file():
        reason = f"{CHROMIUM} is missing: install Debian's chromium and chromium-driver packages to run browser tests"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason} (CI=true: the browser tests must run in CI)", pytrace=False)
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@dataclass
class Tab:
    """A browser page on one test's server, with the dialogs it saw and a screenshot helper."""

    page: Page
    base_url: str
    test_name: str
    app: Any
    dialogs: list[str] = field(default_factory=list)

    def open(self, path: str) -> None:
        """Load ``path`` of the test's server."""
        self.page.goto(self.base_url + path)

    def shot(self, step: str) -> Path:
        """Save a full-page screenshot as ``test-artifacts/browser/<test>-<step>.png``."""
        path = ARTIFACTS / f"{self.test_name}-{step}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def replay_left(self) -> int:
        """Scripted LLM outputs not used yet."""
        remaining: int = self.app.state.backend.runner.llm.remaining
        return remaining
