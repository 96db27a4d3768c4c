"""``GET /metrics`` and the Grafana dashboard over it: the figures are the library's, the CLI's and the hand-computed
history's; every metric the dashboard queries is exported by the live app.
"""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import create_engine, text

from marsrag.errors import StoreError
from marsrag.metrics.compute import compute_metrics, metrics_by
from marsrag.metrics.definitions import RATE_NAMES, REPORTED_RATE_NAMES, SPLITS, LoopMetrics
from marsrag.metrics.prometheus import (
    DEPTH_FAMILIES,
    LoopMetricsCollector,
    event_counts,
    family_names,
    overall_family,
    rate_family,
)
from marsrag.settings import resolve_settings
from marsrag.state import EVENT_NAMES
from marsrag.store import RunStore, open_store
from marsrag.web.app import create_app
from marsrag.web.settings import WebSettings
from tests.metrics.history import EXPECTED_ALL, EXPECTED_REVIEW, EXPECTED_SUPPORT, write_history
from tests.metrics.test_metrics_cli import marsrag
from tests.store.conftest import BACKENDS, postgres_admin, postgres_url  # noqa: F401 - shared fixtures
from tests.web._live_server import live_server
from tests.web.conftest import Site, answer

pytestmark = pytest.mark.crewai

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "marsrag-loop-metrics.json"
EXPECTED = {"support": EXPECTED_SUPPORT, "review": EXPECTED_REVIEW}
#: The Depth field (as in ``marsrag metrics --format json``) behind each session depth family.
DEPTH_FIELDS = {
    "marsrag_session_depth_mean": "value",
    "marsrag_session_depth_p50": "p50",
    "marsrag_session_depth_max": "max",
    "marsrag_sessions": "sessions",
}
METRIC_NAME = re.compile(r"\bmarsrag_[a-z0-9_]+")

Labels = tuple[tuple[str, str], ...]


@dataclass
class Scrape:
    """A parsed exposition: samples by name and labels, families' types and help texts."""

    samples: dict[str, dict[Labels, float]]
    types: dict[str, str]
    helps: dict[str, str]

    def by_workflow(self, name: str) -> dict[str, float]:
        """A per-workflow family's samples, keyed by workflow."""
        return {dict(labels)["workflow"]: value for labels, value in self.samples.get(name, {}).items()}

    def single(self, name: str) -> float | None:
        """The one unlabelled sample of a family (None when it has none)."""
        values = self.samples.get(name, {})
        assert set(values) <= {()}, name
        return values.get(())


def parse(exposition: str) -> Scrape:
    scrape = Scrape({}, {}, {})
    for family in text_string_to_metric_families(exposition):
        scrape.types[family.name] = family.type
        scrape.helps[family.name] = family.documentation
        for sample in family.samples:
            labels = tuple(sorted(sample.labels.items()))
            assert labels not in scrape.samples.setdefault(sample.name, {}), f"duplicate {sample.name}{labels}"
            scrape.samples[sample.name][labels] = sample.value
    return scrape


def figures_of(scrape: Scrape, workflow: str) -> dict[str, dict[str, Any]]:
    """One workflow's figures from a scrape, in the shape of ``marsrag metrics --format json``."""
    document: dict[str, dict[str, Any]] = {}
    for name in REPORTED_RATE_NAMES:
        family = rate_family(name)
        document[name] = {
            "value": scrape.by_workflow(family).get(workflow),
            "numerator": scrape.by_workflow(family + "_numerator")[workflow],
            "denominator": scrape.by_workflow(family + "_denominator")[workflow],
        }
    document["session_depth"] = {
        field: scrape.by_workflow(family).get(workflow) for family, field in DEPTH_FIELDS.items()
    }
    return document


def overall_figures_of(scrape: Scrape) -> dict[str, dict[str, Any]]:
    """All-history figures: the rates pooled over the workflows (sum / sum), the overall session depth."""
    document: dict[str, dict[str, Any]] = {}
    for name in REPORTED_RATE_NAMES:
        numerator = sum(scrape.by_workflow(rate_family(name) + "_numerator").values())
        denominator = sum(scrape.by_workflow(rate_family(name) + "_denominator").values())
        document[name] = {
            "value": numerator / denominator if denominator else None,
            "numerator": numerator,
            "denominator": denominator,
        }
    document["session_depth"] = {field: scrape.single(overall_family(family)) for family, field in DEPTH_FIELDS.items()}
    return document


