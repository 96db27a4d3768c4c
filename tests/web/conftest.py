"""Web fixtures: the real app over a real SQLite file and a replay LLM, driven through the ASGI test client."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, suppress
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from playwright.sync_api import Browser, Dialog
from playwright.sync_api import Error as PlaywrightError

from tests.contract.samples import CONTENT
from tests.web._browser import ARTIFACTS, WAIT_MS, Tab
from tests.web._live_server import live_server

#: The keyword arguments of ``site_factory`` that are settings flags (the rest are the web server's own).
SETTINGS_FLAGS = ("config", "llm", "db", "base_url", "broker")

CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def answer(**changes: Any) -> str:
    """A valid contract answer (JSON), with fields changed or (None) removed."""
    return json.dumps({k: v for k, v in {**CONTENT, **changes}.items() if v is not None})


def csrf_of(client: TestClient, page: str = "/ask") -> str:
    """Load a page (setting the CSRF cookie) and return the token its forms carry."""
    response = client.get(page)
    found = CSRF.search(response.text)
    assert found, f"no CSRF token on {page}"
    return found.group(1)


class Site:
    """A running app: its test client, settings and helpers to wait for background runs."""

    def __init__(self, client: TestClient, db: str) -> None:
        self.client = client
        self.db = db

    @property
    def backend(self) -> Any:
        return self.client.app.state.backend  # type: ignore[attr-defined]

    def wait(self) -> None:
        """Wait until every queued run has finished."""
        assert self.backend.executor.wait(timeout=60), "a background run did not finish"

    def start(self, goal: str = "Checkout latency breached its SLO", **body: Any) -> str:
        """Start a run through the API, wait for it, return its id."""
        response = self.client.post("/api/runs", json={"goal": goal, **body})
        assert response.status_code == 202, response.text
        self.wait()
        run_id: str = response.json()["run_id"]
        return run_id


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's headless Chromium, shared by a module's tests (each test opens its own context)."""
    from tests.web._browser import chromium

    with chromium() as launched:
        yield launched


@pytest.fixture
def site_factory(tmp_path: Path) -> Iterator[Callable[..., Site]]:
    """Make a running app over a fresh SQLite file whose replay LLM answers ``outputs`` (texts or steps) in order."""
    from marsrag.settings import resolve_settings
    from marsrag.web.app import create_app
    from marsrag.web.settings import WebSettings

    stack = ExitStack()
    count = 0

    def make(outputs: Sequence[str | dict[str, Any]] | None = None, **settings: Any) -> Site:
        nonlocal count
        count += 1
        replay = tmp_path / f"replay-{count}.jsonl"
        # An output text, or a whole script step (its latency, finish reason...).
        steps = [item if isinstance(item, dict) else {"output": item} for item in outputs or []]
        replay.write_text("".join(json.dumps(step) + "\n" for step in steps), encoding="utf-8")
        db = f"sqlite:///{tmp_path}/site-{count}.db"
        flags: dict[str, Any] = {"db": db, "llm": f"replay:{replay}"}
        flags.update((name, settings.pop(name)) for name in list(settings) if name in SETTINGS_FLAGS)
        app = create_app(WebSettings(resolve_settings(**flags), **{"run_threads": 1, **settings}))
        client = stack.enter_context(TestClient(app))
        return Site(client, db)

    yield make
    stack.close()


@pytest.fixture
def site(site_factory: Callable[..., Site]) -> Site:
    """A running app whose LLM answers every call of a few runs validly."""
    return site_factory([answer()] * 12)


@pytest.fixture
def ui(browser: Browser, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[..., Tab]]:
    """Start a server whose replay LLM answers with ``outputs``, and open a page on it (context options apply).

    Everything is closed at the end of the test: the page's context first, then the server.
    """
    from marsrag.settings import resolve_settings
    from marsrag.web.app import create_app
    from marsrag.web.settings import WebSettings

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    test_name = re.sub(r"[^\w.-]+", "_", request.node.name)
    with ExitStack() as stack:
        started: list[Tab] = []

        def start(outputs: Sequence[str | dict[str, Any]], **context_options: Any) -> Tab:
            folder = tmp_path / f"server-{len(started)}"
            folder.mkdir()
            replay = folder / "replay.jsonl"
            # An output text, or a whole script step (its streaming rate, latency...).
            steps = [item if isinstance(item, dict) else {"output": item} for item in outputs]
            replay.write_text("".join(json.dumps(step) + "\n" for step in steps), encoding="utf-8")
            settings = WebSettings(
                resolve_settings(db=f"sqlite:///{folder / 'runs.db'}", llm=f"replay:{replay}"), run_threads=1
            )
            app = create_app(settings)
            base_url = stack.enter_context(live_server(app))
            context = browser.new_context(**context_options)
            stack.callback(context.close)
            page = context.new_page()
            page.set_default_timeout(WAIT_MS)
            tab = Tab(page=page, base_url=base_url, test_name=test_name, app=app)

            def on_dialog(dialog: Dialog) -> None:
                tab.dialogs.append(f"{dialog.type}: {dialog.message}")
                dialog.dismiss()

            page.on("dialog", on_dialog)
            stack.callback(_final_shot, tab)
            started.append(tab)
            return tab

        yield start


def _final_shot(tab: Tab) -> None:
    # The page as the test left it: on a failure this is the screenshot to look at.
    with suppress(PlaywrightError):
        tab.shot("end")
