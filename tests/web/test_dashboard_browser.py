"""The ops dashboard in a real headless Chromium (Debian's /usr/bin/chromium, driven by Playwright for Python).

A fresh app over a SQLite file holding the scripted metrics history (tests/metrics/history.py, plus a failure
with a hostile goal) is served by uvicorn on a free loopback port. The page must show the six metric names,
draw each chart as an SVG with a real size, let nothing break its strict CSP, and fit a 390px phone screen.
Screenshots go to ``test-artifacts/browser/dashboard-*.png`` (git-ignored).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import ExitStack, suppress
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, Response, expect
from playwright.sync_api import Error as PlaywrightError

from tests.metrics.history import D2, write_history
from tests.metrics.test_failures import add_run
from tests.web._browser import ARTIFACTS, WAIT_MS
from tests.web._live_server import live_server

pytestmark = [pytest.mark.browser, pytest.mark.crewai]

METRICS = (
    "loop_schema_pass_rate",
    "loop_follow_rate",
    "downstream_action_rate",
    "session_depth",
    "repair_rate",
    "fallback_rate",
)
#: The series end on the history's second day, so the charts have lines.
DASHBOARD = "/dashboard?end=2026-11-04"
HOSTILE_GOAL = "<script>document.title='pwned'</script> checkout is slow"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """The app over the scripted history (and one hostile failure), served on loopback; yields its base URL."""
    from marsrag.settings import resolve_settings
    from marsrag.web import dashboard
    from marsrag.web.app import create_app
    from marsrag.web.settings import WebSettings

    replay = tmp_path / "replay.jsonl"
    replay.write_text("", encoding="utf-8")
    app = create_app(
        WebSettings(resolve_settings(db=f"sqlite:///{tmp_path / 'runs.db'}", llm=f"replay:{replay}"), run_threads=1)
    )
    if not any(getattr(route, "path", None) == "/api/metrics" for route in app.routes):
        app.include_router(dashboard.api_router)
    store = app.state.backend.store
    write_history(store)
    add_run(store, "x1", D2 + timedelta(hours=5), [("t1", "failed", "payoff is empty")], goal=HOSTILE_GOAL)
    with live_server(app) as base_url:
        yield base_url


@pytest.fixture
def open_page(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Any]:
    """Open a page with context options; collects console errors and saves a final screenshot."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    name = re.sub(r"[^\w.-]+", "_", request.node.name)
    with ExitStack() as stack:

        def start(**options: Any) -> tuple[Page, list[str]]:
            context = browser.new_context(**options)
            stack.callback(context.close)
            page = context.new_page()
            page.set_default_timeout(WAIT_MS)
            problems: list[str] = []

            def on_console(message: ConsoleMessage) -> None:
                # A failed load shows up as its response below (with its URL); the browser's own favicon probe
                # is the one 404 expected.
                if message.type in ("error", "warning") and not message.text.startswith("Failed to load resource"):
                    problems.append(f"{message.type}: {message.text}")

            def on_response(response: Response) -> None:
                if response.status >= 400 and not response.url.endswith("/favicon.ico"):
                    problems.append(f"{response.status} {response.url}")

            page.on("console", on_console)
            page.on("response", on_response)
            page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
            stack.callback(_final_shot, page, ARTIFACTS / f"{name}-end.png")
            return page, problems

        yield start


def _final_shot(page: Page, path: Path) -> None:
    with suppress(PlaywrightError):
        page.screenshot(path=str(path), full_page=True)


def check_charts(page: Page) -> None:
    """Six figures, each an SVG with a real bounding box, an accessible name and at least one line or dot."""
    figures = page.locator("figure.chart")
    expect(figures).to_have_count(len(METRICS))
    assert [figure.get_attribute("data-metric") for figure in figures.all()] == list(METRICS)
    for figure in figures.all():
        svg = figure.locator("svg.chart-svg")
        expect(svg).to_have_count(1)
        svg.scroll_into_view_if_needed()
        box = svg.bounding_box()
        assert box is not None and box["width"] > 100 and box["height"] > 50, box
        assert svg.get_attribute("role") == "img"
        title = svg.locator("title").first.text_content() or ""
        assert figure.get_attribute("data-metric") in title
        assert svg.locator("circle.chart-point").count() > 0


