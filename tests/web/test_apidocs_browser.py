"""The API documentation pages in a real headless Chromium with the network cut off but for the test server.

Every request the page makes is routed through the test: one to the loopback server goes on, anything else is
aborted and recorded. ``/docs`` must list the API's operations and ``/redoc`` its reference, with no request
leaving loopback, no failed load and no Content-Security-Policy violation. Screenshots go to
``test-artifacts/browser/apidocs-*.png`` (git-ignored).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, Route, expect
from playwright.sync_api import Error as PlaywrightError

from tests.web._browser import ARTIFACTS, WAIT_MS
from tests.web._live_server import live_server

pytestmark = [pytest.mark.browser, pytest.mark.crewai]

#: ReDoc's sidebar always shows Redocly's logo from its CDN (no option turns it off); the page's policy refuses
#: the load before any request is made, and ReDoc then hides the image. The one refusal expected.
REDOC_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The app over an empty SQLite store, served on loopback; yields its base URL."""
    from marsrag.settings import resolve_settings
    from marsrag.web.app import create_app
    from marsrag.web.settings import WebSettings

    folder = tmp_path_factory.mktemp("apidocs")
    app = create_app(WebSettings(resolve_settings(db=f"sqlite:///{folder / 'runs.db'}"), run_threads=1))
    with live_server(app) as base_url:
        yield base_url


class Offline:
    """A page whose requests reach the test server only; what else it tried and what went wrong, recorded."""

    def __init__(self, browser: Browser, base_url: str) -> None:
        self.base_url = base_url
        self.context = browser.new_context()
        self.left_loopback: list[str] = []
        self.problems: list[str] = []
        self.refused: list[str] = []
        self.context.route("**/*", self._route)
        self.page: Page = self.context.new_page()
        self.page.set_default_timeout(WAIT_MS)
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda error: self.problems.append(f"page error: {error}"))
        self.page.on("response", self._response)

    def _route(self, route: Route) -> None:
        url = route.request.url
        if url.startswith(self.base_url + "/"):
            route.continue_()
        else:
            self.left_loopback.append(url)
            route.abort("internetdisconnected")

    def _console(self, message: ConsoleMessage) -> None:
        # A refused request shows up in left_loopback, a failed load as its response; the rest is the page's.
        if message.type != "error" or message.text.startswith("Failed to load resource"):
            return
        if REDOC_LOGO in message.text and "Content Security Policy" in message.text:
            self.refused.append(REDOC_LOGO)
        else:
            self.problems.append(f"console: {message.text}")

    def _response(self, response: Any) -> None:
        if response.status >= 400 and not response.url.endswith("/favicon.ico"):
            self.problems.append(f"{response.status} {response.url}")

    def close(self, name: str) -> None:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        with suppress(PlaywrightError):
            self.page.screenshot(path=str(ARTIFACTS / f"apidocs-{name}.png"), full_page=False)
        self.context.close()


@pytest.fixture
def offline(browser: Browser, served: str, request: pytest.FixtureRequest) -> Iterator[Offline]:
    """An offline page on the test server (screenshot saved at the end)."""
    tab = Offline(browser, served)
    yield tab
    tab.close(request.node.name.removeprefix("test_"))


def test_swagger_ui_lists_the_operations_offline(offline: Offline) -> None:
    """/docs renders Swagger UI from local files: the operations of /api/runs show, nothing leaves loopback."""
    page = offline.page
    response = page.goto(offline.base_url + "/docs")
    assert response is not None and response.status == 200
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("MarsRAG")
    operations = page.locator(".opblock-summary-path")
    expect(operations.first).to_be_visible()
    paths = set(operations.all_inner_texts())
    assert {"/api/runs", "/api/runs/{run_id}"} <= {path.replace("\u200b", "") for path in paths}, paths
    # Open one operation: its parameters and responses render (the try-it-out part of the viewer works).
    page.locator(".opblock-summary-path", has_text="/api/runs/{run_id}").first.click()
    expect(page.locator(".opblock-body .parameters").first).to_be_visible()
    assert offline.left_loopback == [] and offline.problems == [], (offline.left_loopback, offline.problems)


def test_redoc_renders_the_reference_offline(offline: Offline) -> None:
    """/redoc renders ReDoc from local files with no Google Fonts: the API title and an operation show."""
    page = offline.page
    response = page.goto(offline.base_url + "/redoc")
    assert response is not None and response.status == 200
    expect(page.locator("h1").first).to_contain_text("MarsRAG")
    expect(page.locator("[data-section-id^='operation/']").first).to_be_visible()
    assert page.locator("link[href*='fonts.googleapis']").count() == 0
    assert offline.left_loopback == [] and offline.problems == [], (offline.left_loopback, offline.problems)
    # The logo's load was refused by the policy (not by the network being off) and the image is gone.
    assert offline.refused == [REDOC_LOGO]
    expect(page.locator(f"img[src='{REDOC_LOGO}']")).to_have_count(0)


def _assets(page: Page) -> list[str]:
    return list(page.evaluate("() => performance.getEntriesByType('resource').map(entry => entry.name)"))


def test_the_docs_pages_load_only_this_servers_files(offline: Offline) -> None:
    """Every file the two pages loaded (scripts, styles, the OpenAPI document) came from the test server.

    Resource timing lists ReDoc's refused logo too (an attempt the policy stopped): the one other entry allowed.
    """
    page = offline.page
    seen: list[str] = []
    for path in ("/docs", "/redoc"):
        page.goto(offline.base_url + path)
        page.wait_for_load_state("networkidle")
        seen += _assets(page)
    elsewhere = [url for url in seen if not url.startswith(offline.base_url + "/") and url != REDOC_LOGO]
    assert seen and elsewhere == [], elsewhere
    assert any(url.endswith("/openapi.json") for url in seen), seen
    assert offline.left_loopback == [], offline.left_loopback


def test_the_viewers_licences_ship_beside_them() -> None:
    """The vendored bundles carry their licences (and the README naming their packages and checksums)."""
    vendor = Path(__file__).resolve().parents[2] / "src" / "marsrag" / "web" / "static" / "vendor"
    for name in ("swagger-ui/LICENSE", "swagger-ui/NOTICE", "redoc/LICENSE", "README.md"):
        assert (vendor / name).is_file(), name