def as_figures(metrics: LoopMetrics) -> dict[str, dict[str, Any]]:
    """The library's record in the same shape (the CLI's JSON, without the splits Prometheus does not export)."""
    splits = {split for split, _parts in SPLITS.values()}
    return {name: {k: v for k, v in record.items() if k not in splits} for name, record in metrics.to_dict().items()}


def same(actual: dict[str, dict[str, Any]], expected: dict[str, dict[str, Any]]) -> None:
    """Equal figure by figure: floats approximately, None (no sample) exactly.

    The splits are not exported; helpful_rate, where ``expected`` leaves it out, is empty (these histories have
    no rating).
    """
    splits = {split for split, _parts in SPLITS.values()}
    expected = {"helpful_rate": {"value": None, "numerator": 0, "denominator": 0}, **expected}
    expected = {name: {k: v for k, v in record.items() if k not in splits} for name, record in expected.items()}
    actual = {name: {k: v for k, v in record.items() if k not in splits} for name, record in actual.items()}
    assert set(actual) == set(expected)
    for name, record in expected.items():
        for key, value in record.items():
            got = actual[name][key]
            if value is None:
                assert got is None, (name, key, got)
            else:
                assert got == pytest.approx(value), (name, key, got, value)


def sql_event_counts(url: str) -> dict[str, int]:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(text("SELECT name, count(*) FROM events GROUP BY name")).all()
    finally:
        engine.dispose()
    return {str(name): int(count) for name, count in rows}


def exported_events(scrape: Scrape) -> dict[str, float]:
    return {dict(labels)["name"]: value for labels, value in scrape.samples["marsrag_loop_events_total"].items()}


@pytest.fixture
def history_db(tmp_path: Path) -> str:
    """A fresh SQLite store file holding the scripted history."""
    url = f"sqlite:///{tmp_path / 'history.db'}"
    with open_store(url) as opened:
        write_history(opened)
    return url


@pytest.fixture
def app_client() -> Iterator[Callable[..., TestClient]]:
    """Open apps (default composer LLM and sample config) over a store URL; closed at the end."""
    stack = ExitStack()

    def make(url: str, **settings: Any) -> TestClient:
        return stack.enter_context(TestClient(create_app(WebSettings(resolve_settings(db=url), **settings))))

    yield make
    stack.close()


def scrape_of(client: TestClient) -> Scrape:
    response = client.get("/metrics")
    assert response.status_code == 200, response.text
    return parse(response.text)


# -- /metrics on the scripted history -----------------------------------------------------------------------


def test_gauges_are_the_hand_computed_history_and_the_library(
    history_db: str, app_client: Callable[..., TestClient]
) -> None:
    """Every gauge per workflow equals EXPECTED_SUPPORT/EXPECTED_REVIEW and ``metrics_by``; null rates are absent."""
    scrape = scrape_of(app_client(history_db))
    with open_store(history_db) as opened:
        library = metrics_by(opened, by=("workflow",))
        overall = compute_metrics(opened)
    assert set(scrape.by_workflow("marsrag_sessions")) == {key[0] for key in library} == set(EXPECTED)
    for workflow, expected in EXPECTED.items():
        same(figures_of(scrape, workflow), expected)
        same(figures_of(scrape, workflow), as_figures(library[(workflow,)]))
    # review has no contract task: its rates (but downstream 0/1) have no sample, their counts are 0.
    for name in ("loop_schema_pass_rate", "loop_follow_rate", "repair_rate", "fallback_rate", "unsupported_rate"):
        assert "review" not in scrape.by_workflow(rate_family(name))
        assert scrape.by_workflow(rate_family(name) + "_denominator")["review"] == 0
    assert scrape.by_workflow("marsrag_downstream_action_rate")["review"] == 0.0
    # The knowledge base's gaps: 2 of support's 4 assessed first tasks had no support (r4's, unassessed, is out).
    assert scrape.by_workflow("marsrag_unsupported_rate") == {"support": 0.5}
    assert scrape.by_workflow("marsrag_unsupported_rate_numerator") == {"support": 2, "review": 0}
    assert scrape.by_workflow("marsrag_unsupported_rate_denominator") == {"support": 4, "review": 0}
    # Pooled over the workflows: the all-history figures, session depth from its own gauges.
    same(overall_figures_of(scrape), EXPECTED_ALL)
    same(overall_figures_of(scrape), as_figures(overall))
    # ... which the per-workflow depth gauges could not give: s1 has runs in both workflows.
    assert sum(scrape.by_workflow("marsrag_sessions").values()) == 4 != EXPECTED_ALL["session_depth"]["sessions"]


