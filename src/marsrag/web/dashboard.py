"""The ops dashboard page: the six loop metrics now and as daily series per workflow, the latest unsupported goals
and failures, and a panel per workflow running an experiment (:mod:`marsrag.metrics.experiment`: the arms, their
differences, the warnings).

Two routers: ``router`` serves the page (``GET /dashboard``), ``api_router`` its data as JSON
(``GET /api/metrics``, ``/api/metrics/daily``, ``/api/metrics/failures``). Both call the same library functions
as ``marsrag metrics`` and ``marsrag review`` (:mod:`marsrag.metrics`), so every figure agrees with the CLI.
Charts are server-side SVG (:mod:`marsrag.metrics.charts`): no script, nothing the page's CSP would refuse.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, Response

from marsrag.errors import InputError
from marsrag.experiments.text import difference_text, interval_text, value_text
from marsrag.metrics.compute import compute_metrics, metrics_by
from marsrag.metrics.definitions import DEFINITIONS, METRIC_NAMES, REPORTED_NAMES, Depth, LoopMetrics
from marsrag.metrics.experiment import ExperimentReport
from marsrag.metrics.experiment_service import read_report
from marsrag.metrics.failures import Failure, latest_failures
from marsrag.metrics.gaps import latest_gaps
from marsrag.metrics.review import (
    daily_metrics,
    day_text,
    day_window,
    days_between,
    metric_chart,
    metric_counts,
    metric_text,
    metric_value,
)
from marsrag.metrics.window import check_day
from marsrag.metrics.window import window as parse_window
from marsrag.views.viewmodel import StatusBadge, status_badge
from marsrag.web.backend import Backend
from marsrag.web.errors_doc import ERROR_RESPONSES
from marsrag.web.guards import backend_of
from marsrag.web.render import render
from marsrag.web.schemas import DailyMetrics, FailedTask, MetricsDocument

router = APIRouter(include_in_schema=False)
api_router = APIRouter(prefix="/api", tags=["metrics"], responses=ERROR_RESPONSES)

BackendDep = Annotated[Backend, Depends(backend_of)]
WorkflowQuery = Annotated[str | None, Query(max_length=200, description="Only runs of this workflow.")]
SinceQuery = Annotated[
    str | None, Query(max_length=64, description="7d, 12h, 2w, a date or an ISO datetime (1970-01-01..9000-12-31).")
]
UntilQuery = Annotated[
    str | None, Query(max_length=64, description="A date (its end) or an ISO datetime (1970-01-01..9000-12-31).")
]
#: Days in the dashboard's daily series, and the most the API gives at once.
DEFAULT_DAYS = 30
MAX_DAYS = 366
#: Failures listed on the page, and unsupported goals.
FAILURES_SHOWN = 20
GAPS_SHOWN = 10


#: A day in a query: ``YYYY-MM-DD`` only (a bare number would otherwise be read as a Unix timestamp).
EndQuery = Annotated[
    str | None,
    Query(
        pattern=r"^\d{4}-\d{2}-\d{2}$",
        description="The last day, YYYY-MM-DD (UTC, 1970-01-01..9000-12-31); default today.",
    ),
]


def series_days(end: str | None, days: int) -> tuple[date, ...]:
    """``days`` consecutive UTC days ending with the day ``end`` names (``YYYY-MM-DD``; default today).

    Raises:
        InputError: an ``end`` that is no calendar day, or one outside the supported range
            (:func:`marsrag.metrics.window.check_day`).
    """
    last = check_day(_day(end), field="end") if end is not None else datetime.now(UTC).date()
    return days_between(last - timedelta(days=days - 1), last)


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise InputError(f"end {text!r} is not a calendar day (YYYY-MM-DD)", field="end") from None


# -- the JSON ------------------------------------------------------------------------------------------------


@api_router.get(
    "/metrics",
    response_model=MetricsDocument,
    summary="The six loop metrics (the `marsrag metrics --format json` document)",
)
def metrics_json(
    backend: BackendDep,
    since: SinceQuery = None,
    until: UntilQuery = None,
    workflow: WorkflowQuery = None,
) -> dict[str, Any]:
    """Metric name -> ``{"value", "numerator", "denominator"}`` (session_depth: value, p50, max, sessions)."""
    chosen = parse_window(since, until)
    return compute_metrics(backend.store, chosen, workflow or None).to_dict()


@api_router.get(
    "/metrics/daily",
    response_model=DailyMetrics,
    summary="The six loop metrics per workflow and UTC day (null: no runs that day)",
)
def daily_json(
    backend: BackendDep,
    days: Annotated[int, Query(ge=1, le=MAX_DAYS, description="How many days, ending with `end`.")] = DEFAULT_DAYS,
    end: EndQuery = None,
    workflow: WorkflowQuery = None,
) -> dict[str, Any]:
    """``{"since", "until", "days": [dates], "workflows": {name: [the day's metrics document or null, ...]}}``.

    Each day's document is what ``marsrag metrics --since DAY --until DAY --workflow NAME --format json`` prints.
    """
    chosen = series_days(end, days)
    daily = daily_metrics(backend.store, chosen, workflow or None)
    span = day_window(chosen[0], chosen[-1])
    return {
        "since": span.since.isoformat() if span.since else None,
        "until": span.until.isoformat() if span.until else None,
        "days": [day.isoformat() for day in chosen],
        "workflows": {
            name: [None if day is None else day.to_dict() for day in values] for name, values in daily.items()
        },
    }


@api_router.get(
    "/metrics/failures", response_model=list[FailedTask], summary="The latest failed or partial tasks, newest first"
)
def failures_json(
    backend: BackendDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = FAILURES_SHOWN,
    workflow: WorkflowQuery = None,
    since: SinceQuery = None,
    until: UntilQuery = None,
) -> list[dict[str, Any]]:
    """Failed or partial tasks with their run's goal and workflow, the first error and a link to the task.

    The window and workflow are ``/api/metrics``' own (runs created in the window, of that workflow), so the
    failures listed are those of the runs the metrics count.
    """
    chosen = parse_window(since, until)
    return [failure.to_dict() for failure in latest_failures(backend.store, limit, chosen, workflow or None)]


# -- the page ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    """One metric in one scope: its value in words, what it is computed over, and whether it has no data."""

    text: str
    counts: str
    missing: bool


@dataclass(frozen=True)
class MetricRow:
    """A metric with its definition and one cell per scope (all workflows, then each workflow)."""

    name: str
    definition: str
    cells: tuple[Cell, ...]


@dataclass(frozen=True)
class Chart:
    """One metric's chart (SVG built and escaped by :mod:`marsrag.metrics.charts`) and its numbers per day."""

    name: str
    definition: str
    svg: str
    rows: tuple[tuple[str, tuple[str, ...]], ...]  # (day, the value per workflow)


@dataclass(frozen=True)
class FailureRow:
    """A failure with its badge."""

    failure: Failure
    badge: StatusBadge


@dataclass(frozen=True)
class ArmColumn:
    """An arm's heading in an experiment panel."""

    name: str
    loop_mode: str
    weight: float
    sessions: int


@dataclass(frozen=True)
class DifferenceRow:
    """One difference of an experiment panel, in words."""

    metric: str
    arm: str
    difference: str
    interval: str
    significant: bool
    needed: str
    flag: str


@dataclass(frozen=True)
class ExperimentPanel:
    """A workflow's experiment: per arm the metrics, the differences from the baseline, the checks and warning."""

    name: str
    workflow: str
    baseline: str
    arms: tuple[ArmColumn, ...]
    rows: tuple[tuple[str, tuple[str, ...]], ...]  # (metric, its value per arm)
    differences: tuple[DifferenceRow, ...]
    srm: str
    mismatch: bool
    warning: str | None


def experiment_panel(report: ExperimentReport) -> ExperimentPanel:
    """The panel of one report, from its JSON document (the figures ``marsrag experiment report`` prints)."""
    document = report.to_dict()
    experiment, arms = document["experiment"], document["arms"]
    metrics = [key for key in next(iter(arms.values())) if key not in ("sessions", "loop_mode")]
    differences = []
    for item in document["differences"]:
        metric, needed = item["metric"], item["sessions_needed"]
        more = item["more_sessions_needed"]
        differences.append(
            DifferenceRow(
                metric,
                item["arms"][0],
                difference_text(metric, item["difference"]),
                interval_text(metric, item["ci"]),
                item["significant"],
                "n/a" if needed is None else f"{needed}" + (f" ({more} more)" if more else ""),
                f"guardrail: {item['worse']} worse" if item["guardrail"] and item["worse"] else "",
            )
        )
    srm = experiment["srm"]
    return ExperimentPanel(
        experiment["name"],
        experiment["workflow"],
        experiment["baseline"],
        tuple(
            ArmColumn(name, config["loop_mode"], config["weight"], arms[name]["sessions"])
            for name, config in experiment["arms"].items()
        ),
        tuple((metric, tuple(value_text(metric, record[metric]) for record in arms.values())) for metric in metrics),
        tuple(differences),
        "no sessions yet" if srm["p_value"] is None else f"p = {srm['p_value']:.3g}",
        srm["mismatch"],
        experiment["warning"],
    )


@router.get("/dashboard", response_class=HTMLResponse)
def dashboard_page(
    request: Request,
    backend: BackendDep,
    workflow: WorkflowQuery = None,
    end: EndQuery = None,
    days: Annotated[int, Query(ge=1, le=MAX_DAYS)] = DEFAULT_DAYS,
) -> Response:
    """The six metrics, helpful_rate and unsupported_rate now (all history, per workflow), the six's daily charts,
    the experiments' panels, the latest unsupported goals and the latest failures."""
    store = backend.store
    chosen = workflow or None
    scopes: list[tuple[str, LoopMetrics]] = []
    if chosen is None:
        scopes.append(("All workflows", compute_metrics(store)))
        per_workflow = metrics_by(store, by=("workflow",))
        scopes += [(str(key[0]), per_workflow[key]) for key in sorted(per_workflow)]
    else:
        scopes.append((chosen, compute_metrics(store, workflow=chosen)))
    rows = tuple(
        MetricRow(
            name,
            DEFINITIONS[name],
            tuple(_cell(metrics, name) for _, metrics in scopes),
        )
        # The six, then the readers' helpful_rate and the operators' unsupported_rate (no daily charts: not drawn).
        for name in REPORTED_NAMES
    )
    day_list = series_days(end, days)
    daily = daily_metrics(store, day_list, chosen)
    charts = tuple(
        Chart(
            name,
            DEFINITIONS[name],
            metric_chart(f"chart-{name}", name, day_list, daily),
            tuple(
                (
                    day.isoformat(),
                    tuple(day_text(values[index], name) for values in daily.values()),
                )
                for index, day in enumerate(day_list)
            ),
        )
        for name in METRIC_NAMES
    )
    failures = tuple(
        FailureRow(failure, status_badge(failure.status))
        for failure in latest_failures(store, FAILURES_SHOWN, workflow=chosen)
    )
    gaps = tuple(latest_gaps(store, GAPS_SHOWN, workflow=chosen))
    experiments = tuple(
        experiment_panel(read_report(store, config))
        for name, config in backend.project.workflows.items()
        if config.experiment is not None and chosen in (None, name)
    )
    context = {
        "workflow": chosen,
        "workflows": _workflow_names(backend),
        "scopes": [name for name, _ in scopes],
        "rows": rows,
        "charts": charts,
        "series_names": list(daily),
        "first_day": day_list[0].isoformat(),
        "last_day": day_list[-1].isoformat(),
        "days": days,
        "failures": failures,
        "gaps": gaps,
        "experiments": experiments,
    }
    return render(request, "dashboard.html", context)


def _cell(metrics: LoopMetrics, name: str) -> Cell:
    """A metric for the "now" table: the value, then what it is over (the depth's p50 and max go with the count)."""
    record = getattr(metrics, name)
    if isinstance(record, Depth) and record.value is not None:
        return Cell(
            f"mean {record.value:.2f}", f"p50 {record.p50:g}, max {record.max}, {metric_counts(metrics, name)}", False
        )
    return Cell(metric_text(metrics, name), metric_counts(metrics, name), metric_value(metrics, name) is None)


def _workflow_names(backend: Backend) -> list[str]:
    """Workflows to filter by: those with stored runs and those of the loaded config, sorted."""
    return sorted(backend.store.workflow_names() | set(backend.project.workflows))
