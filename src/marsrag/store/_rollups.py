"""The loop metrics' rollups: counters per workflow, experiment arm and UTC day, kept by the writes that change them.

Reading a metric costs the number of (workflow, arm, day) groups, never the history: every write of the store adds
what it changes to the ``rollups`` table in its own transaction (so a retried commit that is found to have
landed adds nothing again, and a rolled-back one adds nothing at all). Every counter of a run is kept under the
run's workflow, its experiment and arm (``experiment``, ``arm`` columns; '' outside an experiment) and the day
the run was created. The counters (``counter`` column; ``task`` names the task of a task-level one, '' for the
others):

- per narrative task execution (a task state that is not ``skipped``), under its run's workflow, arm and day and
  its task: ``executions``, ``first_valid`` (attempt 1 valid), ``repaired`` (attempt 2 is the in-run repair),
  ``partial`` (its final status);
- per run whose first task (position 0) had its support assessed, whatever that task's validation, under its
  run's workflow, arm and day and that task: ``assessed``, and ``unsupported`` (its support level is ``none``).
  A task stored before migration 0015 has no support and counts in neither (nothing to backfill);
- per current transition, under its source task: ``transitions``, ``fallbacks``, ``fallbacks_after_partial``
  (a fallback whose source task is partial now);
- per completed run: ``completed``, ``offering`` (it offers a next action), ``followed`` (offers it and was
  followed), ``followed_edited`` (and a follow of it took the user's own edited goal: its
  ``loop.action.followed`` event says ``follow_kind`` ``edited``), ``downstream`` (followed, or acted on
  otherwise);
- per run and rated part (``answer``, ``next_action``), whatever the run's status: ``PART_votes`` (the run has a
  rating of the part) and ``PART_up`` (its latest rating is a thumbs up), from ``loop.feedback.recorded``
  events. A run's latest rating of a part (the last stored) is the one counted: a re-vote moves the count, in
  the transaction that stores it. Like every run fact it is counted under the run's day, not the vote's, so a
  window is by run creation here too;
- per session: ``depth:N``, one session of N runs, under the day and the arm of its first run (by creation
  time, then run id): per workflow (its runs in that workflow) and under workflow '' (all its runs, whatever the
  workflow). A session's runs normally share an arm; one with runs in and out of an experiment counts under its
  first run's;
- per stored event: ``event:NAME`` under workflow '', no arm, and the event's own day.

Every change is written twice: to its day's row and to the counter's all-time row (day :data:`ALL_TIME`), so
an all-history read (every Prometheus scrape, the dashboard's totals) sums a few rows per workflow and task
instead of every day kept; a window's reads skip the all-time rows. A read that does not group by arm sums the
arms, so its figures are those of a store without experiments.

A run's facts (offers, followed, edited, acted on) depend on rows other writes add (a follow's event, an
operator's attempt, a later run of the session in a workflow it routed to), so each run keeps the bits it is
counted with (``runs.metrics_code``) and a write that may change them recomputes them for that run
(:func:`refresh_runs`, one query of index probes) and moves the run's counts from the old bits to the new. Its
ratings are recounted by the write that stores a rating (:func:`feedback_changed`), the run's row locked first
on PostgreSQL so two votes on one run queue. Concurrent writers never lose an increment: the upsert adds to the
stored value (``n = n + excluded.n``) in the database, rows are written in one order (no deadlock between two
writers), and a writer adds to its own shard when the store is opened with several (a read sums them).

:func:`rebuild` recounts everything from the raw rows; migrations 0010's, 0011's and 0013's backfill is that
rebuild.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from typing import Any

from sqlalchemy import Connection, and_, bindparam, case, delete, func, literal, select, text, update
from sqlalchemy.sql import ColumnElement

import marsrag.store._metrics_sql as _metrics_sql
from marsrag.store._rows import as_utc
from marsrag.store.schema import attempts, events, rollups, runs, task_states, transitions

#: Counters of a task execution, of a transition and of a completed run (see the module docstring).
TASK_COUNTERS = ("executions", "first_valid", "repaired", "partial")
SUPPORT_COUNTERS = ("assessed", "unsupported")
TRANSITION_COUNTERS = ("transitions", "fallbacks", "fallbacks_after_partial")
RUN_COUNTERS = ("completed", "offering", "followed", "followed_edited", "downstream")
#: The rated parts and the counters of each (``answer_votes``, ``answer_up``, ...).
FEEDBACK_TARGETS = _metrics_sql.FEEDBACK_TARGETS
FEEDBACK_COUNTERS = tuple(f"{target}_{what}" for target in FEEDBACK_TARGETS for what in ("up", "votes"))
DEPTH_PREFIX = "depth:"
EVENT_PREFIX = "event:"
#: The ``workflow`` (and ``task``, ``experiment``, ``arm``) of a counter that is not per workflow (or per task, arm).
EVERY = ""
#: The ``day`` of the all-time rows: before any stored moment, so a window's days never include it.
ALL_TIME = date(1, 1, 1)
#: The bits of ``runs.metrics_code``: offers a next action; was followed; acted on otherwise; followed with the
#: user's own edited goal (only with FOLLOWED).
OFFERS, FOLLOWED, ACTED, EDITED = 1, 2, 4, 8
# Distinct from the migration's advisory lock (one bigint key): this is the two-int form, per session.
_SESSION_LOCK_CLASS = 0x6D72

#: A run's experiment and arm as the rollups key them; :data:`NO_ARM` outside an experiment.
Arm = tuple[str, str]
NO_ARM: Arm = (EVERY, EVERY)
#: (workflow, day, task, counter, experiment, arm).
Key = tuple[str, date, str, str, str, str]


def day(moment: datetime) -> date:
    """The UTC day of a stored moment (what ``_metrics_sql.day_of`` computes in SQL)."""
    return as_utc(moment).date()


def arm_of(experiment: str | None, arm: str | None) -> Arm:
    """A run's (experiment, arm) as the rollups key them ('' for None)."""
    return (experiment or EVERY, arm or EVERY)


