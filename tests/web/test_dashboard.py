"""The ops dashboard through the ASGI test client, over a SQLite file holding the scripted metrics history.

The page shows the hand-computed figures of tests/metrics/history.py; its JSON (``/api/metrics``,
``/api/metrics/daily``) is exactly what ``marsrag metrics --format json`` prints and what the library returns.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi import FastAPI

from marsrag.metrics.compute import compute_metrics
from marsrag.metrics.definitions import METRIC_NAMES
from marsrag.metrics.window import window
from marsrag.state import Retrieval, Support, SupportTerm
from tests.metrics.history import D2, EXPECTED_ALL, EXPECTED_D2, EXPECTED_REVIEW, EXPECTED_SUPPORT, approx
from tests.metrics.history import write_history as write_scripted_history
from tests.metrics.test_failures import add_run
from tests.web.conftest import Site, answer

METRICS = METRIC_NAMES  # the six (helpful_rate and unsupported_rate have no chart)
ROW = re.compile(r'<tr data-metric="(?P<name>[a-z_]+)">(?P<body>.*?)</tr>', re.S)
CELL = re.compile(
    r'<td class="num metric-cell[^"]*" data-scope="(?P<scope>[^"]*)">'
    r'<span class="metric-value">(?P<value>[^<]*)</span> '
    r'<span class="metric-counts">(?P<counts>[^<]*)</span></td>'
)


def ensure_api(app: FastAPI) -> None:
    """Include the dashboard's JSON router unless the app already does (it is wired into create_app separately)."""
    from marsrag.web import dashboard

    if not any(getattr(route, "path", None) == "/api/metrics" for route in app.routes):
        app.include_router(dashboard.api_router)


@pytest.fixture
def history(site_factory: Callable[..., Site]) -> Site:
    """A running app over a store holding the scripted history."""
    site = site_factory()
    write_scripted_history(site.backend.store)
    ensure_api(site.client.app)  # type: ignore[arg-type]
    return site


