"""The loop metrics' SQL: four grouped queries, one per family, on SQLite and PostgreSQL (moved from metrics).

:func:`loop_counts` computes every numerator and denominator at once; the overall figures are the same queries
with no grouping. Each query aggregates in the database; Python only adds up the handful of rows that come back.
The other read models here (failures, rankings, tuning outcomes, event counts) are single GROUP BY or filtered
queries over the same tables. Only :class:`marsrag.store.sql.SqlRunStore` calls this module.

This is the reference the metric rollups must equal (``from_rows=True``, ``marsrag metrics --verify``) and what
counts a window's partial days; the figures users read come from the rollups (``_rollup_reads``). Its cost
grows with what it counts (about 0.6 s for all of 1,000,000 events on two cores), and rests on three things:

- Every query reads the narrow covering indexes of migration 0004, never the wide rows (the Loop Contract
  text, retrieval results and raw answers that make up most of the store).
- ``runs`` is joined only when a window, a workflow or a grouping needs its columns: every task state and
  transition belongs to a run (foreign keys), so all history is counted without that join.
- Per completed run the runs query needs five yes/no facts (it offers a next action; it was followed; the follow
  took an edited goal; an operator acted on it; a later run of its session ran a workflow it routed to). They are
  folded into one small code per run and counted per code (a handful of rows per group). How the facts are found
  depends on the backend: SQLite only has nested loops, so each fact is an index probe (correlated EXISTS) made in
  ``run_id`` order over the runs' covering index, cheap and cache-friendly; PostgreSQL would run each correlated
  EXISTS as a subplan per row, so there each fact is a set of run ids (one index pass each) that it hash-joins once.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal

from sqlalchemy import Connection, Date, Exists, and_, case, cast, func, literal_column, or_, select
from sqlalchemy.sql import ColumnElement, FromClause, Select

from marsrag.state import Support
from marsrag.store._rows import as_utc
from marsrag.store.queries import GroupedCounts, GroupKey, LoopCounts, OutcomeCount, TaskFailure, UnsupportedGoal
from marsrag.store.schema import attempts, events, runs, task_states, transitions

#: Attempt kinds that are an operator action after the run.
OPERATOR_KINDS = ("operator_repair", "regenerate")
FOLLOWED_EVENT = "loop.action.followed"
FEEDBACK_EVENT = "loop.feedback.recorded"
#: What a rating rates (``detail["on"]`` of a feedback event): the answer, the next action.
FEEDBACK_TARGETS = ("answer", "next_action")
#: The validation statuses that count as a failure.
FAILED_STATUSES = ("failed", "partial")

# The bits of a completed run's code in the runs query: offers a next action; was followed; acted on otherwise
# (an operator repair or regenerate, or a later run in a routed workflow; only looked at when not followed);
# the follow took the user's own edited goal (only looked at when followed).
_OFFERS, _FOLLOWED, _ACTED, _EDITED = 1, 2, 4, 8
#: What the queries here group by: a :data:`GroupKey`, or the experiment (the rollups' own key, with the arm).
Grouping = GroupKey | Literal["experiment"]
# The counts the task, transition and support queries return, by column label.
_COUNTED = ("executions", "first_valid", "repaired", "transitions", "fallbacks", "assessed", "unsupported")
#: The position of a run's first task: the one whose support says whether the knowledge base has what was asked.
FIRST_POSITION = 0


@dataclass(frozen=True)
class Span:
    """Runs created at or after ``since`` and before ``until`` (None: unbounded)."""

    since: datetime | None = None
    until: datetime | None = None


def loop_counts(
    connection: Connection,
    window: Span,
    workflow: str | None,
    by: Sequence[GroupKey],
    *,
    probed: bool = False,
    experiment: str | None = None,
) -> GroupedCounts:
    """The metrics' counts per group (``workflow``, ``day`` of the run's creation in UTC, ``arm``, or several).

    Keys are tuples in the order of ``by`` (days as :class:`datetime.date`, an arm None outside an experiment);
    a group with no runs is absent. ``experiment``: only the runs of that experiment. ``probed``: find each
    completed run's facts by index probes on PostgreSQL too (see :func:`_run_query`).
    """
    dialect = connection.dialect.name
    counts: dict[tuple[Any, ...], LoopCounts] = defaultdict(LoopCounts)
    if dialect == "postgresql":
        # These aggregations take a fraction of a second; compiling them (JIT, on by default when a plan
        # looks expensive) costs tens of milliseconds each and gains nothing. For this transaction only.
        connection.exec_driver_sql("SET LOCAL jit = off")
    for query in (_task_query, _transition_query, _support_query):
        statement = query(by, dialect, window, workflow, experiment)
        for row in connection.execute(statement).mappings():
            count = counts[_key(row, by)]
            for name in _COUNTED:
                if name in row:
                    setattr(count, name, getattr(count, name) + int(row[name] or 0))
    runs_query = _run_query(by, dialect, window, workflow, probed=probed, experiment=experiment)
    for row in connection.execute(runs_query).mappings():
        _add_runs(counts[_key(row, by)], int(row["code"]), int(row["runs"]))
    for row in connection.execute(_feedback_query(by, dialect, window, workflow, experiment)).mappings():
        count = counts[_key(row, by)]
        setattr(count, f"{row['target']}_votes", int(row["votes"]))
        setattr(count, f"{row['target']}_up", int(row["up"]))
    for row in connection.execute(_depth_query(by, dialect, window, workflow, experiment)).mappings():
        counts[_key(row, by)].depths[int(row["depth"])] = int(row["sessions"])
    return dict(counts)


def _add_runs(count: LoopCounts, code: int, number: int) -> None:
    """Add ``number`` completed runs that share ``code`` (bits ``_OFFERS``, ``_FOLLOWED``, ``_ACTED``, ``_EDITED``)."""
    count.completed += number
    if code & _OFFERS:
        count.offering += number
        if code & _FOLLOWED:
            count.followed += number
            if code & _EDITED:
                count.followed_edited += number
    if code & (_FOLLOWED | _ACTED):
        count.downstream += number


def session_depths(
    connection: Connection, window: Span, workflow: str | None, experiment: str | None = None
) -> dict[int, int]:
    """Runs per session over the window (all workflows pooled: a session spanning two counts once).

    ``experiment``: the sessions whose first run (in ``workflow``, if given) is in that experiment.
    """
    statement = _depth_query((), connection.dialect.name, window, workflow, experiment)
    return {int(row["depth"]): int(row["sessions"]) for row in connection.execute(statement).mappings()}


# -- grouping and filters ------------------------------------------------------------------------------------


def day_of(column: Any, dialect: str) -> ColumnElement[Any]:
    """The UTC calendar day of a stored timestamp, per backend (SQLite stores UTC without an offset)."""
    if dialect == "postgresql":
        return cast(func.timezone("UTC", column), Date)
    return func.date(column)


def _groups(by: Sequence[Grouping], dialect: str) -> list[ColumnElement[Any]]:
    columns: list[ColumnElement[Any]] = []
    for key in by:
        column = day_of(runs.c.created_at, dialect) if key == "day" else runs.c[key]
        columns.append(column.label(key))
    return columns


def run_filters(window: Span, workflow: str | None, experiment: str | None = None) -> list[ColumnElement[bool]]:
    """Conditions on ``runs``: created in ``window`` (since inclusive, until exclusive), of ``workflow`` and
    ``experiment`` if given."""
    conditions: list[ColumnElement[bool]] = []
    if window.since is not None:
        conditions.append(runs.c.created_at >= as_utc(window.since))
    if window.until is not None:
        conditions.append(runs.c.created_at < as_utc(window.until))
    if workflow is not None:
        conditions.append(runs.c.workflow == workflow)
    if experiment is not None:
        conditions.append(runs.c.experiment == experiment)
    return conditions


def _needs_runs(by: Sequence[Grouping], window: Span, workflow: str | None, experiment: str | None) -> bool:
    """Whether a query over task states or transitions must join ``runs`` (for a filter or a group)."""
    filtered = workflow is not None or experiment is not None
    return bool(by) or window.since is not None or window.until is not None or filtered


def _grouped(statement: Select[Any], groups: list[ColumnElement[Any]]) -> Select[Any]:
    return statement.group_by(*groups) if groups else statement


def _key(row: Any, by: Sequence[Grouping]) -> tuple[Any, ...]:
    return tuple(as_date(row[key]) if key == "day" else row[key] for key in by)


def as_date(value: Any) -> date:
    """A day as a backend returns it (a date, a datetime, or ISO text on SQLite) as a :class:`datetime.date`."""
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    return date.fromisoformat(str(value))


def count_if(condition: ColumnElement[bool]) -> ColumnElement[Any]:
    return func.coalesce(func.sum(case((condition, 1), else_=0)), 0)


# -- the queries -------------------------------------------------------------------------------------------------


def _task_query(
    by: Sequence[Grouping], dialect: str, window: Span, workflow: str | None, experiment: str | None = None
) -> Select[Any]:
    """Narrative task executions, those whose first attempt was valid, and those that ran a repair.

    Attempts 1 and 2 are looked up as one-value ranges (``number BETWEEN 1 AND 1``), not with ``=``: an equality
    on every primary key column is a unique match, which SQLite without statistics (no ANALYZE) prefers and then
    reads each attempt's wide row for its status; over a range it takes the covering index (3x faster). Attempt 2
    is joined whatever its kind and counted when it is the in-run repair, so both lookups use that index.
    """
    groups = _groups(by, dialect)
    first = attempts.alias("first_attempt")
    repair = attempts.alias("repair_attempt")
    source: FromClause = task_states
    if _needs_runs(by, window, workflow, experiment):
        source = source.join(runs, runs.c.run_id == task_states.c.run_id)
    statement = (
        select(
            *groups,
            func.count().label("executions"),
            count_if(first.c.status == "valid").label("first_valid"),
            count_if(repair.c.kind == "repair").label("repaired"),
        )
        .select_from(
            source.outerjoin(
                first,
                and_(
                    first.c.run_id == task_states.c.run_id,
                    first.c.task_id == task_states.c.task_id,
                    first.c.number.between(1, 1),
                ),
            ).outerjoin(
                repair,
                and_(
                    repair.c.run_id == task_states.c.run_id,
                    repair.c.task_id == task_states.c.task_id,
                    repair.c.number.between(2, 2),
                ),
            )
        )
        .where(task_states.c.validation_status != "skipped", *run_filters(window, workflow, experiment))
    )
    return _grouped(statement, groups)


def _transition_query(
    by: Sequence[Grouping], dialect: str, window: Span, workflow: str | None, experiment: str | None = None
) -> Select[Any]:
    """Current transitions and the fallback ones among them."""
    groups = _groups(by, dialect)
    source: FromClause = transitions
    if _needs_runs(by, window, workflow, experiment):
        source = source.join(runs, runs.c.run_id == transitions.c.run_id)
    statement = (
        select(
            *groups,
            func.count().label("transitions"),
            count_if(transitions.c.mode == "fallback").label("fallbacks"),
        )
        .select_from(source)
        .where(transitions.c.superseded.is_(False), *run_filters(window, workflow, experiment))
    )
    return _grouped(statement, groups)


def _support_query(
    by: Sequence[Grouping], dialect: str, window: Span, workflow: str | None, experiment: str | None = None
) -> Select[Any]:
    """Runs whose first task's support was assessed, and those among them it was ``none`` for.

    A run's first task is the one at :data:`FIRST_POSITION`, whatever its validation (a task without the contract
    retrieves too). A task stored before migration 0015 has no support (NULL) and is left out of both counts:
    it was never assessed, and counting it as supported would dilute the rate by the store's age.
    """
    groups = _groups(by, dialect)
    source: FromClause = task_states
    if _needs_runs(by, window, workflow, experiment):
        source = source.join(runs, runs.c.run_id == task_states.c.run_id)
    statement = (
        select(
            *groups,
            func.count().label("assessed"),
            count_if(task_states.c.support_level == "none").label("unsupported"),
        )
        .select_from(source)
        .where(
            task_states.c.position == FIRST_POSITION,
            task_states.c.support_level.is_not(None),
            *run_filters(window, workflow, experiment),
        )
    )
    return _grouped(statement, groups)


def _run_query(
    by: Sequence[Grouping],
    dialect: str,
    window: Span,
    workflow: str | None,
    *,
    probed: bool = False,
    experiment: str | None = None,
) -> Select[Any]:
    """Completed runs per group and code (``_OFFERS | _FOLLOWED | _ACTED | _EDITED``): (group, code, runs).

    On PostgreSQL the facts are sets of run ids made over all history and joined once, the right plan for
    many runs; ``probed`` (a few runs: a partial day) asks for correlated EXISTS probes into the covering
    indexes instead, as on SQLite, which costs the window's runs rather than the history (at 1,000,000 events,
    about 5 ms for a partial day of 70 runs instead of about 300 ms).
    """
    groups = _groups(by, dialect)
    joined = dialect == "postgresql" and not probed
    source, offers, followed, edited, acted = _joined_facts() if joined else _probed_facts()
    following = case((edited, _FOLLOWED | _EDITED), else_=_FOLLOWED)
    code = case((offers, _OFFERS), else_=0) + case((followed, following), (acted, _ACTED), else_=0)
    per_run = (
        select(*groups, code.label("code"))
        .select_from(source)
        .where(runs.c.status == "completed", *run_filters(window, workflow, experiment))
        .subquery("per_run")
    )
    keys = [per_run.c[key] for key in by]
    return select(*keys, per_run.c.code, func.count().label("runs")).group_by(*keys, per_run.c.code)


#: (the runs joined to what the facts need; offers, followed, edited, acted on).
Facts = tuple[FromClause, ColumnElement[bool], ColumnElement[bool], ColumnElement[bool], ColumnElement[bool]]


def _edited(detail: Any) -> ColumnElement[bool]:
    """A follow's detail says it took the user's own edited goal."""
    return detail["follow_kind"].as_string() == "edited"  # type: ignore[no-any-return]


def _probed_facts() -> Facts:
    """The facts about a run as correlated EXISTS probes into covering indexes (SQLite)."""
    offers = _exists(task_states.c.run_id == runs.c.run_id, task_states.c.validation_status != "skipped")
    followed = _exists(events.c.name == FOLLOWED_EVENT, events.c.run_id == runs.c.run_id)
    edited = _exists(events.c.name == FOLLOWED_EVENT, events.c.run_id == runs.c.run_id, _edited(events.c.detail))
    operator = _exists(attempts.c.run_id == runs.c.run_id, attempts.c.kind.in_(OPERATOR_KINDS))
    # The run's own routed workflows first (rare), then a later run of the session in one of them.
    routing, later = task_states.alias("routing"), runs.alias("later")
    later_run = _exists(
        later.c.session_id == runs.c.session_id,
        later.c.workflow == routing.c.routing_next_workflow,
        later.c.created_at > runs.c.created_at,
    ).correlate(runs, routing)
    routed = _exists(routing.c.run_id == runs.c.run_id, routing.c.routing_next_workflow.is_not(None), later_run)
    return runs, offers, followed, edited, or_(operator, routed)


def _exists(*conditions: ColumnElement[bool]) -> Exists:
    """``EXISTS (SELECT 1 ...)``: SQLite then reads a covering index alone (``SELECT *`` would not say so)."""
    return select(literal_column("1")).where(*conditions).exists()


def _joined_facts() -> Facts:
    """The facts about a run as sets of run ids, each made in one pass and outer-joined to ``runs`` (PostgreSQL)."""
    offering = (
        select(task_states.c.run_id)
        .where(task_states.c.validation_status != "skipped")
        .group_by(task_states.c.run_id)
        .subquery("offering_runs")
    )
    followed = (
        select(events.c.run_id)
        .where(events.c.name == FOLLOWED_EVENT)
        .group_by(events.c.run_id)
        .subquery("followed_runs")
    )
    edited = (
        select(events.c.run_id)
        .where(events.c.name == FOLLOWED_EVENT, _edited(events.c.detail))
        .group_by(events.c.run_id)
        .subquery("edited_runs")
    )
    operator = (
        select(attempts.c.run_id)
        .where(attempts.c.kind.in_(OPERATOR_KINDS))
        .group_by(attempts.c.run_id)
        .subquery("operator_runs")
    )
    routing, source_run, later = task_states.alias("routing"), runs.alias("source_run"), runs.alias("later")
    routed = (
        select(routing.c.run_id)
        .select_from(
            routing.join(source_run, source_run.c.run_id == routing.c.run_id).join(
                later,
                and_(
                    later.c.session_id == source_run.c.session_id,
                    later.c.workflow == routing.c.routing_next_workflow,
                    later.c.created_at > source_run.c.created_at,
                ),
            )
        )
        .where(routing.c.routing_next_workflow.is_not(None))
        .group_by(routing.c.run_id)
        .subquery("routed_runs")
    )
    source: FromClause = runs
    for found in (offering, followed, edited, operator, routed):
        source = source.outerjoin(found, found.c.run_id == runs.c.run_id)
    acted = or_(operator.c.run_id.is_not(None), routed.c.run_id.is_not(None))
    return source, offering.c.run_id.is_not(None), followed.c.run_id.is_not(None), edited.c.run_id.is_not(None), acted


def _feedback_query(
    by: Sequence[Grouping], dialect: str, window: Span, workflow: str | None, experiment: str | None = None
) -> Select[Any]:
    """Rated runs per group and part, each run's latest rating of a part (the last stored): (group, target,
    votes, up). A rating is counted under its run's group (its day among them), whatever the run's status."""
    groups = _groups(by, dialect)
    target = events.c.detail["on"].as_string()
    latest = (
        select(events.c.run_id, target.label("target"), func.max(events.c.id).label("id"))
        .where(events.c.name == FEEDBACK_EVENT, target.in_(FEEDBACK_TARGETS))
        .group_by(events.c.run_id, target)
        .subquery("latest_ratings")
    )
    rating = events.alias("rating")
    up = rating.c.detail["rating"].as_string() == "up"
    return (
        select(*groups, latest.c.target, func.count().label("votes"), count_if(up).label("up"))
        .select_from(latest.join(rating, rating.c.id == latest.c.id).join(runs, runs.c.run_id == latest.c.run_id))
        .where(*run_filters(window, workflow, experiment))
        .group_by(*groups, latest.c.target)
    )


def _depth_query(
    by: Sequence[Grouping], dialect: str, window: Span, workflow: str | None, experiment: str | None = None
) -> Select[Any]:
    """A histogram of session depths: (group, depth, number of sessions with it).

    A session belongs to the day of its first run (within the workflow when grouped by or filtered to one) and
    counts all its runs there, later ones included: a window holds the sessions that started in it, with their
    whole depth, so whole days add up (what the rollups keep, per day). With a window, only sessions that have a
    run in it are looked at (any that started in it does), so the cost follows the window, not the history.
    Its arm (and experiment) are its first run's too: by creation time, then run id (see :func:`_first_runs`).
    """
    per_workflow = "workflow" in by or workflow is not None
    keys: list[ColumnElement[Any]] = [runs.c.workflow] if per_workflow else []
    scope = [runs.c.workflow == workflow] if workflow is not None else []
    conditions = list(scope)
    if window.since is not None or window.until is not None:
        within = select(runs.c.session_id).where(*run_filters(window, workflow))
        conditions.append(runs.c.session_id.in_(within))
    if experiment is not None or "arm" in by or "experiment" in by:
        return _first_runs(by, dialect, window, keys, conditions, experiment)
    first = func.min(runs.c.created_at)
    per_session = (
        select(*keys, runs.c.session_id, first.label("first"), func.count().label("depth"))
        .where(*conditions)
        .group_by(*keys, runs.c.session_id)
    )
    if window.since is not None:
        per_session = per_session.having(first >= as_utc(window.since))
    if window.until is not None:
        per_session = per_session.having(first < as_utc(window.until))
    sessions = per_session.subquery("per_session")
    return _depth_histogram(by, dialect, sessions)


def _first_runs(
    by: Sequence[Grouping],
    dialect: str,
    window: Span,
    keys: list[ColumnElement[Any]],
    conditions: list[ColumnElement[bool]],
    experiment: str | None,
) -> Select[Any]:
    """:func:`_depth_query` for a grouping by arm or one experiment: each session (per workflow) as its first
    run's row, ranked by creation time then run id, with the session's run count."""
    partition = [runs.c.session_id, *keys]
    order = [runs.c.created_at, runs.c.run_id]
    ranked = (
        select(
            *keys,
            runs.c.created_at.label("first"),
            runs.c.experiment,
            runs.c.arm,
            func.row_number().over(partition_by=partition, order_by=order).label("rank"),
            func.count().over(partition_by=partition).label("depth"),
        )
        .where(*conditions)
        .subquery("ranked_runs")
    )
    firsts = [ranked.c.rank == 1]
    if window.since is not None:
        firsts.append(ranked.c.first >= as_utc(window.since))
    if window.until is not None:
        firsts.append(ranked.c.first < as_utc(window.until))
    if experiment is not None:
        firsts.append(ranked.c.experiment == experiment)
    sessions = select(ranked).where(*firsts).subquery("per_session")
    return _depth_histogram(by, dialect, sessions)


def _depth_histogram(by: Sequence[Grouping], dialect: str, sessions: Any) -> Select[Any]:
    """(group, depth, sessions) from one row per session (its ``first`` run's time, ``depth``, arm)."""
    groups: list[ColumnElement[Any]] = []
    for key in by:
        column = day_of(sessions.c.first, dialect) if key == "day" else sessions.c[key]
        groups.append(column.label(key))
    statement = select(*groups, sessions.c.depth, func.count().label("sessions"))
    return statement.group_by(*groups, sessions.c.depth)


# -- failures -----------------------------------------------------------------------------------------------------


def task_failures(connection: Connection, limit: int, window: Span, workflow: str | None) -> list[TaskFailure]:
    """The ``limit`` most recent failed or partial tasks of runs created in ``window``, optionally one workflow.

    One query finds the tasks, joined to their runs for the goal and workflow; a second one, only for tasks
    whose stored validation has no error list, reads the errors of their latest attempt that has any. Newest
    first by the task state's time (then the run's, then the task's position, for a stable order).
    """
    if limit <= 0:
        return []
    statement = (
        select(
            task_states.c.run_id,
            task_states.c.task_id,
            task_states.c.position,
            task_states.c.validation_status,
            task_states.c.validation_errors,
            task_states.c.created_at,
            runs.c.workflow,
            runs.c.goal,
            runs.c.status.label("run_status"),
        )
        .select_from(task_states.join(runs, runs.c.run_id == task_states.c.run_id))
        .where(task_states.c.validation_status.in_(FAILED_STATUSES), *run_filters(window, workflow))
        .order_by(
            task_states.c.created_at.desc(),
            runs.c.created_at.desc(),
            task_states.c.run_id,
            task_states.c.position,
        )
        .limit(limit)
    )
    rows = list(connection.execute(statement).mappings())
    without = sorted({row["run_id"] for row in rows if not _first_message(row["validation_errors"])})
    fallback = _attempt_messages(connection, without) if without else {}
    return [
        TaskFailure(
            run_id=row["run_id"],
            task_id=row["task_id"],
            position=int(row["position"]),
            status=row["validation_status"],
            workflow=row["workflow"],
            goal=row["goal"],
            run_status=row["run_status"],
            created_at=as_utc(row["created_at"]),
            message=_first_message(row["validation_errors"]) or fallback.get((row["run_id"], row["task_id"])),
        )
        for row in rows
    ]


def unsupported_goals(connection: Connection, limit: int, window: Span, workflow: str | None) -> list[UnsupportedGoal]:
    """The ``limit`` most recent runs of ``window`` (of ``workflow``) whose first task's support was ``none``.

    Newest first by the run's creation (then its id, for a stable order); each with the words asked that the best
    retrieved passage did not have, from the stored assessment.
    """
    if limit <= 0:
        return []
    statement = (
        select(
            runs.c.run_id,
            runs.c.workflow,
            runs.c.goal,
            runs.c.status,
            runs.c.created_at,
            task_states.c.task_id,
            task_states.c.support,
        )
        .select_from(task_states.join(runs, runs.c.run_id == task_states.c.run_id))
        .where(
            task_states.c.position == FIRST_POSITION,
            task_states.c.support_level == "none",
            *run_filters(window, workflow),
        )
        .order_by(runs.c.created_at.desc(), runs.c.run_id)
        .limit(limit)
    )
    return [
        UnsupportedGoal(
            run_id=row["run_id"],
            task_id=row["task_id"],
            workflow=row["workflow"],
            goal=row["goal"],
            run_status=row["status"],
            created_at=as_utc(row["created_at"]),
            missing=tuple(_missing(row["support"])),
        )
        for row in connection.execute(statement).mappings()
    ]


def _missing(stored: Any) -> list[str]:
    """The asked words a stored assessment's best passage lacks (none when it cannot be read)."""
    try:
        return Support.model_validate(stored).missing
    except ValueError:
        return []


def _first_message(errors: Any) -> str | None:
    """The first error's message from a stored error list (``[{field, code, message}, ...]``)."""
    if not isinstance(errors, list):
        return None
    for issue in errors:
        if isinstance(issue, dict) and issue.get("message"):
            return str(issue["message"])
    return None


def _attempt_messages(connection: Connection, run_ids: list[str]) -> dict[tuple[str, str], str]:
    """Per (run, task) of these runs: the first error of the latest attempt that recorded errors."""
    statement = (
        select(attempts.c.run_id, attempts.c.task_id, attempts.c.errors)
        .where(attempts.c.run_id.in_(run_ids))
        .order_by(attempts.c.run_id, attempts.c.task_id, attempts.c.number.desc())
    )
    found: dict[tuple[str, str], str] = {}
    for row in connection.execute(statement).mappings():
        key = (row["run_id"], row["task_id"])
        if key not in found:
            message = _first_message(row["errors"])
            if message:
                found[key] = message
    return found


# -- rankings and tuning outcomes -----------------------------------------------------------------------------------


Ranked = tuple[list[OutcomeCount], list[OutcomeCount]]


def repair_counts(connection: Connection, window: Span) -> Ranked:
    """Narrative task executions with an in-run repair (attempt 2 of kind repair), per workflow and per task."""
    repair = attempts.alias("repair_attempt")
    joined = task_states.join(runs, runs.c.run_id == task_states.c.run_id).outerjoin(
        repair,
        and_(
            repair.c.run_id == task_states.c.run_id,
            repair.c.task_id == task_states.c.task_id,
            repair.c.number == 2,
            repair.c.kind == "repair",
        ),
    )
    conditions = [task_states.c.validation_status != "skipped", *run_filters(window, None)]
    counted = (func.count().label("total"), count_if(repair.c.number.is_not(None)).label("count"))
    by_workflow = select(runs.c.workflow, *counted).select_from(joined).where(*conditions).group_by(runs.c.workflow)
    by_task = (
        select(runs.c.workflow, task_states.c.task_id, *counted)
        .select_from(joined)
        .where(*conditions)
        .group_by(runs.c.workflow, task_states.c.task_id)
    )
    return _outcomes(connection, by_workflow), _outcomes(connection, by_task)


def fallback_counts(connection: Connection, window: Span) -> Ranked:
    """Current transitions in fallback mode, per workflow and per source task."""
    joined = transitions.join(runs, runs.c.run_id == transitions.c.run_id)
    conditions = [transitions.c.superseded.is_(False), *run_filters(window, None)]
    counted = (func.count().label("total"), count_if(transitions.c.mode == "fallback").label("count"))
    by_workflow = select(runs.c.workflow, *counted).select_from(joined).where(*conditions).group_by(runs.c.workflow)
    by_task = (
        select(runs.c.workflow, transitions.c.source_task_id.label("task_id"), *counted)
        .select_from(joined)
        .where(*conditions)
        .group_by(runs.c.workflow, transitions.c.source_task_id)
    )
    return _outcomes(connection, by_workflow), _outcomes(connection, by_task)


def _outcomes(connection: Connection, statement: Select[Any]) -> list[OutcomeCount]:
    return [
        OutcomeCount(str(row["workflow"]), row.get("task_id"), int(row["count"] or 0), int(row["total"] or 0))
        for row in connection.execute(statement).mappings()
    ]


def partial_counts(connection: Connection, window: Span) -> dict[str, dict[str, int]]:
    """Per workflow: final partial task executions, and fallback transitions whose source task is partial."""
    conditions = run_filters(window, None)
    partial = (
        select(runs.c.workflow, func.count().label("n"))
        .select_from(task_states.join(runs, runs.c.run_id == task_states.c.run_id))
        .where(task_states.c.validation_status == "partial", *conditions)
        .group_by(runs.c.workflow)
    )
    source = task_states.alias("source")
    after_partial = (
        select(runs.c.workflow, func.count().label("n"))
        .select_from(
            transitions.join(runs, runs.c.run_id == transitions.c.run_id).join(
                source,
                and_(source.c.run_id == transitions.c.run_id, source.c.task_id == transitions.c.source_task_id),
            )
        )
        .where(
            transitions.c.mode == "fallback",
            transitions.c.superseded.is_(False),
            source.c.validation_status == "partial",
            *conditions,
        )
        .group_by(runs.c.workflow)
    )
    out: dict[str, dict[str, int]] = {}
    for name, statement in (("partial", partial), ("fallbacks_after_partial", after_partial)):
        for workflow, count in connection.execute(statement):
            out.setdefault(workflow, {})[name] = int(count)
    return out


# -- events ---------------------------------------------------------------------------------------------


def event_counts(connection: Connection) -> dict[str, int]:
    """Stored events per name (names with none are absent).

    One ``GROUP BY name``, which the ``ix_events_name_timestamp`` index serves without touching ``runs``.
    """
    statement = select(events.c.name, func.count().label("events")).group_by(events.c.name)
    return {str(name): int(count) for name, count in connection.execute(statement)}
