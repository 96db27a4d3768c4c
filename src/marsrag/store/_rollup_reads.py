"""The metrics' read models answered from the rollups: whole UTC days from the counters, partial days from rows.

All history is summed from the all-time rows of ``rollups`` (one per workflow, task and counter, whatever the
history); a window's whole days from its day rows (a few per workflow, day and counter). Where ``since`` or
``until`` falls inside a day, the shorter part of that day is counted from the raw rows with the reference SQL
of :mod:`marsrag.store._metrics_sql`, which only looks at the runs of that part (on PostgreSQL with each run's
facts probed, see :func:`_edge_counts`), and added or taken away (see :func:`split`). The result is the
reference's, to the count (``marsrag metrics --verify`` checks it on a live store).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from functools import cache
from typing import Any

from sqlalchemy import Connection, Date, String, and_, bindparam, func, or_, select
from sqlalchemy.sql import ColumnElement, Select

import marsrag.store._metrics_sql as _metrics_sql
from marsrag.store._metrics_sql import Ranked, Span
from marsrag.store._rollups import ALL_TIME, DEPTH_PREFIX, EVENT_PREFIX, EVERY, FEEDBACK_COUNTERS, SUPPORT_COUNTERS
from marsrag.store._rows import as_utc
from marsrag.store.queries import GroupedCounts, GroupKey, LoopCounts, MetricTotals, OutcomeCount
from marsrag.store.schema import rollups

#: The rollup counters that are fields of :class:`LoopCounts` (the others: depth, events, partial ones).
LOOP_FIELDS = frozenset(
    ("executions", "first_valid", "repaired", "transitions", "fallbacks", "completed", "offering", "followed")
    + ("downstream", "followed_edited", *FEEDBACK_COUNTERS, *SUPPORT_COUNTERS)
)


@dataclass(frozen=True)
class Days:
    """Whole UTC days ``first`` (inclusive) to ``last`` (exclusive); None: unbounded (both: all history)."""

    first: date | None
    last: date | None


@dataclass(frozen=True)
class Edge:
    """Part of a day counted from the raw rows: added to the whole days' counts (``sign`` 1) or taken from them (-1)."""

    span: Span
    sign: int


def split(window: Span) -> tuple[Days | None, list[Edge]]:
    """A window as its whole days (None: none) and the parts of its partial days to count from raw rows.

    A partial day at an edge is counted from its shorter part: the part inside the window, added to the whole
    days; or the part outside it, with the day itself among the whole days, taken away (so an edge costs at most
    half a day of raw rows, whatever the time of day). Every counter is a count of rows of one day, so the
    difference is exact. A window shorter than that (both edges in one day, or nearly) is counted from raw rows.
    """
    since = as_utc(window.since) if window.since is not None else None
    until = as_utc(window.until) if window.until is not None else None
    first = last = None
    edges = []
    if since is not None:
        first = since.date()
        if not _midnight(since):
            after = _start_of(first + timedelta(days=1))
            if after - since <= since - _start_of(first):
                first += timedelta(days=1)
                edges.append(Edge(Span(since, after), 1))
            else:
                edges.append(Edge(Span(_start_of(first), since), -1))
    if until is not None:
        last = until.date()
        if not _midnight(until):
            after = _start_of(last + timedelta(days=1))
            if until - _start_of(last) <= after - until:
                edges.append(Edge(Span(_start_of(last), until), 1))
            else:
                last += timedelta(days=1)
                edges.append(Edge(Span(until, after), -1))
    if first is not None and last is not None and first >= last:
        assert since is not None and until is not None
        return None, ([Edge(Span(since, until), 1)] if since < until else [])
    return Days(first, last), edges


def _midnight(moment: datetime) -> bool:
    return moment.time() == time(0)


def _start_of(on: date) -> datetime:
    return datetime.combine(on, time(0), tzinfo=UTC)


def _summed(
    connection: Connection, days: Days, keys: Sequence[ColumnElement[Any]], *conditions: ColumnElement[bool]
) -> list[Any]:
    """``SELECT keys, counter, sum(n) FROM rollups`` over the days, grouped by the keys and the counter."""
    statement = (
        select(*keys, rollups.c.counter, func.sum(rollups.c.n).label("n"))
        .where(*conditions, *_on(*_bounded(days)))
        .group_by(*keys, rollups.c.counter)
    )
    return [row for row in connection.execute(statement, _params(days, None)).mappings() if row["n"]]


