"""In real Chromium, with the page's CSP switched off (so only escaping stands between a payload and a run), no
hostile text from the store, the config or the query string runs: no dialog, ``window.__pwned`` stays unset,
no injected element exists, and the text is in the document. The weekly review file is opened the same way.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest
from playwright.sync_api import Browser, Page

from tests.security._hostile import HOSTILE_TASK, HOSTILE_WORKFLOW, IMG, SCRIPT, SVG, World, build_world
from tests.web._browser import WAIT_MS
from tests.web._live_server import live_server

pytestmark = [pytest.mark.browser, pytest.mark.crewai]

#: Run in the page: elements that could run code, and whether a payload ran.
PROBE = """() => {
    const handlers = [];
    for (const element of document.querySelectorAll("*")) {
        for (const attribute of element.attributes) {
            if (attribute.name.startsWith("on")) handlers.push(`${element.tagName} ${attribute.name}`);
        }
    }
    return {
        pwned: window.__pwned === undefined ? null : String(window.__pwned),
        elements: document.querySelectorAll("script, img, iframe, object, embed").length,
        handlers,
        javascriptUrls: [...document.querySelectorAll("[href], [src], [action]")]
            .map((e) => e.getAttribute("href") || e.getAttribute("src") || e.getAttribute("action"))
            .filter((url) => /^\\s*javascript:/i.test(url)),
        text: document.documentElement.textContent,
    };
}"""


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    """The hostile store (built once for the module, in a thread of its own: CrewAI refuses to run its crews in
    the test's thread once Playwright's sync API has an event loop there)."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(build_world, tmp_path_factory.mktemp("hostile")).result()


@pytest.fixture(scope="module")
def base_url(world: World, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The real app over the hostile store, served by uvicorn on loopback."""
    from marsrag.settings import resolve_settings
    from marsrag.web.app import create_app
    from marsrag.web.settings import WebSettings

    replay = tmp_path_factory.mktemp("replay") / "none.jsonl"
    replay.write_text("", encoding="utf-8")
    app = create_app(
        WebSettings(resolve_settings(db=world.db, config=world.config, llm=f"replay:{replay}"), run_threads=1)
    )
    with live_server(app) as url:
        yield url


def visit(browser: Browser, url: str) -> tuple[dict[str, object], list[str]]:
    """Load ``url`` with CSP bypassed; the probe's findings and any dialogs opened."""
    context = browser.new_context(bypass_csp=True, java_script_enabled=True)
    try:
        page: Page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        dialogs: list[str] = []

        def on_dialog(dialog: object) -> None:
            dialogs.append(getattr(dialog, "message", "?"))
            dialog.dismiss()  # type: ignore[attr-defined]

        page.on("dialog", on_dialog)
        page.goto(url, wait_until="load")
        found: dict[str, object] = page.evaluate(PROBE)
        return found, dialogs
    finally:
        context.close()


def assert_inert(browser: Browser, url: str, expected: list[str]) -> None:
    found, dialogs = visit(browser, url)
    assert dialogs == [], (url, dialogs)
    assert found["pwned"] is None, (url, found["pwned"])
    assert (found["elements"], found["handlers"], found["javascriptUrls"]) == (0, [], []), (url, found)
    for text in expected:
        assert text in str(found["text"]), (url, text)


def test_the_probe_sees_a_payload_that_runs(browser: Browser, tmp_path: Path) -> None:
    """The control: the same payloads unescaped do run here (dialog, flag, elements), so the probe can fail."""
    raw = tmp_path / "raw.html"
    raw.write_text(f"<!doctype html><title>raw</title><p>{SCRIPT}</p><p>{IMG}</p><p>{SVG}</p>", encoding="utf-8")
    found, dialogs = visit(browser, raw.as_uri())
    assert dialogs and found["pwned"] == "1" and found["elements"] and found["handlers"]


def test_pages_with_hostile_text_run_nothing(browser: Browser, base_url: str, world: World) -> None:
    """Run, session, runs list and dashboard pages (charts and failures included)."""
    first, second, machine = world.runs
    assert_inert(browser, f"{base_url}/runs/{first}", [f"Goal {SCRIPT}", HOSTILE_TASK, HOSTILE_WORKFLOW])
    assert_inert(browser, f"{base_url}/runs/{second}", [f"Goal {IMG}"])
    assert_inert(browser, f"{base_url}/runs/{machine}", [SCRIPT])
    for session in world.sessions:
        assert_inert(browser, f"{base_url}/sessions/{quote(session, safe='')}", [session])
    assert_inert(browser, f"{base_url}/", [f"Goal {SCRIPT}", HOSTILE_WORKFLOW])
    assert_inert(browser, f"{base_url}/dashboard", [HOSTILE_WORKFLOW, HOSTILE_TASK])
    assert_inert(browser, f"{base_url}/dashboard?{urlencode({'workflow': HOSTILE_WORKFLOW})}", [HOSTILE_WORKFLOW])


@pytest.mark.parametrize("payload", [SCRIPT, IMG, SVG])
def test_reflected_parameters_run_nothing(payload: str, browser: Browser, base_url: str) -> None:
    """Query strings echoed in the sign-in, ask and dashboard forms, and unknown ids on error pages."""
    assert_inert(browser, f"{base_url}/login?{urlencode({'next': '/' + payload})}", [])
    assert_inert(browser, f"{base_url}/ask?{urlencode({'session_id': payload})}", [])
    assert_inert(browser, f"{base_url}/dashboard?{urlencode({'workflow': payload})}", [payload])
    assert_inert(browser, f"{base_url}/runs/{quote(payload, safe='')}", [])


def test_the_weekly_review_file_runs_nothing(browser: Browser, world: World, tmp_path: Path) -> None:
    """The standalone HTML report opened from disk (no CSP there at all): hostile names stay text."""
    from datetime import UTC, datetime

    from marsrag.metrics.review_service import review

    year, week, _ = datetime.now(UTC).isocalendar()
    out = tmp_path / "review.html"
    review(db=world.db, week=f"{year}-W{week:02d}", out=str(out))
    assert_inert(browser, out.as_uri(), [HOSTILE_WORKFLOW, HOSTILE_TASK, f"Goal {SCRIPT}"])