def test_event_counters_are_the_stored_events_per_name(history_db: str, app_client: Callable[..., TestClient]) -> None:
    """``marsrag_loop_events_total{name}`` is ``SELECT name, count(*)``, every event name present (0 when none)."""
    scrape = scrape_of(app_client(history_db))
    stored = sql_event_counts(history_db)
    assert stored == {"loop.action.followed": 1}
    assert exported_events(scrape) == {name: stored.get(name, 0) for name in EVENT_NAMES}
    assert scrape.types["marsrag_loop_events"] == "counter"
    assert "marsrag_loop_events_created" not in scrape.samples  # no creation time: the counts live in the store


def test_a_real_run_scrapes_as_its_stored_events_and_metrics(site_factory: Callable[..., Site]) -> None:
    """After real runs (replay LLM, one repaired answer) the scrape is the SQL counts and the library's metrics."""
    site = site_factory([answer(), answer(grip=None), answer(), answer(), answer(), answer(), answer()])
    site.start()
    site.start("Search results went stale after the reindex")
    scrape = scrape_of(site.client)
    stored = sql_event_counts(site.db)
    assert stored["loop.contract.validated"] >= 6 and stored["loop.contract.failed"] == 1
    assert exported_events(scrape) == {name: stored.get(name, 0) for name in EVENT_NAMES}
    with open_store(site.db) as opened:
        library = metrics_by(opened, by=("workflow",))
    assert list(library) == [("support_answer",)]
    same(figures_of(scrape, "support_answer"), as_figures(library[("support_answer",)]))
    assert scrape.by_workflow("marsrag_repair_rate_numerator") == {"support_answer": 1}


def test_the_cli_prints_the_same_figures(history_db: str, app_client: Callable[..., TestClient]) -> None:
    """``marsrag metrics [--workflow W] --format json`` as a process: the scrape's figures, per workflow and pooled."""
    scrape = scrape_of(app_client(history_db))
    for workflow in EXPECTED:
        cli = marsrag("metrics", "--db", history_db, "--workflow", workflow, "--format", "json")
        assert cli.returncode == 0, cli.stderr
        same(figures_of(scrape, workflow), json.loads(cli.stdout))
    everything = marsrag("metrics", "--db", history_db, "--format", "json")
    same(overall_figures_of(scrape), json.loads(everything.stdout))


# -- the endpoint -------------------------------------------------------------------------------------------


def test_the_endpoint_is_documented_tokened_off_loopback_and_typed(
    history_db: str, app_client: Callable[..., TestClient]
) -> None:
    """The exposition content type; in OpenAPI under ``metrics``; off loopback Prometheus sends the token."""
    token = "s3cret-" + "t" * 32
    client = app_client(history_db, host="0.0.0.0", token=token)
    assert client.get("/metrics").status_code == 401
    bearer = {"Authorization": f"Bearer {token}"}
    response = client.get("/metrics", headers=bearer)
    assert response.status_code == 200 and response.headers["content-type"] == CONTENT_TYPE_LATEST
    operation = client.get("/openapi.json", headers=bearer).json()["paths"]["/metrics"]["get"]
    assert operation["tags"] == ["metrics"]
    scrape = parse(response.text)
    assert sorted(scrape.types) == sorted(family_names())
    assert all(len(scrape.helps[name]) > 20 for name in scrape.types)
    assert {scrape.types[name] for name in family_names() if name != "marsrag_loop_events"} == {"gauge"}
    for name in RATE_NAMES:  # the definitions, as the CLI's help gives them
        assert name in scrape.helps[rate_family(name)] and " / " in scrape.helps[rate_family(name)]