def loop_counts(
    connection: Connection,
    window: Span,
    workflow: str | None,
    by: Sequence[GroupKey],
    *,
    experiment: str | None = None,
) -> GroupedCounts:
    """The metrics' counts per group (see :func:`marsrag.store._metrics_sql.loop_counts`), from the rollups.

    Grouped by arm or not, one read of the same rows: a per-arm read costs what a per-workflow one does.
    """
    counts: dict[tuple[Any, ...], LoopCounts] = defaultdict(LoopCounts)
    days, edges = split(window)
    if days is not None:
        width = len(by)
        statement = _counts_read(tuple(by), workflow is not None, experiment is not None, *_bounded(days))
        for row in connection.execute(statement, _params(days, workflow, experiment)):
            counter, n = row[width], row[width + 1]
            if not n:
                continue
            _count(counts[_key(row[:width], by)], counter, int(n))
    for edge in edges:
        for key, part in _edge_counts(connection, edge.span, workflow, by, experiment).items():
            _merge(counts[key], part, edge.sign)
    result = {key: count for key, count in counts.items() if count != LoopCounts()}
    if not by:
        result.setdefault((), LoopCounts())
    return result


def _count(into: LoopCounts, counter: str, n: int) -> None:
    """Add ``n`` of a rollup counter to a group's counts: a depth to its histogram; one not in LoopCounts: skipped."""
    if counter.startswith(DEPTH_PREFIX):
        size = int(counter.removeprefix(DEPTH_PREFIX))
        into.depths[size] = into.depths.get(size, 0) + n
    elif counter in LOOP_FIELDS:
        setattr(into, counter, getattr(into, counter) + n)


# The reads' parameters. Each read's statement is built once per shape (grouping, filters): building and keying
# it anew would cost about as much as running it over a rollups table of a few thousand rows.
_WORKFLOW = bindparam("workflow", type_=String())
_EXPERIMENT = bindparam("experiment", type_=String())
_FIRST = bindparam("first", type_=Date())
_LAST = bindparam("last", type_=Date())
_DEPTH = rollups.c.counter.like(f"{DEPTH_PREFIX}%")


def _bounded(days: Days) -> tuple[bool, bool]:
    return days.first is not None, days.last is not None


def _params(days: Days, workflow: str | None, experiment: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"workflow": workflow} if workflow is not None else {}
    if experiment is not None:
        params["experiment"] = experiment
    if days.first is not None:
        params["first"] = days.first
    if days.last is not None:
        params["last"] = days.last
    return params


def _on(first: bool, last: bool, per_day: bool = False) -> list[ColumnElement[bool]]:
    """Conditions on ``rollups.day``: from ``:first`` (inclusive), before ``:last``.

    Neither bound: all history, which is the all-time rows unless the read is ``per_day``.
    """
    if not first and not last and not per_day:
        return [rollups.c.day == ALL_TIME]
    # Every stored day is after ALL_TIME: a window from :first never includes the all-time rows.
    where = [rollups.c.day >= _FIRST] if first else [rollups.c.day > ALL_TIME]
    if last:
        where.append(rollups.c.day < _LAST)
    return where


def _key(values: Sequence[Any], by: Sequence[GroupKey]) -> tuple[Any, ...]:
    return tuple(_value(k, value) for k, value in zip(by, values, strict=True))


def _value(key: GroupKey, value: Any) -> Any:
    """A group's value as the reference SQL gives it: a day as a date, no arm ('') as None."""
    if key == "day":
        return _metrics_sql.as_date(value)
    if key == "arm":
        return value or None
    return value


_KEY_COLUMNS = {"workflow": rollups.c.workflow, "day": rollups.c.day, "arm": rollups.c.arm}


