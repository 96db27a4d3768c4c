"""The loop metrics' rollups: counters per workflow and UTC day, kept by the writes that change them.

Reading a metric costs the number of (workflow, day) groups, never the history: every write of the store adds
what it changes to the ``rollups`` table in its own transaction (so a retried commit that is found to have
landed adds nothing again, and a rolled-back one adds nothing at all). The counters (``counter`` column;
``task`` names the task of a task-level one, '' for the others):

- per narrative task execution (a task state that is not ``skipped``), under its run's workflow and day and its
  task: ``executions``, ``first_valid`` (attempt 1 valid), ``repaired`` (attempt 2 is the in-run repair),
  ``partial`` (its final status);
- per current transition, under its source task: ``transitions``, ``fallbacks``, ``fallbacks_after_partial``
  (a fallback whose source task is partial now);
- per completed run: ``completed``, ``offering`` (it offers a next action), ``followed`` (offers it and was
  followed), ``downstream`` (followed, or acted on otherwise);
- per session: ``depth:N``, one session of N runs, under the day of its first run: per workflow (its runs in
  that workflow) and under workflow '' (all its runs, whatever the workflow);
- per stored event: ``event:NAME`` under workflow '' and the event's own day.

Every change is written twice: to its day's row and to the counter's all-time row (day :data:`ALL_TIME`), so
an all-history read (every Prometheus scrape, the dashboard's totals) sums a few rows per workflow and task
instead of every day kept; a window's reads skip the all-time rows.

A run's facts (offers, followed, acted on) depend on rows other writes add (a follow's event, an operator's
attempt, a later run of the session in a workflow it routed to), so each run keeps the bits it is counted with
(``runs.metrics_code``) and a write that may change them recomputes them for that run (:func:`refresh_runs`,
one query of index probes) and moves the run's counts from the old bits to the new. Concurrent writers never
lose an increment: the upsert adds to the stored value (``n = n + excluded.n``) in the database, rows are
written in one order (no deadlock between two writers), and a writer adds to its own shard when the store is
opened with several (a read sums them).

:func:`rebuild` recounts everything from the raw rows; migration 0010's backfill is that rebuild.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import date, datetime
from typing import Any

from sqlalchemy import Connection, and_, bindparam, case, delete, func, literal, select, text, update
from sqlalchemy.sql import ColumnElement

import marsrag.store._metrics_sql as _metrics_sql
from marsrag.store._rows import as_utc
from marsrag.store.schema import attempts, events, rollups, runs, task_states, transitions

#: Counters of a task execution, of a transition and of a completed run (see the module docstring).
TASK_COUNTERS = ("executions", "first_valid", "repaired", "partial")
TRANSITION_COUNTERS = ("transitions", "fallbacks", "fallbacks_after_partial")
RUN_COUNTERS = ("completed", "offering", "followed", "downstream")
DEPTH_PREFIX = "depth:"
EVENT_PREFIX = "event:"
#: The ``workflow`` (and ``task``) of a counter that is not per workflow (or per task).
EVERY = ""
#: The ``day`` of the all-time rows: before any stored moment, so a window's days never include it.
ALL_TIME = date(1, 1, 1)
#: The bits of ``runs.metrics_code``: offers a next action; was followed; acted on otherwise.
OFFERS, FOLLOWED, ACTED = 1, 2, 4
# Distinct from the migration's advisory lock (one bigint key): this is the two-int form, per session.
_SESSION_LOCK_CLASS = 0x6D72


Key = tuple[str, date, str, str]


def day(moment: datetime) -> date:
    """The UTC day of a stored moment (what ``_metrics_sql.day_of`` computes in SQL)."""
    return as_utc(moment).date()


class Tally:
    """The counter changes one write makes, summed per key before they are written in one statement."""

    def __init__(self) -> None:
        self.deltas: dict[Key, int] = defaultdict(int)

    def add(self, workflow: str, on: date, task: str, counter: str, n: int = 1) -> None:
        """Add ``n`` (negative: remove) to one counter."""
        self.deltas[(workflow, on, task, counter)] += n

    def task(self, workflow: str, on: date, task_id: str, facts: TaskFacts | None, sign: int) -> None:
        """Count (``sign`` 1) or uncount (-1) a task state's execution."""
        if facts is None or facts.status == "skipped":
            return
        self.add(workflow, on, task_id, "executions", sign)
        self.add(workflow, on, task_id, "first_valid", sign * (facts.first == "valid"))
        self.add(workflow, on, task_id, "repaired", sign * (facts.second_kind == "repair"))
        self.add(workflow, on, task_id, "partial", sign * (facts.status == "partial"))

    def transition(self, workflow: str, on: date, source: str, mode: str, source_partial: bool, sign: int) -> None:
        """Count (``sign`` 1) or uncount (-1) a current transition out of ``source``."""
        fallback = mode == "fallback"
        self.add(workflow, on, source, "transitions", sign)
        self.add(workflow, on, source, "fallbacks", sign * fallback)
        self.add(workflow, on, source, "fallbacks_after_partial", sign * (fallback and source_partial))

    def run(self, workflow: str, on: date, code: int | None, sign: int) -> None:
        """Count (``sign`` 1) or uncount (-1) a completed run with fact bits ``code`` (None: not completed)."""
        if code is None:
            return
        self.add(workflow, on, EVERY, "completed", sign)
        self.add(workflow, on, EVERY, "offering", sign * bool(code & OFFERS))
        self.add(workflow, on, EVERY, "followed", sign * bool(code & OFFERS and code & FOLLOWED))
        self.add(workflow, on, EVERY, "downstream", sign * bool(code & (FOLLOWED | ACTED)))

    def events(self, rows: Iterable[dict[str, Any]]) -> None:
        """Count stored events (their rows) per name and day."""
        for row in rows:
            self.add(EVERY, day(row["timestamp"]), EVERY, EVENT_PREFIX + row["name"])

    def rows(self, shard: int) -> list[dict[str, Any]]:
        """The non-zero changes as rollup rows, each also added to its all-time row, in key order.

        (Every writer locks rows in the same order: no deadlock between two.)
        """
        changes: dict[Key, int] = defaultdict(int)
        for (w, on, t, c), n in self.deltas.items():
            if n:
                changes[(w, on, t, c)] += n
                changes[(w, ALL_TIME, t, c)] += n
        return [
            {"workflow": w, "day": on, "task": t, "counter": c, "shard": shard, "n": n}
            for (w, on, t, c), n in sorted(changes.items())
            if n
        ]