class Tally:
    """The counter changes one write makes, summed per key before they are written in one statement."""

    def __init__(self) -> None:
        self.deltas: dict[Key, int] = defaultdict(int)

    def add(self, workflow: str, arm: Arm, on: date, task: str, counter: str, n: int = 1) -> None:
        """Add ``n`` (negative: remove) to one counter."""
        self.deltas[(workflow, on, task, counter, *arm)] += n

    def task(self, workflow: str, arm: Arm, on: date, task_id: str, facts: TaskFacts | None, sign: int) -> None:
        """Count (``sign`` 1) or uncount (-1) a task state's execution, and a first task's support."""
        if facts is None:
            return
        if facts.position == _metrics_sql.FIRST_POSITION and facts.support is not None:
            self.add(workflow, arm, on, task_id, "assessed", sign)
            self.add(workflow, arm, on, task_id, "unsupported", sign * (facts.support == "none"))
        if facts.status == "skipped":
            return
        self.add(workflow, arm, on, task_id, "executions", sign)
        self.add(workflow, arm, on, task_id, "first_valid", sign * (facts.first == "valid"))
        self.add(workflow, arm, on, task_id, "repaired", sign * (facts.second_kind == "repair"))
        self.add(workflow, arm, on, task_id, "partial", sign * (facts.status == "partial"))

    def transition(
        self, workflow: str, arm: Arm, on: date, source: str, mode: str, source_partial: bool, sign: int
    ) -> None:
        """Count (``sign`` 1) or uncount (-1) a current transition out of ``source``."""
        fallback = mode == "fallback"
        self.add(workflow, arm, on, source, "transitions", sign)
        self.add(workflow, arm, on, source, "fallbacks", sign * fallback)
        self.add(workflow, arm, on, source, "fallbacks_after_partial", sign * (fallback and source_partial))

    def run(self, workflow: str, arm: Arm, on: date, code: int | None, sign: int) -> None:
        """Count (``sign`` 1) or uncount (-1) a completed run with fact bits ``code`` (None: not completed)."""
        if code is None:
            return
        followed = bool(code & OFFERS and code & FOLLOWED)
        self.add(workflow, arm, on, EVERY, "completed", sign)
        self.add(workflow, arm, on, EVERY, "offering", sign * bool(code & OFFERS))
        self.add(workflow, arm, on, EVERY, "followed", sign * followed)
        self.add(workflow, arm, on, EVERY, "followed_edited", sign * (followed and bool(code & EDITED)))
        self.add(workflow, arm, on, EVERY, "downstream", sign * bool(code & (FOLLOWED | ACTED)))

    def rating(self, workflow: str, arm: Arm, on: date, target: str, rating: str | None, sign: int) -> None:
        """Count (``sign`` 1) or uncount (-1) a run's latest rating of ``target`` (None: it has none)."""
        if rating is None:
            return
        self.add(workflow, arm, on, EVERY, f"{target}_votes", sign)
        self.add(workflow, arm, on, EVERY, f"{target}_up", sign * (rating == "up"))

    def events(self, rows: Iterable[dict[str, Any]]) -> None:
        """Count stored events (their rows) per name and day."""
        for row in rows:
            self.add(EVERY, NO_ARM, day(row["timestamp"]), EVERY, EVENT_PREFIX + row["name"])

    def rows(self, shard: int) -> list[dict[str, Any]]:
        """The non-zero changes as rollup rows, each also added to its all-time row, in key order.

        (Every writer locks rows in the same order: no deadlock between two.)
        """
        changes: dict[Key, int] = defaultdict(int)
        for (w, on, t, c, e, a), n in self.deltas.items():
            if n:
                changes[(w, on, t, c, e, a)] += n
                changes[(w, ALL_TIME, t, c, e, a)] += n
        return [
            {"workflow": w, "day": on, "task": t, "counter": c, "experiment": e, "arm": a, "shard": shard, "n": n}
            for (w, on, t, c, e, a), n in sorted(changes.items())
            if n
        ]