def assert_fits_the_width(page: Page, width: int) -> None:
    """The page is not wider than the window, and the window is ``width`` wide (not zoomed out to fit the page)."""
    measured = page.evaluate(
        """() => ({
            scrollWidth: document.scrollingElement.scrollWidth,
            innerWidth: window.innerWidth,
            wide: [...document.querySelectorAll("body *")]
                .filter((e) => e.clientWidth > 0 && e.scrollWidth > e.clientWidth)
                .map((e) => [e.tagName.toLowerCase(), ...e.classList].join(".")
                    + ` ${e.scrollWidth}/${e.clientWidth}px`),
        })"""
    )
    detail = f"the dashboard is {measured['scrollWidth']}px wide on a {width}px screen: {measured['wide']}"
    assert int(measured["innerWidth"]) == width, detail
    assert int(measured["scrollWidth"]) <= width, detail


def test_the_dashboard_shows_the_metrics_charts_and_failures(served: str, open_page: Any) -> None:
    """Desktop: the six names visible with their values, six sized SVG charts, failures linking to their runs."""
    page, problems = open_page(viewport={"width": 1280, "height": 900})
    page.goto(served + "/")
    page.get_by_role("link", name="Dashboard").click()
    page.wait_for_url(re.compile(r"/dashboard$"))
    page.goto(served + DASHBOARD)
    expect(page.locator("h1")).to_have_text("Loop metrics")
    for name in METRICS:
        expect(page.locator(f'tr[data-metric="{name}"] .metric-name')).to_be_visible()
        expect(page.locator(f'tr[data-metric="{name}"] .metric-name')).to_have_text(name)
        expect(page.locator(f'figure.chart[data-metric="{name}"] figcaption h3')).to_be_visible()
    all_cell = page.locator('tr[data-metric="loop_schema_pass_rate"] td[data-scope="All workflows"]')
    expect(all_cell.locator(".metric-value")).to_have_text("50.0%")  # 4 of 8 with x1's failed task
    expect(all_cell.locator(".metric-counts")).to_have_text("4/8")
    check_charts(page)

    failures = page.locator("li.failure")
    expect(failures).to_have_count(2)
    first = failures.first
    expect(first.locator(".failure-goal")).to_have_text(HOSTILE_GOAL)  # shown as text, never run
    assert page.title() != "pwned"
    expect(first.locator(".badge")).to_have_text("✗ Failed")
    page.screenshot(path=str(ARTIFACTS / "dashboard-desktop.png"), full_page=True)

    # The knowledge base's gaps: unsupported_rate beside the others, and the goals it lacked, newest first.
    unsupported = page.locator('tr[data-metric="unsupported_rate"] td[data-scope="All workflows"]')
    expect(unsupported.locator(".metric-value")).to_have_text("50.0%")
    expect(unsupported.locator(".metric-counts")).to_have_text("2/4")
    gaps = page.locator("li.gap")
    expect(gaps).to_have_count(2)
    expect(gaps.first.locator(".gap-goal")).to_have_text("goal of r5")
    expect(gaps.first.locator("a.gap-link")).to_have_attribute("href", "/runs/r5#task-t1")

    failures.nth(1).locator("a.failure-link").click()
    page.wait_for_url(re.compile(r"/runs/r1#task-t2$"))
    expect(page.locator('section.task[data-task-id="t2"]')).to_be_visible()
    assert problems == [], problems  # no CSP violation, no script error


def test_the_dashboard_fits_a_phone_and_the_filter_works(served: str, open_page: Any) -> None:
    """At 390x844 nothing overflows sideways; the charts still have a size; the workflow filter narrows the page."""
    width = 390
    page, problems = open_page(
        viewport={"width": width, "height": 844}, device_scale_factor=2, is_mobile=True, has_touch=True
    )
    page.goto(served + DASHBOARD)
    for name in METRICS:
        expect(page.locator(f'tr[data-metric="{name}"] .metric-name')).to_be_visible()
    check_charts(page)
    assert_fits_the_width(page, width)
    page.screenshot(path=str(ARTIFACTS / "dashboard-phone.png"), full_page=True)

    page.locator("select#workflow-filter").select_option("review")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url(re.compile(r"/dashboard\?workflow=review$"))
    expect(page.locator("h1")).to_have_text("Loop metrics: review")
    expect(page.locator("table.metrics-now thead th")).to_have_text(["Metric", "review"])
    expect(page.locator('tr[data-metric="repair_rate"] .metric-value')).to_have_text("n/a")
    expect(page.locator("#failures .empty")).to_have_text("No failed or partial tasks in review.")
    assert_fits_the_width(page, width)
    assert problems == [], problems