def marsrag_json(*args: str) -> Any:
    """``marsrag metrics ... --format json`` as a real process, parsed."""
    proc = subprocess.run(
        [sys.executable, "-m", "marsrag", "metrics", *args, "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "120"},
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def now_table(page: str) -> dict[str, dict[str, tuple[str, str]]]:
    """The "Now" table: metric -> scope -> (value text, counts text)."""
    table = page.split('<table class="metrics-now">', 1)[1].split("</table>", 1)[0]
    return {
        row["name"]: {cell["scope"]: (cell["value"], cell["counts"]) for cell in CELL.finditer(row["body"])}
        for row in ROW.finditer(table)
    }


def shown(record: dict[str, Any]) -> tuple[str, str]:
    """How the page shows a metric record: (value, counts)."""
    if "sessions" in record:
        if record["value"] is None:
            return "n/a", "0 sessions"
        sessions = f"{record['sessions']} session{'' if record['sessions'] == 1 else 's'}"
        return f"mean {record['value']:.2f}", f"p50 {record['p50']:g}, max {record['max']}, {sessions}"
    value = "n/a" if record["value"] is None else f"{record['value']:.1%}"
    return value, f"{record['numerator']}/{record['denominator']}"


def test_the_page_lists_the_six_metrics_with_the_hand_computed_values(history: Site) -> None:
    """All history and each workflow: value and numerator/denominator (n/a for an empty denominator); then
    helpful_rate, empty here (no one rated an answer)."""
    response = history.client.get("/dashboard")
    assert response.status_code == 200
    table = now_table(response.text)
    assert list(table) == [*METRICS, "helpful_rate", "unsupported_rate"]
    assert set(table["helpful_rate"].values()) == {("n/a", "0/0")}
    # r1 and r5 of the four runs whose first task was assessed (r4, unassessed, is left out): all in support.
    assert table["unsupported_rate"] == {
        "All workflows": ("50.0%", "2/4"),
        "review": ("n/a", "0/0"),
        "support": ("50.0%", "2/4"),
    }
    for name in METRICS:
        assert list(table[name]) == ["All workflows", "review", "support"]
        assert table[name]["All workflows"] == shown(EXPECTED_ALL[name]), name
        assert table[name]["support"] == shown(EXPECTED_SUPPORT[name]), name
        assert table[name]["review"] == shown(EXPECTED_REVIEW[name]), name
    assert table["loop_schema_pass_rate"]["All workflows"] == ("57.1%", "4/7")
    assert table["session_depth"]["All workflows"] == ("mean 1.67", "p50 1, max 3, 3 sessions")
    assert table["repair_rate"]["review"] == ("n/a", "0/0")
    assert table["downstream_action_rate"]["review"] == ("0.0%", "0/1")  # a real 0%, not n/a


def test_the_page_has_a_chart_per_metric_with_its_numbers(history: Site) -> None:
    """Six inline SVG charts, one line per workflow, and a table of the same daily figures as the API."""
    page = history.client.get("/dashboard", params={"end": "2026-11-03", "days": 30}).text
    assert page.count("<svg") == len(METRICS)
    for name in METRICS:
        figure = page.split(f'<figure class="chart" data-metric="{name}"', 1)[1].split("</figure>", 1)[0]
        assert f'id="chart-{name.replace("_", "-")}"' in figure and 'role="img"' in figure
        assert figure.count('class="chart-series"') == 2 and "<title" in figure
        assert "<details" in figure and f"Numbers for {name}" in figure
    figure = page.split('data-metric="loop_schema_pass_rate"', 2)[2].split("</figure>", 1)[0]
    assert '<tr><th scope="row">2026-11-02</th><td class="num">–</td><td class="num">50.0% (2/4)</td></tr>' in figure
    assert '<tr><th scope="row">2026-11-03</th><td class="num">n/a (0/0)</td><td class="num">66.7% (2/3)</td></tr>' in (
        figure
    )
    assert "Daily, 2026-10-05 to 2026-11-03 (UTC)" in page


def test_failures_link_to_their_runs(history: Site) -> None:
    """The latest failure (r1's partial t2) links to the task on its run page, with its badge and error."""
    page = history.client.get("/dashboard").text
    section = page.split('id="failures"', 1)[1]
    items = re.findall(r'<li class="failure" data-run-id="([^"]+)" data-task-id="([^"]+)"', section)
    assert items == [("r1", "t2")]
    assert '<a class="failure-link" href="/runs/r1#task-t2">t2<span class="failure-run"> · run r1</span></a>' in section
    assert 'data-status="partial"' in section and "Partial</span>" in section
    assert "grip is missing" in section and "goal of r1" in section
    run_page = history.client.get("/runs/r1")
    assert run_page.status_code == 200 and 'id="task-t2"' in run_page.text


def test_unsupported_goals_link_to_their_runs_newest_first(history: Site) -> None:
    """The runs whose first task was not supported (r5, then r1) link to that task, with the goal and what was
    missing; weakly supported and unassessed runs are not listed, and a workflow without any says so."""
    store = history.backend.store
    r1 = store.get_tasks("r1")[0]
    missing = Support(
        level="none",
        score=0.1,
        best=1,
        terms=[SupportTerm(term="tyre", word="tyres", asked_in="goal", chunks=0, weight=3.0, found_in=[])],
    )
    retrieval = r1.retrieval.model_copy(update={"support": missing})  # type: ignore[union-attr]
    store.save_task(r1.model_copy(update={"retrieval": retrieval}))
    page = history.client.get("/dashboard").text
    section = page.split('id="gaps"', 1)[1].split("</section>", 1)[0]
    assert re.findall(r'<li class="gap" data-run-id="([^"]+)"', section) == ["r5", "r1"]
    assert '<a class="gap-link" href="/runs/r5#task-t1">run r5</a>' in section
    assert "goal of r1" in section and "Missing: tyres" in section
    assert "goal of r3" not in section and "goal of r4" not in section
    review = history.client.get("/dashboard", params={"workflow": "review"}).text
    assert "No unsupported goals in review." in review.split('id="gaps"', 1)[1]
    assert history.client.get("/runs/r5").status_code == 200


def test_the_workflow_filter(history: Site) -> None:
    """?workflow= keeps one workflow: its column, its lines, its failures."""
    page = history.client.get("/dashboard", params={"workflow": "review", "end": "2026-11-03"}).text
    table = now_table(page)
    assert {name: table[name] for name in METRICS} == {
        name: {"review": shown(EXPECTED_REVIEW[name])} for name in METRICS
    }
    assert page.count('class="chart-series"') == len(METRICS)
    assert "No failed or partial tasks in review." in page
    assert '<option value="review" selected>review</option>' in page
    support = history.client.get("/dashboard", params={"workflow": "support"}).text
    assert now_table(support)["fallback_rate"] == {"support": ("25.0%", "1/4")}
    assert 'href="/runs/r1#task-t2"' in support


@pytest.mark.parametrize(
    ("query", "cli", "expected"),
    [
        ({}, [], EXPECTED_ALL),
        ({"workflow": "support"}, ["--workflow", "support"], EXPECTED_SUPPORT),
        ({"workflow": "review"}, ["--workflow", "review"], EXPECTED_REVIEW),
        (
            {"since": "2026-11-03", "until": "2026-11-03"},
            ["--since", "2026-11-03", "--until", "2026-11-03"],
            EXPECTED_D2,
        ),
    ],
)
def test_api_metrics_equals_the_cli_and_the_library(
    history: Site, query: dict[str, str], cli: list[str], expected: dict[str, Any]
) -> None:
    """/api/metrics, ``marsrag metrics --format json`` and compute_metrics give the same document, exactly."""
    response = history.client.get("/api/metrics", params=query)
    assert response.status_code == 200
    api = response.json()
    assert api == marsrag_json("--db", history.db, *cli)
    library = compute_metrics(
        history.backend.store, window(query.get("since"), query.get("until")), query.get("workflow")
    )
    assert api == library.to_dict()
    assert api == approx(expected)


def test_the_daily_series_is_the_cli_per_day(history: Site) -> None:
    """Each day of /api/metrics/daily is ``marsrag metrics --since DAY --until DAY --workflow W``; no runs: null."""
    response = history.client.get("/api/metrics/daily", params={"end": "2026-11-04", "days": 4})
    assert response.status_code == 200
    daily = response.json()
    assert daily["days"] == ["2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04"]
    assert (daily["since"], daily["until"]) == ("2026-11-01T00:00:00+00:00", "2026-11-05T00:00:00+00:00")
    assert list(daily["workflows"]) == ["review", "support"]
    for workflow, values in daily["workflows"].items():
        assert len(values) == 4
        for day, value in zip(daily["days"], values, strict=True):
            if value is not None:
                assert value == marsrag_json("--db", history.db, "--since", day, "--until", day, "--workflow", workflow)
    assert [v is None for v in daily["workflows"]["support"]] == [True, False, False, True]
    assert [v is None for v in daily["workflows"]["review"]] == [True, True, False, True]
    assert daily["workflows"]["review"][2] == approx(EXPECTED_REVIEW)
    one = history.client.get("/api/metrics/daily", params={"end": "2026-11-03", "days": 1, "workflow": "support"})
    day = compute_metrics(history.backend.store, window("2026-11-03", "2026-11-03"), "support").to_dict()
    assert one.json()["workflows"] == {"support": [day]}


def test_api_failures_and_bad_parameters(history: Site) -> None:
    """/api/metrics/failures lists the failure with its link; unreadable parameters are 422 with a reason."""
    failures = history.client.get("/api/metrics/failures").json()
    assert [(f["run_id"], f["task_id"], f["link"], f["message"]) for f in failures] == [
        ("r1", "t2", "/runs/r1#task-t2", "grip is missing")
    ]
    windows = (({"since": "2026-11-02"}, ["r1"]), ({"until": "2026-11-01"}, []), ({"until": "2026-11-02"}, ["r1"]))
    for span, listed in windows:
        found = history.client.get("/api/metrics/failures", params=span).json()
        assert [f["run_id"] for f in found] == listed, span  # the window of /api/metrics: runs created in it
    assert history.client.get("/api/metrics/failures", params={"since": "soon"}).status_code == 422
    bad = history.client.get("/api/metrics", params={"since": "yesterday"})
    assert bad.status_code == 422 and "'yesterday' is not a time" in bad.json()["detail"]
    inverted = history.client.get("/api/metrics", params={"since": "2026-11-05", "until": "2026-11-01"})
    assert inverted.status_code == 422 and "before" in inverted.json()["detail"]
    assert history.client.get("/api/metrics/daily", params={"days": 0}).status_code == 422
    assert history.client.get("/api/metrics/daily", params={"days": 367}).status_code == 422
    page = history.client.get("/dashboard", params={"end": "not-a-date"})
    assert page.status_code == 422 and "text/html" in page.headers["content-type"]


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("/api/metrics/daily", {"end": "9999-12-31"}, "end"),
        ("/api/metrics/daily", {"end": "0001-01-01"}, "end"),
        ("/api/metrics", {"until": "9999-12-31"}, "until"),
        ("/api/metrics", {"since": "0001-01-01T00:00:00+01:00"}, "since"),
        ("/api/metrics/failures", {"until": "9999-12-31T23:00:00-05:00"}, "until"),
    ],
)
def test_out_of_range_dates_are_422_naming_the_field(
    history: Site, path: str, params: dict[str, str], field: str
) -> None:
    """Dates outside the supported range (1970..9000) are a 422 JSON reason with the field, never a 500."""
    reply = history.client.get(path, params=params)
    assert reply.status_code == 422, reply.text
    body = reply.json()
    assert body["error"] == "invalid_input" and body["field"] == field
    assert "out of range: times from 1970-01-01 to 9000-12-31" in body["detail"]