class TaskFacts:
    """What a task state counts: its final status, attempt 1's status, attempt 2's kind; its position and support
    level (None: not assessed)."""

    __slots__ = ("first", "position", "second_kind", "status", "support")

    def __init__(
        self, status: str, first: str | None, second_kind: str | None, position: int = -1, support: str | None = None
    ) -> None:
        self.status, self.first, self.second_kind = status, first, second_kind
        self.position, self.support = position, support

    @classmethod
    def of(
        cls, status: str, attempts: Iterable[tuple[int, str, str]], position: int = -1, support: str | None = None
    ) -> TaskFacts:
        """From the status, the attempts as (number, status, kind), the position and the support level."""
        first = second = None
        for number, attempt_status, kind in attempts:
            if number == 1:
                first = attempt_status
            elif number == 2:
                second = kind
        return cls(status, first, second, position, support)


# -- writing ------------------------------------------------------------------------------------------------------


def _insert(dialect: str, table: Any) -> Any:
    """The backend's own INSERT (with ``ON CONFLICT``) into ``table``."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as postgres_insert  # lazy: the open engine's dialect only

        return postgres_insert(table)
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert  # lazy: the open engine's dialect only

    return sqlite_insert(table)


def upsert(dialect: str) -> Any:
    """``INSERT INTO rollups ... ON CONFLICT DO UPDATE SET n = rollups.n + excluded.n`` for this backend."""
    statement = _insert(dialect, rollups)
    return statement.on_conflict_do_update(
        index_elements=["workflow", "day", "task", "counter", "experiment", "arm", "shard"],
        set_={"n": rollups.c.n + statement.excluded.n},
    )


_OFFERS_EXPR: ColumnElement[bool]
_source, _OFFERS_EXPR, _FOLLOWED_EXPR, _EDITED_EXPR, _ACTED_EXPR = _metrics_sql._probed_facts()
# (Whether a follow was edited is only probed for a followed run.)
_CODE = (
    case((_OFFERS_EXPR, OFFERS), else_=0)
    + case((_FOLLOWED_EXPR, case((_EDITED_EXPR, FOLLOWED + EDITED), else_=FOLLOWED)), else_=0)
    + case((_ACTED_EXPR, ACTED), else_=0)
)
# One run's facts as the metrics define them (the same EXISTS probes as the reference SQL), with what it is
# counted with now.
_FACTS = select(
    runs.c.run_id,
    runs.c.status,
    runs.c.workflow,
    runs.c.experiment,
    runs.c.arm,
    runs.c.created_at,
    runs.c.metrics_code,
    _CODE.label("code"),
).where(runs.c.run_id.in_(bindparam("run_ids", expanding=True)))
_LOCK_RUNS = (
    select(runs.c.run_id).where(runs.c.run_id.in_(bindparam("run_ids", expanding=True))).order_by(runs.c.run_id)
)
_SET_CODE = update(runs).where(runs.c.run_id == bindparam("b_run_id")).values(metrics_code=bindparam("b_code"))
# What a rating is counted under (the run's group), and the ratings stored for runs, in the order they were.
_RATED_RUNS = select(runs.c.run_id, runs.c.workflow, runs.c.experiment, runs.c.arm, runs.c.created_at).where(
    runs.c.run_id.in_(bindparam("run_ids", expanding=True))
)
_RATINGS = (
    select(events.c.run_id, events.c.detail)
    .where(events.c.run_id.in_(bindparam("run_ids", expanding=True)), events.c.name == _metrics_sql.FEEDBACK_EVENT)
    .order_by(events.c.id)
)


def lock_runs(connection: Connection, run_ids: Iterable[str]) -> None:
    """Lock runs' rows, in id order, on PostgreSQL (SQLite's write transactions are serial anyway)."""
    ids = sorted(set(run_ids))
    if ids and connection.dialect.name == "postgresql":
        connection.execute(_LOCK_RUNS.with_for_update(), {"run_ids": ids})


def refresh_runs(connection: Connection, run_ids: Iterable[str], tally: Tally, *, lock: bool) -> None:
    """Recompute the fact bits of runs and move their counts to the new bits where they changed.

    ``lock``: the transaction does not hold the runs' rows yet (it wrote none of them), so they are locked
    first on PostgreSQL, in id order: the facts are then read after any writer holding them committed, and
    no two writers recount one run from the same old bits. (SQLite's write transactions are serial anyway.)
    """
    ids = sorted(set(run_ids))
    if not ids:
        return
    if lock:
        lock_runs(connection, ids)
    for row in connection.execute(_FACTS, {"run_ids": ids}).mappings():
        code = int(row["code"]) if row["status"] == "completed" else None
        if code == row["metrics_code"]:
            continue
        on, arm = day(row["created_at"]), arm_of(row["experiment"], row["arm"])
        tally.run(row["workflow"], arm, on, row["metrics_code"], -1)
        tally.run(row["workflow"], arm, on, code, 1)
        connection.execute(_SET_CODE, {"b_run_id": row["run_id"], "b_code": code})


def followed_runs(event_rows: Iterable[dict[str, Any]]) -> set[str]:
    """The runs that stored events say were followed (their facts change)."""
    return {row["run_id"] for row in event_rows if row["name"] == _metrics_sql.FOLLOWED_EVENT}


def rated_runs(event_rows: Iterable[dict[str, Any]]) -> set[str]:
    """The runs that events about to be stored rate (their feedback counts change)."""
    return {row["run_id"] for row in event_rows if row["name"] == _metrics_sql.FEEDBACK_EVENT}


def _rating(detail: Any) -> tuple[str, str] | None:
    """(part, rating) of a ``loop.feedback.recorded`` event's detail; None when it rates no known part."""
    if not isinstance(detail, dict) or detail.get("on") not in FEEDBACK_TARGETS:
        return None
    return str(detail["on"]), str(detail.get("rating"))


def feedback_changed(connection: Connection, event_rows: Sequence[dict[str, Any]], tally: Tally) -> None:
    """Count the ratings among events about to be stored: per run and part the latest replaces the one counted.

    Call it before the events are inserted, with the rated runs' rows locked (:func:`lock_runs`): the ratings
    stored so far are then every earlier vote, and a concurrent vote on the run waits for this one. A rating of
    a run not stored yet is counted when the run is (:func:`ratings_found`; the reference SQL joins the runs).
    """
    ids = sorted(rated_runs(event_rows))
    if not ids:
        return
    groups = {row["run_id"]: row for row in connection.execute(_RATED_RUNS, {"run_ids": ids}).mappings()}
    latest: dict[tuple[str, str], str] = {}
    for run_id, detail in connection.execute(_RATINGS, {"run_ids": ids}):
        if (found := _rating(detail)) is not None:
            latest[(run_id, found[0])] = found[1]
    now = dict(latest)
    for row in event_rows:
        if row["name"] == _metrics_sql.FEEDBACK_EVENT and (found := _rating(row.get("detail"))) is not None:
            now[(row["run_id"], found[0])] = found[1]
    for (run_id, target), rating in now.items():
        run = groups.get(run_id)
        before = latest.get((run_id, target))
        if run is None or before == rating:
            continue
        workflow, arm, on = run["workflow"], arm_of(run["experiment"], run["arm"]), day(run["created_at"])
        tally.rating(workflow, arm, on, target, before, -1)
        tally.rating(workflow, arm, on, target, rating, 1)


def ratings_found(connection: Connection, run_id: str, workflow: str, arm: Arm, on: date, tally: Tally) -> None:
    """Count the ratings stored for a run before the run itself (just inserted): its latest per part.

    (A rating stored while its run's creation is still uncommitted is seen by neither write: not counted.)
    """
    latest: dict[str, str] = {}
    for _run_id, detail in connection.execute(_RATINGS, {"run_ids": [run_id]}):
        if (found := _rating(detail)) is not None:
            latest[found[0]] = found[1]
    for target, rating in latest.items():
        tally.rating(workflow, arm, on, target, rating, 1)


def _first_run(session_id: str, workflow: str | None) -> Any:
    """The first run of a session (in ``workflow``): by creation time, then run id, as the reference SQL orders."""
    query = select(runs.c.created_at, runs.c.experiment, runs.c.arm).where(runs.c.session_id == session_id)
    if workflow is not None:
        query = query.where(runs.c.workflow == workflow)
    return query.order_by(runs.c.created_at, runs.c.run_id).limit(1)


def session_joined(
    connection: Connection, session_id: str, workflow: str, created_at: datetime, arm: Arm, tally: Tally
) -> list[tuple[str, str]]:
    """Count a new run (not inserted yet) in its session's depth: the session moves from depth N to N + 1.

    Per workflow and over all workflows; the session's day and arm are its first run's, which the new run becomes
    when it is older than the others. On PostgreSQL the session is locked first (two runs joining one session at
    once would both read depth N). Returns the (scope, depth counter) whose first run ties with the new one on
    creation time and differs in arm: which of the two is first (by run id, in the database's order) is known
    once the run is inserted, so the caller counts those with :func:`session_tied` then.
    """
    if connection.dialect.name == "postgresql":
        connection.execute(
            text("SELECT pg_advisory_xact_lock(:class, hashtext(:session))"),
            {"class": _SESSION_LOCK_CLASS, "session": session_id},
        )
    mine = runs.c.workflow == workflow
    query = select(func.count(), func.coalesce(func.sum(case((mine, 1), else_=0)), 0))
    count, in_workflow = connection.execute(query.where(runs.c.session_id == session_id)).one()
    tied: list[tuple[str, str]] = []
    new = as_utc(created_at)
    for scope, depth in ((EVERY, int(count)), (workflow, int(in_workflow))):
        size = f"{DEPTH_PREFIX}{depth + 1}"
        if not depth:
            tally.add(scope, arm, day(new), EVERY, size)
            continue
        since, experiment, old_arm = connection.execute(_first_run(session_id, scope or None)).one()
        since, old = as_utc(since), arm_of(experiment, old_arm)
        tally.add(scope, old, day(since), EVERY, f"{DEPTH_PREFIX}{depth}", -1)
        if new < since or (new == since and old == arm):
            tally.add(scope, arm, day(new), EVERY, size)
        elif new > since:
            tally.add(scope, old, day(since), EVERY, size)
        else:
            tied.append((scope, size))
    return tied


def session_tied(connection: Connection, session_id: str, tied: Iterable[tuple[str, str]], tally: Tally) -> None:
    """Count the session depths :func:`session_joined` left to count, the new run now stored, under the first's arm."""
    for scope, size in tied:
        since, experiment, arm = connection.execute(_first_run(session_id, scope or None)).one()
        tally.add(scope, arm_of(experiment, arm), day(since), EVERY, size)


def routed_earlier(connection: Connection, session_id: str, workflow: str, created_at: datetime) -> list[str]:
    """Completed runs of the session, older than a new run of ``workflow``, that route to it (now acted on)."""
    query = (
        select(runs.c.run_id)
        .join(task_states, task_states.c.run_id == runs.c.run_id)
        .where(
            runs.c.session_id == session_id,
            runs.c.created_at < as_utc(created_at),
            runs.c.metrics_code.is_not(None),
            task_states.c.routing_next_workflow == workflow,
        )
        .distinct()
    )
    return list(connection.execute(query).scalars())


# -- rebuilding -----------------------------------------------------------------------------------------------------


def rebuild(connection: Connection) -> int:
    """Recount every rollup and every run's fact bits from the raw rows; the number of rollup rows written.

    On PostgreSQL the runs and rollups tables are locked against writers first (readers go on), so no write
    lands between the recount and its result; writers wait and then add to the rebuilt counts.
    """
    dialect = connection.dialect.name
    if dialect == "postgresql":
        # EXCLUSIVE, in the writers' order (a run's row, then the rollups): it waits for every writer holding a
        # run's row, even by FOR UPDATE or a foreign key's FOR KEY SHARE, and every later writer queues behind
        # it at its first touch of a run. SHARE ROW EXCLUSIVE let a writer lock a run's row (FOR UPDATE takes
        # only ROW SHARE) that the recount's UPDATE of every run then waited for, while the writer waited for
        # the rollups: a deadlock.
        connection.execute(text("LOCK TABLE runs, rollups IN EXCLUSIVE MODE"))
    completed = runs.c.status == "completed"
    connection.execute(update(runs).values(metrics_code=case((completed, _CODE), else_=None)))
    connection.execute(delete(rollups))
    tally = Tally()
    for (workflow, when, task, counter, experiment, arm), n in recount(connection).items():
        tally.add(workflow, (experiment, arm), when, task, counter, n=n)  # and to its all-time row
    rows = tally.rows(0)
    if rows:
        connection.execute(rollups.insert(), rows)
    return len(rows)


def recount(connection: Connection) -> dict[Key, int]:
    """Every rollup counter per day from the raw rows (what the day rows must hold, summed over shards)."""
    dialect = connection.dialect.name
    on = _metrics_sql.day_of(runs.c.created_at, dialect).label("day")
    counts: dict[Key, int] = defaultdict(int)

    def keep(row: Any, workflow: str, task: str, counter: str, n: Any) -> None:
        if n:
            arm = arm_of(row["experiment"], row["arm"])
            counts[(workflow, _metrics_sql.as_date(row["day"]), task, counter, *arm)] += int(n)

    group = (runs.c.workflow, on, runs.c.experiment, runs.c.arm)
    first = attempts.alias("first_attempt")
    second = attempts.alias("second_attempt")
    executions = (
        select(
            *group,
            task_states.c.task_id,
            func.count().label("executions"),
            _metrics_sql.count_if(first.c.status == "valid").label("first_valid"),
            _metrics_sql.count_if(second.c.kind == "repair").label("repaired"),
            _metrics_sql.count_if(task_states.c.validation_status == "partial").label("partial"),
        )
        .select_from(
            task_states.join(runs, runs.c.run_id == task_states.c.run_id)
            .outerjoin(first, _attempt(first, 1))
            .outerjoin(second, _attempt(second, 2))
        )
        .where(task_states.c.validation_status != "skipped")
        .group_by(*group, task_states.c.task_id)
    )
    for row in connection.execute(executions).mappings():
        for counter in TASK_COUNTERS:
            keep(row, row["workflow"], row["task_id"], counter, row[counter])

    supported = (
        select(
            *group,
            task_states.c.task_id,
            func.count().label("assessed"),
            _metrics_sql.count_if(task_states.c.support_level == "none").label("unsupported"),
        )
        .select_from(task_states.join(runs, runs.c.run_id == task_states.c.run_id))
        .where(task_states.c.position == _metrics_sql.FIRST_POSITION, task_states.c.support_level.is_not(None))
        .group_by(*group, task_states.c.task_id)
    )
    for row in connection.execute(supported).mappings():
        for counter in SUPPORT_COUNTERS:
            keep(row, row["workflow"], row["task_id"], counter, row[counter])

    source = task_states.alias("source")
    fallback = transitions.c.mode == "fallback"
    handoffs = (
        select(
            *group,
            transitions.c.source_task_id,
            func.count().label("transitions"),
            _metrics_sql.count_if(fallback).label("fallbacks"),
            _metrics_sql.count_if(and_(fallback, source.c.validation_status == "partial")).label(
                "fallbacks_after_partial"
            ),
        )
        .select_from(
            transitions.join(runs, runs.c.run_id == transitions.c.run_id).outerjoin(
                source,
                and_(source.c.run_id == transitions.c.run_id, source.c.task_id == transitions.c.source_task_id),
            )
        )
        .where(transitions.c.superseded.is_(False))
        .group_by(*group, transitions.c.source_task_id)
    )
    for row in connection.execute(handoffs).mappings():
        for counter in TRANSITION_COUNTERS:
            keep(row, row["workflow"], row["source_task_id"], counter, row[counter])

    # Completed runs per fact code, as the reference query finds them (its code sets "acted" only when not
    # followed, which counts the same).
    per_arm: tuple[_metrics_sql.Grouping, ...] = ("workflow", "day", "experiment", "arm")
    finished = _metrics_sql._run_query(per_arm, dialect, _metrics_sql.Span(), None)
    for row in connection.execute(finished).mappings():
        tally = Tally()
        tally.run(row["workflow"], NO_ARM, _metrics_sql.as_date(row["day"]), int(row["code"]), 1)
        for (workflow, _when, task, counter, _e, _a), n in tally.deltas.items():
            keep(row, workflow, task, counter, n * int(row["runs"]))

    rated = _metrics_sql._feedback_query(per_arm, dialect, _metrics_sql.Span(), None)
    for row in connection.execute(rated).mappings():
        keep(row, row["workflow"], EVERY, f"{row['target']}_votes", row["votes"])
        keep(row, row["workflow"], EVERY, f"{row['target']}_up", row["up"])

    every_workflow: tuple[_metrics_sql.Grouping, ...] = ("day", "experiment", "arm")
    for grouping in (per_arm, every_workflow):
        depths = _metrics_sql._depth_query(grouping, dialect, _metrics_sql.Span(), None)
        for row in connection.execute(depths).mappings():
            scope = row["workflow"] if "workflow" in grouping else EVERY
            keep(row, scope, EVERY, f"{DEPTH_PREFIX}{int(row['depth'])}", row["sessions"])

    stamped = _metrics_sql.day_of(events.c.timestamp, dialect).label("day")
    named = select(events.c.name, stamped, func.count().label("n")).group_by(events.c.name, stamped)
    for row in connection.execute(named).mappings():
        keep({**row, "experiment": None, "arm": None}, EVERY, EVERY, EVENT_PREFIX + row["name"], row["n"])
    return dict(counts)


def _attempt(alias: Any, number: int) -> ColumnElement[bool]:
    return and_(
        alias.c.run_id == task_states.c.run_id,
        alias.c.task_id == task_states.c.task_id,
        alias.c.number == literal(number),
    )


def insert_new(dialect: str, table: Any) -> Any:
    """``INSERT ... ON CONFLICT DO NOTHING RETURNING 1`` into ``table``: a row back means it was new."""
    key = [column.name for column in table.primary_key.columns]
    return _insert(dialect, table).on_conflict_do_nothing(index_elements=key).returning(table.primary_key.columns[0])