def test_an_empty_store_exports_zero_events_and_no_rates(tmp_path: Path, app_client: Callable[..., TestClient]) -> None:
    """No runs: every event name at 0, no per-workflow sample, no session depth, zero sessions overall."""
    scrape = scrape_of(app_client(f"sqlite:///{tmp_path / 'empty.db'}"))
    assert exported_events(scrape) == dict.fromkeys(EVENT_NAMES, 0)
    assert set(scrape.samples) == {"marsrag_loop_events_total", "marsrag_overall_sessions"}
    assert scrape.single("marsrag_overall_sessions") == 0


def test_every_scrape_reads_the_database_so_every_process_agrees(
    tmp_path: Path, app_client: Callable[..., TestClient]
) -> None:
    """Two apps (as two server processes) over one database: history written behind their backs shows in both."""
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    first, second = app_client(url), app_client(url)
    assert scrape_of(first).by_workflow("marsrag_sessions") == {}
    with open_store(url) as opened:
        write_history(opened)
    scrapes = [scrape_of(first), scrape_of(second)]
    assert scrapes[0].samples == scrapes[1].samples
    same(figures_of(scrapes[0], "support"), EXPECTED_SUPPORT)
    # Each app has its own registry; the process-wide default one never holds the loop metrics.
    registries = [client.app.state.prometheus_registry for client in (first, second)]  # type: ignore[attr-defined]
    assert registries[0] is not registries[1] and REGISTRY not in registries
    assert REGISTRY.get_sample_value("marsrag_overall_sessions") is None


def test_an_unreadable_database_fails_the_scrape_with_503(
    history_db: str, app_client: Callable[..., TestClient]
) -> None:
    """A query that fails is a failed scrape (503, the store is unavailable), never partial numbers."""
    client = app_client(history_db)
    engine = create_engine(history_db)
    with engine.begin() as connection:
        connection.execute(text("DROP TABLE rollups"))  # what a scrape reads
    engine.dispose()
    response = client.get("/metrics")
    assert response.status_code == 503 and "# TYPE" not in response.text
    with open_store(history_db) as opened, pytest.raises(StoreError, match="cannot read the loop metrics"):
        list(LoopMetricsCollector(opened).collect())


# -- the collector on each backend --------------------------------------------------------------------------


@pytest.fixture(params=BACKENDS)
def history_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RunStore]:
    """The scripted history in a fresh SQLite file, then in a fresh PostgreSQL schema (``postgres_url``)."""
    url = f"sqlite:///{tmp_path / 'store.db'}" if request.param == "sqlite" else request.getfixturevalue("postgres_url")
    with open_store(url) as opened:
        write_history(opened)
        yield opened


def test_the_collector_gives_the_same_figures_on_each_backend(history_store: RunStore) -> None:
    """SQLite and PostgreSQL: the collector's samples over the history are the hand-computed figures."""
    store = history_store
    collector = LoopMetricsCollector(store)
    assert [family.name for family in collector.describe()] == family_names()  # registering queries nothing
    scrape = Scrape({}, {}, {})
    for family in collector.collect():
        for sample in family.samples:
            scrape.samples.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    for workflow, expected in EXPECTED.items():
        same(figures_of(scrape, workflow), expected)
    same(overall_figures_of(scrape), EXPECTED_ALL)
    assert (
        exported_events(scrape)
        == event_counts(store)
        == {name: int(name == "loop.action.followed") for name in EVENT_NAMES}
    )


# -- the Grafana dashboard ----------------------------------------------------------------------------------


def dashboard() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return document


