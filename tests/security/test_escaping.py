"""Hostile text in goals, session ids, every Loop Contract section, workflow and task names and failures is shown
as text everywhere: run, session and runs pages, the dashboard (tables, failures, SVG charts), error pages,
reflected query parameters, and the weekly review as HTML and Markdown. Every page carries a strict CSP.

The checks parse each document as a browser would: the payload must be in its text, and nothing in its markup
may run (no script or img tag, no ``on*`` attribute, no URL that is not local). test_escaping_browser.py proves
the same in Chromium.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest
from fastapi.testclient import TestClient
from markdown_it import MarkdownIt

from tests.security._hostile import (
    BROKEN,
    HOSTILE_TASK,
    HOSTILE_WORKFLOW,
    IMG,
    JS_URL,
    PAYLOADS,
    SCRIPT,
    SECTIONS,
    SVG,
    TEMPLATE,
    World,
    assert_shown_as_text,
    build_world,
    injected_markup,
    text_of,
)
from tests.security._routes import endpoints, reading

pytestmark = pytest.mark.crewai

#: FastAPI's own interactive docs (Swagger UI and ReDoc, scripts from a CDN): not our templates, no CSP of ours.
THIRD_PARTY_PAGES = {"/docs", "/redoc"}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    """The hostile store (built once for the module: it takes a few CrewAI runs)."""
    return build_world(tmp_path_factory.mktemp("hostile"))


@pytest.fixture(scope="module")
def client(world: World, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """The real app over the hostile store and config."""
    from marsrag.settings import resolve_settings
    from marsrag.web.app import create_app
    from marsrag.web.settings import WebSettings

    replay = tmp_path_factory.mktemp("replay") / "none.jsonl"
    replay.write_text("", encoding="utf-8")
    app = create_app(
        WebSettings(resolve_settings(db=world.db, config=world.config, llm=f"replay:{replay}"), run_threads=1)
    )
    with TestClient(app) as opened:
        yield opened


def page(client: TestClient, url: str, status: int = 200) -> str:
    response = client.get(url)
    assert response.status_code == status, (url, response.status_code)
    assert response.headers["content-type"].startswith("text/html"), url
    return response.text


def test_the_markup_check_catches_injection() -> None:
    """The checks themselves: raw payloads are flagged, escaped ones pass (so the tests below can fail)."""
    from html import escape

    for payload in (SCRIPT, IMG, SVG):
        assert injected_markup(f"<p>{payload}</p>") != [], payload
        assert injected_markup(f"<p>{escape(payload)}</p>") == []
    assert injected_markup(f'<a href="{JS_URL}">x</a>') != []
    assert injected_markup('<a href="//evil.example/">x</a>') != []
    with pytest.raises(AssertionError):
        assert_shown_as_text(f"<p>{SCRIPT}</p>", [SCRIPT], "raw")
    with pytest.raises(AssertionError, match="not shown"):
        assert_shown_as_text("<p>nothing</p>", [TEMPLATE], "absent")


def test_run_pages_show_every_hostile_field_as_text(client: TestClient, world: World) -> None:
    """Goal, sections (cards, summary, next action), raw failed output, task and workflow names, session link."""
    first, second, machine = world.runs
    html = page(client, f"/runs/{first}")
    assert_shown_as_text(html, [f"Goal {SCRIPT}", HOSTILE_TASK, HOSTILE_WORKFLOW, BROKEN, *SECTIONS.values()], "run 1")
    assert f"/sessions/{quote(world.sessions[0], safe='')}" in text_of(html), "the session link, one path segment"
    html = page(client, f"/runs/{second}")
    assert_shown_as_text(html, [f"Goal {IMG} {TEMPLATE}", *SECTIONS.values()], "run 2")
    html = page(client, f"/runs/{machine}")
    assert_shown_as_text(html, [f"Facts {SVG} {JS_URL}", f"- {SCRIPT}\n- {IMG}"], "machine run")


def test_session_pages_show_hostile_session_ids_and_goals_as_text(client: TestClient, world: World) -> None:
    """The session id in the heading and the ask link, the goals and next actions of its runs."""
    goals = (f"Goal {SCRIPT}", f"Goal {IMG} {TEMPLATE}", f"Facts {SVG} {JS_URL}")
    for session, goal in zip(world.sessions, goals, strict=True):
        html = page(client, f"/sessions/{quote(session, safe='')}")
        assert_shown_as_text(html, [session, goal], f"session {session!r}")


def test_the_runs_list_shows_hostile_goals_and_workflows_as_text(client: TestClient) -> None:
    """Goals and workflow names in the table."""
    html = page(client, "/")
    assert_shown_as_text(html, [f"Goal {SCRIPT}", f"Goal {IMG} {TEMPLATE}", HOSTILE_WORKFLOW], "runs list")


def test_the_dashboard_shows_hostile_names_as_text_in_tables_charts_and_failures(client: TestClient) -> None:
    """Workflow names in the filter, the tables and the SVG charts; hostile task names and goals in the failures."""
    html = page(client, "/dashboard")
    assert_shown_as_text(html, [HOSTILE_WORKFLOW, HOSTILE_TASK, f"Goal {SCRIPT}"], "dashboard")
    assert html.count("<svg") >= 6, "the charts are drawn (their labels are part of what is checked)"
    filtered = page(client, "/dashboard?" + urlencode({"workflow": HOSTILE_WORKFLOW}))
    assert_shown_as_text(filtered, [HOSTILE_WORKFLOW, HOSTILE_TASK], "dashboard for the hostile workflow")


@pytest.mark.parametrize("payload", PAYLOADS)
def test_reflected_parameters_are_text(payload: str, client: TestClient) -> None:
    """Query strings and unknown ids echoed in forms and error pages stay text."""
    cases = [
        (f"/login?{urlencode({'next': '/' + payload})}", 200, "/" + payload),
        (f"/ask?{urlencode({'session_id': payload})}", 200, payload),
        (f"/dashboard?{urlencode({'workflow': payload})}", 200, payload),
    ]
    for url, status, shown in cases:
        assert_shown_as_text(page(client, url, status), [shown], url)
    # Unknown ids are quoted in the 404's reason (non-printing characters escaped): nothing may run.
    for url in (f"/runs/{quote(payload, safe='')}", f"/sessions/{quote(payload, safe='')}"):
        response = client.get(url)
        assert response.status_code == 404 and injected_markup(response.text) == [], url
        assert "<" not in payload or payload not in response.text, url


def test_api_documents_with_hostile_text_are_json(client: TestClient, world: World) -> None:
    """The API never answers hostile text as HTML (a browser would not render it)."""
    for url in ("/api/runs", f"/api/runs/{world.runs[0]}", "/api/metrics/failures", "/api/metrics"):
        response = client.get(url)
        assert response.status_code == 200 and response.headers["content-type"] == "application/json", url
    assert SCRIPT in client.get(f"/api/runs/{world.runs[0]}").json()["goal"]


def test_every_page_carries_a_strict_csp(client: TestClient, world: World) -> None:
    """Every HTML answer of ours (errors included): scripts and connections from this server only (the run page's
    live.js), no inline script, no framing, nosniff."""
    values = {"run_id": world.runs[0], "task_id": "x", "session_id": quote(world.sessions[0], safe=""), "action": "x"}
    urls = [e.path for e in reading(endpoints(client.app, values)) if e.template not in THIRD_PARTY_PAGES]  # type: ignore[arg-type]
    urls += ["/runs/nope", "/?page=0", "/no/such/page"]
    checked = 0
    for url in urls:
        response = client.get(url)
        if not response.headers.get("content-type", "").startswith("text/html"):
            continue
        checked += 1
        policy = {
            directive.split()[0]: directive.split()[1:]
            for directive in response.headers.get("content-security-policy", "").split(";")
            if directive.strip()
        }
        assert policy.get("default-src") == ["'none'"], (url, policy)
        assert policy.get("script-src") == ["'self'"] and policy.get("connect-src") == ["'self'"], (url, policy)
        assert policy.get("frame-ancestors") == ["'none'"] and policy.get("base-uri") == ["'none'"], url
        assert policy.get("form-action") == ["'self'"], url
        assert not any("unsafe" in value for values_ in policy.values() for value in values_), (url, policy)
        assert response.headers.get("x-content-type-options") == "nosniff", url
    assert checked >= 8, checked


def _week_of_today() -> str:
    year, week, _ = datetime.now(UTC).isocalendar()
    return f"{year}-W{week:02d}"


def test_the_weekly_review_html_shows_hostile_text_as_text(world: World, tmp_path: Path) -> None:
    """The standalone report: workflow and task names and goals escaped in tables, charts and failures."""
    from marsrag.metrics.review_service import review

    out = tmp_path / "review.html"
    html = review(db=world.db, week=_week_of_today(), out=str(out))
    assert out.read_text(encoding="utf-8") == html
    assert_shown_as_text(html, [HOSTILE_WORKFLOW, HOSTILE_TASK, f"Goal {SCRIPT}"], "review.html")
    assert "<svg" in html


def test_the_weekly_review_markdown_keeps_hostile_text_inert(world: World, tmp_path: Path) -> None:
    """The Markdown has no raw markup, and rendered (CommonMark, raw HTML allowed) it shows the text, runs nothing."""
    from marsrag.metrics.review_service import review

    markdown = review(db=world.db, week=_week_of_today(), out=str(tmp_path / "review.md"))
    for payload in (SCRIPT, IMG, SVG, HOSTILE_TASK, HOSTILE_WORKFLOW):
        assert payload not in markdown, payload
    rendered = MarkdownIt("commonmark").enable("table").render(markdown)
    assert_shown_as_text(rendered, [HOSTILE_WORKFLOW, HOSTILE_TASK, f"Goal {SCRIPT}"], "review.md rendered")
    assert all(line.count("|") >= 2 or "|" not in line for line in markdown.splitlines()), "a table row broke"
