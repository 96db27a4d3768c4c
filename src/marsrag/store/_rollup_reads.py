"""The metrics' read models answered from the rollups: whole UTC days from the counters, partial edges from rows.

A window's whole days are summed from ``rollups`` (a few rows per workflow, day and counter, whatever the
history); where ``since`` or ``until`` falls inside a day, that part of the day is counted from the raw rows
with the reference SQL of :mod:`marsrag.store._metrics_sql`, which only looks at the runs of that part. The
result is the reference's, to the count (``marsrag metrics --verify`` checks it on a live store).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sqlalchemy import Connection, func, select
from sqlalchemy.sql import ColumnElement

import marsrag.store._metrics_sql as _metrics_sql
from marsrag.store._metrics_sql import Ranked, Span
from marsrag.store._rollups import DEPTH_PREFIX, EVENT_PREFIX, EVERY
from marsrag.store._rows import as_utc
from marsrag.store.queries import GroupedCounts, GroupKey, LoopCounts, OutcomeCount
from marsrag.store.schema import rollups

#: The rollup counters that are fields of :class:`LoopCounts` (the others: depth, events, partial ones).
LOOP_FIELDS = frozenset(
    ("executions", "first_valid", "repaired", "transitions", "fallbacks", "completed", "offering", "followed")
    + ("downstream",)
)


@dataclass(frozen=True)
class Days:
    """Whole UTC days ``first`` (inclusive) to ``last`` (exclusive); None: unbounded."""

    first: date | None
    last: date | None


def split(window: Span) -> tuple[Days | None, list[Span]]:
    """A window as its whole days (None: none) and the partial edges to count from raw rows."""
    since = as_utc(window.since) if window.since is not None else None
    until = as_utc(window.until) if window.until is not None else None
    first = None if since is None else since.date() + timedelta(days=0 if _midnight(since) else 1)
    last = None if until is None else until.date()
    if first is not None and last is not None and first >= last:
        return None, ([window] if since is None or until is None or since < until else [])
    edges = []
    if since is not None and not _midnight(since):
        assert first is not None
        edges.append(Span(since, _start_of(first)))
    if until is not None and not _midnight(until):
        assert last is not None
        edges.append(Span(_start_of(last), until))
    return Days(first, last), edges


def _midnight(moment: datetime) -> bool:
    return moment.time() == time(0)


def _start_of(on: date) -> datetime:
    return datetime.combine(on, time(0), tzinfo=UTC)


def _summed(
    connection: Connection, days: Days, keys: Sequence[ColumnElement[Any]], *conditions: ColumnElement[bool]
) -> list[Any]:
    """``SELECT keys, counter, sum(n) FROM rollups`` over the days, grouped by the keys and the counter."""
    where = list(conditions)
    if days.first is not None:
        where.append(rollups.c.day >= days.first)
    if days.last is not None:
        where.append(rollups.c.day < days.last)
    statement = (
        select(*keys, rollups.c.counter, func.sum(rollups.c.n).label("n"))
        .where(*where)
        .group_by(*keys, rollups.c.counter)
    )
    return [row for row in connection.execute(statement).mappings() if row["n"]]


def loop_counts(connection: Connection, window: Span, workflow: str | None, by: Sequence[GroupKey]) -> GroupedCounts:
    """The six metrics' counts per group (see :func:`marsrag.store._metrics_sql.loop_counts`), from the rollups."""
    counts: dict[tuple[Any, ...], LoopCounts] = defaultdict(LoopCounts)
    days, edges = split(window)
    if days is not None:
        # Session depth per workflow when grouped by one or filtered to one; else over every workflow ('').
        pooled_depth = workflow is None and "workflow" not in by
        keys = [rollups.c.workflow, *([rollups.c.day] if "day" in by else [])]
        scope = [rollups.c.workflow == workflow] if workflow is not None else []
        counted = rollups.c.counter.not_like(f"{EVENT_PREFIX}%")
        for row in _summed(connection, days, keys, counted, *scope):
            counter, scoped = row["counter"], row["workflow"] != EVERY
            depth = counter.startswith(DEPTH_PREFIX)
            if (depth and scoped == pooled_depth) or (not depth and not scoped):
                continue
            key = tuple(row["workflow"] if k == "workflow" else _metrics_sql.as_date(row["day"]) for k in by)
            count = counts[key]
            if depth:
                size = int(counter.removeprefix(DEPTH_PREFIX))
                count.depths[size] = count.depths.get(size, 0) + int(row["n"])
            elif counter in LOOP_FIELDS:
                setattr(count, counter, getattr(count, counter) + int(row["n"]))
    for edge in edges:
        for key, part in _metrics_sql.loop_counts(connection, edge, workflow, by).items():
            _merge(counts[key], part)
    result = {key: count for key, count in counts.items() if count != LoopCounts()}
    if not by:
        result.setdefault((), LoopCounts())
    return result


def _merge(into: LoopCounts, part: LoopCounts) -> None:
    for name in LOOP_FIELDS:
        setattr(into, name, getattr(into, name) + getattr(part, name))
    for size, sessions in part.depths.items():
        into.depths[size] = into.depths.get(size, 0) + sessions


def session_depths(connection: Connection, window: Span, workflow: str | None) -> dict[int, int]:
    """Runs per session -> sessions (all workflows pooled unless ``workflow``), from the rollups."""
    return dict(loop_counts(connection, window, workflow, ())[()].depths)


def event_counts(connection: Connection) -> dict[str, int]:
    """Stored events per name, all history, from the rollups."""
    rows = _summed(connection, Days(None, None), (), rollups.c.workflow == EVERY, rollups.c.counter.like("event:%"))
    return {row["counter"].removeprefix(EVENT_PREFIX): int(row["n"]) for row in rows}


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
        for outcome in raw(connection, edge)[1]:
            pair = per_task[(outcome.workflow, outcome.task_id)]
            pair[0] += outcome.count
            pair[1] += outcome.total
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
        for flow, figures in _metrics_sql.partial_counts(connection, edge).items():
            for name, n in figures.items():
                out[flow][name] = out[flow].get(name, 0) + n
    return {flow: figures for flow, figures in out.items() if figures}
