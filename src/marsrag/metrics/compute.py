"""The loop metrics as SQL aggregations: four grouped queries, one per family, on SQLite and PostgreSQL.

One function computes everything (:func:`metrics_by`); the overall figures are the same queries with no
grouping. Each query aggregates in the database (COUNT/SUM with indexed EXISTS probes); Python only adds up
the handful of rows that come back.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import date, datetime
from typing import Any, Literal

from sqlalchemy import Date, Engine, and_, case, cast, exists, func, select
from sqlalchemy.sql import ColumnElement, Select

from marsrag.metrics.definitions import Depth, LoopMetrics, Rate
from marsrag.metrics.window import Window
from marsrag.store._rows import to_db
from marsrag.store.schema import attempts, events, runs, task_states, transitions

GroupKey = Literal["workflow", "day"]

#: Attempt kinds that are an operator action after the run.
OPERATOR_KINDS = ("operator_repair", "regenerate")


def compute_metrics(engine: Engine, window: Window | None = None, workflow: str | None = None) -> LoopMetrics:
    """The six metrics over ``window`` (default: all history), for one workflow or all."""
    return metrics_by(engine, window, workflow, by=()).get((), _empty())


def metrics_by(
    engine: Engine, window: Window | None = None, workflow: str | None = None, *, by: Sequence[GroupKey] = ()
) -> dict[tuple[Any, ...], LoopMetrics]:
    """The six metrics per group (``workflow``, ``day`` of the run's creation in UTC, or both), in the window.

    Keys are tuples in the order of ``by`` (days as :class:`datetime.date`); a group with no runs is absent.
    """
    window = window or Window()
    dialect = engine.dialect.name
    counts: dict[tuple[Any, ...], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    depths: dict[tuple[Any, ...], dict[int, int]] = defaultdict(dict)
    with engine.connect() as connection:
        for query in (_task_query, _transition_query, _run_query):
            statement = query(by, dialect, window, workflow)
            for row in connection.execute(statement).mappings():
                key = _key(row, by)
                for name, value in row.items():
                    if name not in by:
                        counts[key][name] += int(value or 0)
        for row in connection.execute(_depth_query(by, dialect, window, workflow)).mappings():
            depths[_key(row, by)][int(row["depth"])] = int(row["sessions"])
    keys = set(counts) | set(depths)
    return {key: _metrics(counts.get(key, {}), depths.get(key, {})) for key in keys}


def _metrics(count: dict[str, int], depth: dict[int, int]) -> LoopMetrics:
    get = count.get
    return LoopMetrics(
        loop_schema_pass_rate=Rate(get("first_valid", 0), get("executions", 0)),
        loop_follow_rate=Rate(get("followed", 0), get("offering", 0)),
        downstream_action_rate=Rate(get("downstream", 0), get("completed", 0)),
        session_depth=Depth.from_histogram(depth),
        repair_rate=Rate(get("repaired", 0), get("executions", 0)),
        fallback_rate=Rate(get("fallbacks", 0), get("transitions", 0)),
    )


def _empty() -> LoopMetrics:
    return _metrics({}, {})


# -- grouping and filters ------------------------------------------------------------------------------------


def day_of(column: Any, dialect: str) -> ColumnElement[Any]:
    """The UTC calendar day of a stored timestamp, per backend (SQLite stores UTC without an offset)."""
    if dialect == "postgresql":
        return cast(func.timezone("UTC", column), Date)
    return func.date(column)


def _groups(by: Sequence[GroupKey], dialect: str) -> list[ColumnElement[Any]]:
    columns: list[ColumnElement[Any]] = []
    for key in by:
        column = runs.c.workflow if key == "workflow" else day_of(runs.c.created_at, dialect)
        columns.append(column.label(key))
    return columns


def _filters(window: Window, workflow: str | None) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool]] = []
    if window.since is not None:
        conditions.append(runs.c.created_at >= to_db(window.since))
    if window.until is not None:
        conditions.append(runs.c.created_at < to_db(window.until))
    if workflow is not None:
        conditions.append(runs.c.workflow == workflow)
    return conditions


def _grouped(statement: Select[Any], groups: list[ColumnElement[Any]]) -> Select[Any]:
    return statement.group_by(*groups) if groups else statement


def _key(row: Any, by: Sequence[GroupKey]) -> tuple[Any, ...]:
    return tuple(_day(row[key]) if key == "day" else row[key] for key in by)


def _day(value: Any) -> date:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    return date.fromisoformat(str(value))


def _count_if(condition: ColumnElement[bool]) -> ColumnElement[Any]:
    return func.coalesce(func.sum(case((condition, 1), else_=0)), 0)


# -- the queries -------------------------------------------------------------------------------------------------


def _task_query(by: Sequence[GroupKey], dialect: str, window: Window, workflow: str | None) -> Select[Any]:
    """Narrative task executions, those whose first attempt was valid, and those that ran a repair."""
    groups = _groups(by, dialect)
    first = attempts.alias("first_attempt")
    repair = attempts.alias("repair_attempt")
    statement = (
        select(
            *groups,
            func.count().label("executions"),
            _count_if(first.c.status == "valid").label("first_valid"),
            _count_if(repair.c.number.is_not(None)).label("repaired"),
        )
        .select_from(
            task_states.join(runs, runs.c.run_id == task_states.c.run_id)
            .outerjoin(
                first,
                and_(
                    first.c.run_id == task_states.c.run_id,
                    first.c.task_id == task_states.c.task_id,
                    first.c.number == 1,
                ),
            )
            .outerjoin(
                repair,
                and_(
                    repair.c.run_id == task_states.c.run_id,
                    repair.c.task_id == task_states.c.task_id,
                    repair.c.number == 2,
                    repair.c.kind == "repair",
                ),
            )
        )
        .where(task_states.c.validation_status != "skipped", *_filters(window, workflow))
    )
    return _grouped(statement, groups)


def _transition_query(by: Sequence[GroupKey], dialect: str, window: Window, workflow: str | None) -> Select[Any]:
    """Current transitions and the fallback ones among them."""
    groups = _groups(by, dialect)
    statement = (
        select(
            *groups,
            func.count().label("transitions"),
            _count_if(transitions.c.mode == "fallback").label("fallbacks"),
        )
        .select_from(transitions.join(runs, runs.c.run_id == transitions.c.run_id))
        .where(transitions.c.superseded.is_(False), *_filters(window, workflow))
    )
    return _grouped(statement, groups)


def _run_query(by: Sequence[GroupKey], dialect: str, window: Window, workflow: str | None) -> Select[Any]:
    """Completed runs: those offering a next action, followed ones among them, and those acted on downstream."""
    groups = _groups(by, dialect)
    offers = exists().where(task_states.c.run_id == runs.c.run_id, task_states.c.validation_status != "skipped")
    followed = exists().where(events.c.run_id == runs.c.run_id, events.c.name == "loop.action.followed")
    operator = exists().where(attempts.c.run_id == runs.c.run_id, attempts.c.kind.in_(OPERATOR_KINDS))
    later = runs.alias("later")
    routed_run = exists().where(
        later.c.session_id == runs.c.session_id,
        later.c.created_at > runs.c.created_at,
        later.c.workflow.in_(
            select(task_states.c.routing_next_workflow).where(
                task_states.c.run_id == runs.c.run_id, task_states.c.routing_next_workflow.is_not(None)
            )
        ),
    )
    statement = select(
        *groups,
        func.count().label("completed"),
        _count_if(offers).label("offering"),
        _count_if(and_(offers, followed)).label("followed"),
        _count_if(followed | operator | routed_run).label("downstream"),
    ).where(runs.c.status == "completed", *_filters(window, workflow))
    return _grouped(statement, groups)


def _depth_query(by: Sequence[GroupKey], dialect: str, window: Window, workflow: str | None) -> Select[Any]:
    """A histogram of session depths: (group, depth, number of sessions with it)."""
    groups = _groups(by, dialect)
    per_session = _grouped(
        select(*groups, runs.c.session_id, func.count().label("depth")).where(*_filters(window, workflow)),
        [*groups, runs.c.session_id],
    ).subquery("per_session")
    keys = [per_session.c[key] for key in by]
    return select(*keys, per_session.c.depth, func.count().label("sessions")).group_by(*keys, per_session.c.depth)