@cache
def _counts_read(by: tuple[GroupKey, ...], scoped: bool, one_experiment: bool, first: bool, last: bool) -> Select[Any]:
    """``SELECT keys, counter, sum(n)`` of the days' counters of the workflows that :func:`loop_counts` reads.

    The counters of every workflow or of ``:workflow`` (``scoped``), session depth among them when grouped by
    a workflow or scoped to one; else session depth over every workflow (workflow ''; a session spanning two
    counts once) and the workflows' other counters. (The few counters not in :data:`LOOP_FIELDS` are skipped
    in Python: cheaper than naming the wanted ones to the database.) Never workflow '' for ``:workflow``: it
    holds the sessions of every workflow. ``one_experiment``: the rows of ``:experiment`` only.
    """
    keys = [_KEY_COLUMNS[k] for k in by]
    each = rollups.c.workflow != EVERY
    if scoped:
        where = and_(rollups.c.workflow == _WORKFLOW, each)
    elif "workflow" in by:
        where = each
    else:
        where = or_(and_(each, ~_DEPTH), and_(rollups.c.workflow == EVERY, _DEPTH))
    if one_experiment:
        where = and_(where, rollups.c.experiment == _EXPERIMENT)
    return (
        select(*keys, rollups.c.counter, func.sum(rollups.c.n))
        .where(where, *_on(first, last, per_day="day" in by))
        .group_by(*keys, rollups.c.counter)
    )


@cache
def _depths_read(scoped: bool, one_experiment: bool, first: bool, last: bool) -> Select[Any]:
    """``SELECT counter, sum(n)`` of the days' depth counters of ``:workflow`` (``scoped``) or every workflow
    (of ``:experiment`` only: ``one_experiment``)."""
    pooled = rollups.c.workflow == EVERY
    scope = and_(rollups.c.workflow == _WORKFLOW, rollups.c.workflow != EVERY) if scoped else pooled
    if one_experiment:
        scope = and_(scope, rollups.c.experiment == _EXPERIMENT)
    return (
        select(rollups.c.counter, func.sum(rollups.c.n))
        .where(scope, _DEPTH, *_on(first, last))
        .group_by(rollups.c.counter)
    )


def _edge_counts(
    connection: Connection, edge: Span, workflow: str | None, by: Sequence[GroupKey], experiment: str | None
) -> GroupedCounts:
    """A partial day's counts from the raw rows: the reference SQL, each completed run's facts probed.

    (At most half a day of runs: probing each costs those runs, where the reference's all-history plan on
    PostgreSQL would cost the history.)
    """
    return _metrics_sql.loop_counts(connection, edge, workflow, by, probed=True, experiment=experiment)


def _merge(into: LoopCounts, part: LoopCounts, sign: int) -> None:
    """Add ``part`` to ``into`` (``sign`` -1: take it away); a depth left with no session is dropped."""
    for name in LOOP_FIELDS:
        setattr(into, name, getattr(into, name) + sign * getattr(part, name))
    for size, sessions in part.depths.items():
        _add(into.depths, size, sign * sessions)


def _add(into: dict[Any, int], key: Any, n: int) -> None:
    """``into[key] += n``, dropping the key when that leaves 0 (a subtracted edge can)."""
    total = into.get(key, 0) + n
    if total:
        into[key] = total
    else:
        into.pop(key, None)


def session_depths(
    connection: Connection, window: Span, workflow: str | None, experiment: str | None = None
) -> dict[int, int]:
    """Runs per session -> sessions (all workflows pooled unless ``workflow``; of ``experiment``), from the rollups.

    Only the depth counters are read, and of a partial day only the raw rows' depth query runs.
    """
    depths: dict[int, int] = {}
    days, edges = split(window)
    if days is not None:
        statement = _depths_read(workflow is not None, experiment is not None, *_bounded(days))
        for counter, n in connection.execute(statement, _params(days, workflow, experiment)):
            if n:
                size = int(counter.removeprefix(DEPTH_PREFIX))
                depths[size] = depths.get(size, 0) + int(n)
    for edge in edges:
        for size, sessions in _metrics_sql.session_depths(connection, edge.span, workflow, experiment).items():
            _add(depths, size, edge.sign * sessions)
    return depths


def event_counts(connection: Connection) -> dict[str, int]:
    """Stored events per name, all history, from the rollups."""
    rows = _summed(connection, Days(None, None), (), rollups.c.workflow == EVERY, rollups.c.counter.like("event:%"))
    return {row["counter"].removeprefix(EVENT_PREFIX): int(row["n"]) for row in rows}