@pytest.mark.parametrize("end", ["0", "1735689600", "2026-02-30", "2026-1-5"])
def test_an_end_that_is_no_calendar_day_is_422(history: Site, end: str) -> None:
    """``end`` is ``YYYY-MM-DD``: a bare number (which pydantic would read as a Unix timestamp) or a day that
    does not exist is refused, naming the field."""
    reply = history.client.get("/api/metrics/daily", params={"end": end})
    assert reply.status_code == 422, reply.text
    assert reply.json()["field"] == "end"


def test_the_dashboard_refuses_an_out_of_range_end(history: Site) -> None:
    """``/dashboard?end=9999-12-31`` is a 422 page saying why, not a 500."""
    page = history.client.get("/dashboard", params={"end": "9999-12-31"})
    assert page.status_code == 422 and "text/html" in page.headers["content-type"]
    assert "out of range" in page.text


def test_goals_and_workflow_names_are_escaped(history: Site) -> None:
    """A ``<script>`` goal in the failures list and markup in a workflow name (table, legend, select) are text."""
    at = D2 + timedelta(days=1)
    goal = "<script>alert('goal')</script>"
    workflow = '<img src=x onerror="alert(1)">'
    add_run(history.backend.store, "evil", at, [("t1", "failed", "<b>loud</b>")], goal=goal, workflow=workflow)
    evil = history.backend.store.get_tasks("evil")[0]
    unsupported = Retrieval(query=goal, support=Support(level="none", score=0.0))
    history.backend.store.save_task(evil.model_copy(update={"retrieval": unsupported}))
    response = history.client.get("/dashboard", params={"end": at.date().isoformat()})
    page = response.text
    assert "<script" not in page and "<img" not in page and "<b>loud" not in page
    assert "&lt;script&gt;alert(&#39;goal&#39;)&lt;/script&gt;" in page  # autoescaped failure goal
    gaps = page.split('id="gaps"', 1)[1].split("</section>", 1)[0]
    assert "&lt;script&gt;alert(&#39;goal&#39;)&lt;/script&gt;" in gaps  # and unsupported goal
    assert "&lt;b&gt;loud&lt;/b&gt;" in page
    assert 'data-series="&lt;img src=x onerror=&quot;alert(1)&quot;&gt;"' in page  # escaped by the chart module
    assert re.search(r"\sstyle=", page) is None  # the CSP allows no inline style
    csp = response.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "style-src 'self'" in csp and "unsafe-inline" not in csp
    api = history.client.get("/api/metrics/failures").json()
    assert api[0]["goal"] == goal and api[0]["link"] == "/runs/evil#task-t1"