class TaskFacts:
    """What a task state's execution counts: its final status, attempt 1's status, attempt 2's kind."""

    __slots__ = ("first", "second_kind", "status")

    def __init__(self, status: str, first: str | None, second_kind: str | None) -> None:
        self.status, self.first, self.second_kind = status, first, second_kind

    @classmethod
    def of(cls, status: str, attempts: Iterable[tuple[int, str, str]]) -> TaskFacts:
        """From the status and the attempts as (number, status, kind)."""
        first = second = None
        for number, attempt_status, kind in attempts:
            if number == 1:
                first = attempt_status
            elif number == 2:
                second = kind
        return cls(status, first, second)


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
        index_elements=["workflow", "day", "task", "counter", "shard"], set_={"n": rollups.c.n + statement.excluded.n}
    )


_OFFERS_EXPR: ColumnElement[bool]
_source, _OFFERS_EXPR, _FOLLOWED_EXPR, _ACTED_EXPR = _metrics_sql._probed_facts()
_CODE = (
    case((_OFFERS_EXPR, OFFERS), else_=0)
    + case((_FOLLOWED_EXPR, FOLLOWED), else_=0)
    + case((_ACTED_EXPR, ACTED), else_=0)
)
# One run's facts as the metrics define them (the same EXISTS probes as the reference SQL), with what it is
# counted with now.
_FACTS = select(
    runs.c.run_id, runs.c.status, runs.c.workflow, runs.c.created_at, runs.c.metrics_code, _CODE.label("code")
).where(runs.c.run_id.in_(bindparam("run_ids", expanding=True)))
_LOCK_RUNS = (
    select(runs.c.run_id).where(runs.c.run_id.in_(bindparam("run_ids", expanding=True))).order_by(runs.c.run_id)
)
_SET_CODE = update(runs).where(runs.c.run_id == bindparam("b_run_id")).values(metrics_code=bindparam("b_code"))


def refresh_runs(connection: Connection, run_ids: Iterable[str], tally: Tally, *, lock: bool) -> None:
    """Recompute the fact bits of runs and move their counts to the new bits where they changed.

    ``lock``: the transaction does not hold the runs' rows yet (it wrote none of them), so they are locked
    first on PostgreSQL, in id order: the facts are then read after any writer holding them committed, and
    no two writers recount one run from the same old bits. (SQLite's write transactions are serial anyway.)
    """
    ids = sorted(set(run_ids))
    if not ids:
        return
    if lock and connection.dialect.name == "postgresql":
        connection.execute(_LOCK_RUNS.with_for_update(), {"run_ids": ids})
    for row in connection.execute(_FACTS, {"run_ids": ids}).mappings():
        code = int(row["code"]) if row["status"] == "completed" else None
        if code == row["metrics_code"]:
            continue
        on = day(row["created_at"])
        tally.run(row["workflow"], on, row["metrics_code"], -1)
        tally.run(row["workflow"], on, code, 1)
        connection.execute(_SET_CODE, {"b_run_id": row["run_id"], "b_code": code})