@cache
def _totals_read() -> Select[Any]:
    """``SELECT workflow, counter, sum(n)`` of the all-time rows: everything a scrape exports, in one query."""
    return (
        select(rollups.c.workflow, rollups.c.counter, func.sum(rollups.c.n))
        .where(rollups.c.day == ALL_TIME)
        .group_by(rollups.c.workflow, rollups.c.counter)
    )


def totals(connection: Connection) -> MetricTotals:
    """All history: what :func:`loop_counts` by workflow, :func:`session_depths` and :func:`event_counts` give."""
    found = MetricTotals()
    per_workflow: dict[tuple[Any, ...], LoopCounts] = defaultdict(LoopCounts)
    for flow, counter, n in connection.execute(_totals_read()):
        if not n:
            continue
        if flow == EVERY:
            # Workflow '' holds the events and the session depths over every workflow.
            if counter.startswith(EVENT_PREFIX):
                found.events[counter.removeprefix(EVENT_PREFIX)] = int(n)
            elif counter.startswith(DEPTH_PREFIX):
                found.depths[int(counter.removeprefix(DEPTH_PREFIX))] = int(n)
        else:
            _count(per_workflow[(flow,)], counter, int(n))
    found.per_workflow = {key: count for key, count in per_workflow.items() if count != LoopCounts()}
    return found


def workflow_names(connection: Connection) -> set[str]:
    """The workflows of the stored runs (every run counts in its session's depth)."""
    rows = _summed(connection, Days(None, None), (rollups.c.workflow,), rollups.c.workflow != EVERY)
    return {str(row["workflow"]) for row in rows}


def _per_task(connection: Connection, window: Span, counters: tuple[str, str], raw: Any) -> Ranked:
    """(count, total) counters per workflow and per (workflow, task): rollup days plus the raw edges."""
    count_name, total_name = counters
    per_task: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    days, edges = split(window)
    if days is not None:
        keys = (rollups.c.workflow, rollups.c.task)
        for row in _summed(connection, days, keys, rollups.c.counter.in_(counters), rollups.c.workflow != EVERY):
            per_task[(row["workflow"], row["task"])][row["counter"] == total_name] += int(row["n"])
    for edge in edges:
        for outcome in raw(connection, edge.span)[1]:
            pair = per_task[(outcome.workflow, outcome.task_id)]
            pair[0] += edge.sign * outcome.count
            pair[1] += edge.sign * outcome.total
    per_workflow: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for (flow, _task), (count, total) in per_task.items():
        per_workflow[flow][0] += count
        per_workflow[flow][1] += total
    by_workflow = [OutcomeCount(flow, None, c, t) for flow, (c, t) in sorted(per_workflow.items()) if t]
    by_task = [OutcomeCount(flow, task, c, t) for (flow, task), (c, t) in sorted(per_task.items()) if t]
    return by_workflow, by_task


def repair_counts(connection: Connection, window: Span) -> Ranked:
    """Executions and in-run repairs per workflow and per task, from the rollups."""
    return _per_task(connection, window, ("repaired", "executions"), _metrics_sql.repair_counts)


def fallback_counts(connection: Connection, window: Span) -> Ranked:
    """Current transitions and fallbacks per workflow and per source task, from the rollups."""
    return _per_task(connection, window, ("fallbacks", "transitions"), _metrics_sql.fallback_counts)


def partial_counts(connection: Connection, window: Span) -> dict[str, dict[str, int]]:
    """Per workflow: partial executions and fallbacks after a partial task, from the rollups."""
    out: dict[str, dict[str, int]] = defaultdict(dict)
    days, edges = split(window)
    if days is not None:
        counters = ("partial", "fallbacks_after_partial")
        for row in _summed(connection, days, (rollups.c.workflow,), rollups.c.counter.in_(counters)):
            out[row["workflow"]][row["counter"]] = int(row["n"])
    for edge in edges:
        for flow, figures in _metrics_sql.partial_counts(connection, edge.span).items():
            for name, n in figures.items():
                _add(out[flow], name, edge.sign * n)
    return {flow: figures for flow, figures in out.items() if figures}