def test_an_empty_store_and_the_nav_link(site_factory: Callable[..., Site]) -> None:
    """No runs: every value n/a, no lines, no failures; every page links to the dashboard."""
    site = site_factory()
    page = site.client.get("/dashboard").text
    table = now_table(page)
    assert all(table[name]["All workflows"][0] == "n/a" for name in METRICS)
    assert "No runs in these 30 days." in page and "No failed or partial tasks." in page
    assert "No unsupported goals." in page
    assert page.count("<svg") == len(METRICS) and 'class="chart-series"' not in page
    assert f"to {datetime.now(UTC).date().isoformat()} (UTC)" in page  # the series ends today (UTC) by default
    assert '<a href="/dashboard">Dashboard</a>' in site.client.get("/").text


def runs_show_failures(db: str, *run_ids: str) -> set[tuple[str, str, str]]:
    """(run, task, status) of every task ``marsrag runs show RUN --format json`` reports failed or partial."""
    found: set[tuple[str, str, str]] = set()
    for run_id in run_ids:
        proc = subprocess.run(
            [sys.executable, "-m", "marsrag", "runs", "show", run_id, "--db", db, "--format", "json"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        for task in json.loads(proc.stdout)["tasks"]:
            if task["validation"]["status"] in ("failed", "partial"):
                found.add((run_id, task["task_id"], task["validation"]["status"]))
    return found


def test_the_failures_panel_lists_what_runs_show_reports_failed_after_operator_actions(
    site_factory: Callable[..., Site],
) -> None:
    """Real runs (replay LLM): a task failed on every attempt, one an operator repair made valid, one still failed
    after a failed operator repair, one partial after a regenerate; the panel and its JSON list exactly the tasks
    ``marsrag runs show`` reports failed or partial, with their status, newest first."""
    failing = answer(grip=None, payoff=None, reinforce=None, loop=None)  # the hook alone fails the contract
    regenerated_answer = answer(grip=None)  # four sections of five: partial
    site = site_factory([failing] * 6 + [answer()] + [failing] * 2 + [regenerated_answer] + [answer()] * 6)
    ensure_api(site.client.app)  # type: ignore[arg-type]
    first = site.start()  # diagnose, recommend, plan: each failed on its answer and its repair
    assert site.client.post(f"/api/runs/{first}/tasks/diagnose/repair").json()["validation"]["status"] == "valid"
    assert site.client.post(f"/api/runs/{first}/tasks/recommend/repair").json()["validation"]["status"] == "failed"
    regenerated = site.client.post(f"/api/runs/{first}/tasks/plan/regenerate").json()
    assert regenerated["validation"]["status"] == "partial"
    second = site.start("Search results went stale after the reindex")
    expected = runs_show_failures(site.db, first, second)
    assert (first, "diagnose") not in {(run, task) for run, task, _ in expected}
    assert {(first, "recommend", "failed"), (first, "plan", "partial")} <= expected

    listed = {(f["run_id"], f["task_id"], f["status"]) for f in site.client.get("/api/metrics/failures").json()}
    assert listed == expected
    section = site.client.get("/dashboard").text.split('id="failures"', 1)[1]
    shown_items = set(re.findall(r'data-run-id="([^"]+)" data-task-id="([^"]+)" data-status="([^"]+)"', section))
    assert shown_items == expected and "No failed or partial tasks" not in section