def all_panels(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Every panel, including those inside collapsed rows."""
    found: list[dict[str, Any]] = []
    for panel in document["panels"]:
        found.append(panel)
        found.extend(panel.get("panels", []))
    return found


def expressions(document: dict[str, Any]) -> list[str]:
    """Every PromQL expression: panel targets and templating queries."""
    exprs = [target["expr"] for panel in all_panels(document) for target in panel.get("targets", [])]
    for variable in document["templating"]["list"]:
        if variable["type"] == "query":
            query = variable["query"]
            exprs.append(query["query"] if isinstance(query, dict) else query)
            exprs.append(variable.get("definition", ""))
    return [expr for expr in exprs if expr]


def test_the_dashboard_is_valid_and_every_panel_queries_something() -> None:
    """Valid JSON, a Grafana dashboard with a data source variable; every non-row panel has a target with an expr."""
    document = dashboard()
    assert document["schemaVersion"] >= 36 and document["uid"] and document["title"]
    variables = {variable["name"]: variable for variable in document["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    assert "label_values(marsrag_sessions, workflow)" in expressions(
        {"panels": [], "templating": {"list": [variables["workflow"]]}}
    )
    panels = [panel for panel in all_panels(document) if panel["type"] != "row"]
    assert len(panels) >= 12
    ids = [panel["id"] for panel in all_panels(document)]
    assert len(ids) == len(set(ids))
    for panel in panels:
        assert panel["targets"], panel["title"]
        assert all(target["expr"].strip() and target["refId"] for target in panel["targets"]), panel["title"]
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]


def test_every_metric_the_dashboard_queries_is_exported_by_the_live_app(history_db: str) -> None:
    """The real app on uvicorn, scraped over HTTP: each ``marsrag_*`` name in the dashboard is an exported sample,
    and every exported family is on the dashboard."""
    referenced = {name for expr in expressions(dashboard()) for name in METRIC_NAME.findall(expr)}
    with live_server(create_app(WebSettings(resolve_settings(db=history_db)))) as base_url:
        with urllib.request.urlopen(f"{base_url}/metrics", timeout=30) as response:
            assert response.status == 200 and response.headers["Content-Type"] == CONTENT_TYPE_LATEST
            scrape = parse(response.read().decode("utf-8"))
    exported = set(scrape.samples)
    assert referenced - exported == set(), "queried by the dashboard but not exported"
    assert exported - referenced == set(), "exported but on no panel"
    assert all(scrape.samples[name] for name in referenced)


#: The expression shapes of the dashboard whose figures the test recomputes from a scrape.
POOLED = re.compile(
    r"^sum\(max by \(workflow\) \((marsrag_\w+)_numerator\)\) / \(sum\(max by \(workflow\) \(\1_denominator\)\) > 0\)$"
)
OVERALL = re.compile(r"^max\((marsrag_overall_\w+)\)$")
PER_WORKFLOW = re.compile(r'^max by \(workflow\) \((marsrag_\w+)\{workflow=~"\$workflow"\}\)$')
EVENTS = re.compile(r"^max by \(name\) \((rate|increase)\(marsrag_loop_events_total\[\$__(rate_interval|range)\]\)\)$")


def test_the_dashboards_figures_are_the_clis(history_db: str, app_client: Callable[..., TestClient]) -> None:
    """Each panel expression evaluated on the scrape (all workflows selected) equals ``marsrag metrics``' figure."""
    scrape = scrape_of(app_client(history_db))
    cli = {
        workflow: json.loads(marsrag(*("metrics", "--db", history_db, "--format", "json"), *flag).stdout)
        for workflow, flag in ((None, ()), ("support", ("--workflow", "support")), ("review", ("--workflow", "review")))
    }
    fields = {rate_family(name): (name, "value") for name in REPORTED_RATE_NAMES} | {
        family: ("session_depth", field) for family, field in DEPTH_FIELDS.items()
    }
    checked = 0
    for expr in (t["expr"] for panel in all_panels(dashboard()) for t in panel.get("targets", [])):
        if pooled := POOLED.match(expr):
            name, _ = fields[pooled.group(1)]
            value = overall_figures_of(scrape)[name]["value"]
            assert value == pytest.approx(cli[None][name]["value"]), expr
        elif overall := OVERALL.match(expr):
            depth_family = "marsrag_" + overall.group(1).removeprefix("marsrag_overall_")
            name, field = fields[depth_family]
            assert scrape.single(overall.group(1)) == pytest.approx(cli[None][name][field]), expr
        elif per_workflow := PER_WORKFLOW.match(expr):
            family = per_workflow.group(1)
            name, field = fields.get(family) or (
                family.rsplit("_", 1)[0].removeprefix("marsrag_"),
                family.rsplit("_", 1)[1],
            )
            for workflow in EXPECTED:
                expected = cli[workflow][name][field]
                assert scrape.by_workflow(family).get(workflow) == (
                    None if expected is None else pytest.approx(expected)
                )
        else:
            assert EVENTS.match(expr), f"a dashboard expression this test cannot check: {expr}"
            continue
        checked += 1
    assert checked >= 20
    assert DEPTH_FAMILIES.keys() == DEPTH_FIELDS.keys()