def followed_runs(event_rows: Iterable[dict[str, Any]]) -> set[str]:
    """The runs that stored events say were followed (their facts change)."""
    return {row["run_id"] for row in event_rows if row["name"] == _metrics_sql.FOLLOWED_EVENT}


def session_joined(connection: Connection, session_id: str, workflow: str, created_at: datetime, tally: Tally) -> None:
    """Count a new run (not inserted yet) in its session's depth: the session moves from depth N to N + 1.

    Per workflow and over all workflows; the session's day is its first run's, which the new run becomes when
    it is older than the others. On PostgreSQL the session is locked first (two runs joining one session at
    once would both read depth N).
    """
    if connection.dialect.name == "postgresql":
        connection.execute(
            text("SELECT pg_advisory_xact_lock(:class, hashtext(:session))"),
            {"class": _SESSION_LOCK_CLASS, "session": session_id},
        )
    mine = runs.c.workflow == workflow
    query = select(
        func.count(),
        func.min(runs.c.created_at),
        func.coalesce(func.sum(case((mine, 1), else_=0)), 0),
        func.min(case((mine, runs.c.created_at))),
    ).where(runs.c.session_id == session_id)
    count, first, in_workflow, first_in_workflow = connection.execute(query).one()
    for scope, depth, since in ((EVERY, count, first), (workflow, in_workflow, first_in_workflow)):
        if depth:
            tally.add(scope, day(since), EVERY, f"{DEPTH_PREFIX}{depth}", -1)
        start = created_at if not depth else min(as_utc(since), as_utc(created_at))
        tally.add(scope, day(start), EVERY, f"{DEPTH_PREFIX}{int(depth) + 1}")


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
        connection.execute(text("LOCK TABLE runs, rollups IN SHARE ROW EXCLUSIVE MODE"))
    completed = runs.c.status == "completed"
    connection.execute(update(runs).values(metrics_code=case((completed, _CODE), else_=None)))
    connection.execute(delete(rollups))
    tally = Tally()
    for key, n in recount(connection).items():
        tally.add(*key, n=n)  # and to its all-time row
    rows = tally.rows(0)
    if rows:
        connection.execute(rollups.insert(), rows)
    return len(rows)


def recount(connection: Connection) -> dict[Key, int]:
    """Every rollup counter per day from the raw rows (what the day rows must hold, summed over shards)."""
    dialect = connection.dialect.name
    on = _metrics_sql.day_of(runs.c.created_at, dialect).label("day")
    counts: dict[Key, int] = defaultdict(int)

    def keep(workflow: str, when: Any, task: str, counter: str, n: Any) -> None:
        if n:
            counts[(workflow, _metrics_sql.as_date(when), task, counter)] += int(n)

    first = attempts.alias("first_attempt")
    second = attempts.alias("second_attempt")
    executions = (
        select(
            runs.c.workflow,
            on,
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
        .group_by(runs.c.workflow, on, task_states.c.task_id)
    )
    for row in connection.execute(executions).mappings():
        for counter in TASK_COUNTERS:
            keep(row["workflow"], row["day"], row["task_id"], counter, row[counter])

    source = task_states.alias("source")
    fallback = transitions.c.mode == "fallback"
    handoffs = (
        select(
            runs.c.workflow,
            on,
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
        .group_by(runs.c.workflow, on, transitions.c.source_task_id)
    )
    for row in connection.execute(handoffs).mappings():
        for counter in TRANSITION_COUNTERS:
            keep(row["workflow"], row["day"], row["source_task_id"], counter, row[counter])

    # Completed runs per fact code, as the reference query finds them (its code sets "acted" only when not
    # followed, which counts the same).
    finished = _metrics_sql._run_query(("workflow", "day"), dialect, _metrics_sql.Span(), None)
    for row in connection.execute(finished).mappings():
        tally = Tally()
        tally.run(row["workflow"], _metrics_sql.as_date(row["day"]), int(row["code"]), 1)
        for (workflow, when, task, counter), n in tally.deltas.items():
            keep(workflow, when, task, counter, n * int(row["runs"]))

    for grouping in (("workflow", "day"), ("day",)):
        depths = _metrics_sql._depth_query(grouping, dialect, _metrics_sql.Span(), None)
        for row in connection.execute(depths).mappings():
            scope = row["workflow"] if "workflow" in grouping else EVERY
            keep(scope, row["day"], EVERY, f"{DEPTH_PREFIX}{int(row['depth'])}", row["sessions"])

    stamped = _metrics_sql.day_of(events.c.timestamp, dialect).label("day")
    named = select(events.c.name, stamped, func.count().label("n")).group_by(events.c.name, stamped)
    for row in connection.execute(named).mappings():
        keep(EVERY, row["day"], EVERY, EVENT_PREFIX + row["name"], row["n"])
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
