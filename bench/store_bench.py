"""Run store benchmarks (issue: run store on SQLite and PostgreSQL).

- task states persisted per second on SQLite, each with its attempts (2) and events (3) in one transaction,
  through ``RunStore.save_task``; next to plain ``sqlite3`` writing the same rows with the same statements into
  the same schema (a second file migrated by the store, same settings: WAL, busy timeout, foreign keys), one
  ``BEGIN IMMEDIATE`` transaction per task state, with every value and SQL string prepared in advance (target:
  <= 1.5x). Per task state the baseline writes what the store's commit writes: the run's heartbeat (``UPDATE
  runs ... RETURNING``, which also locks the run and checks it exists), the task row with every column the
  store fills (``INSERT ... ON CONFLICT DO NOTHING RETURNING``, its ``commit_id`` included), the attempts, the
  events, and the metric rollups' upsert (``ON CONFLICT DO UPDATE SET n = n + excluded.n``), whose rows come
  from the store's own ``Tally``, so they stay the store's rows when the rollups change. The issue requires
  those rows in the same transaction, so the ratio prices only how the store gets them there (records to
  rows, SQLAlchemy's transaction, the type conversions and text guard).
- the same figure next to the narrower baseline measured before: plain ``sqlite3`` writing the task row's
  core columns, the attempts and the events only (no heartbeat, no rollups, a deferred transaction) (info).
- task states per second with 8 concurrent writers (threads, one store each) against 1, per backend; and with
  8 writers, the metric rollups as one row per counter (every writer adds to the same row) against per-writer
  rows summed at read time (``rollup_shards=8``): which is faster is what ``ROLLUP_SHARDS`` is set from.
"""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Table
from sqlalchemy.engine import Dialect

from bench._samples import CONTENT
from bench._timing import Report, compare, rate
from marsrag.contract import ContractIssue
from marsrag.state import AttemptRecord, LoopEvent, LoopFields, RunRecord, TaskState, Validation, utcnow
from marsrag.store import RunStore, _rollups, _rows, open_store
from marsrag.store._engine import SQLITE_BUSY_TIMEOUT_MS
from marsrag.store._rollups import Tally, TaskFacts
from marsrag.store.schema import attempts, events, rollups, runs, task_states
from marsrag.store.sql import ROLLUP_SHARDS, SqlRunStore

RUN = RunRecord(run_id="bench", session_id="bench", goal="benchmark", workflow="bench", loop_mode="strict")
STATE = TaskState(
    run_id="bench",
    task_id="t",
    position=0,
    agent="analyst",
    loop_mode="strict",
    validation=Validation(status="valid"),
    loop_output=LoopFields(**CONTENT),
    attempts=[
        AttemptRecord(
            number=1,
            raw="HOOK: ...",
            status="failed",
            errors=[ContractIssue(field="grip", code="missing_field", message="grip is missing")],
        ),
        AttemptRecord(number=2, raw=json.dumps(CONTENT), status="valid"),
    ],
    hook_source="direct",
    rendered=LoopFields(**CONTENT).render(),
)
EVENTS = [
    LoopEvent(name="loop.contract.failed", run_id="bench", task_id="t", validation_status="failed"),
    LoopEvent(name="loop.contract.validated", run_id="bench", task_id="t", validation_status="valid"),
    LoopEvent(name="loop.transition.planned", run_id="bench", task_id="t", transition_mode="direct"),
]


def run() -> None:
    """Run the store benchmarks and print their table."""
    report = Report("run store on SQLite, WAL (one transaction per task state; best of 7 alternating rounds)")
    with tempfile.TemporaryDirectory(prefix="marsrag-store-bench-") as tmp:
        # The baselines' files get the same schema and run row from the store, then plain sqlite3 writes to them.
        same_path, narrow_path = _seeded(Path(tmp, "same.db")), _seeded(Path(tmp, "narrow.db"))
        with (
            open_store(f"sqlite:///{tmp}/ours.db") as store,
            closing(_connect(same_path, autocommit=True)) as same,
            closing(_connect(narrow_path)) as narrow,
        ):
            store.create_run(RUN)
            assert isinstance(store, SqlRunStore)
            ours = _ours(store)
            pair = compare(ours, _same_rows(same, store.engine.dialect))
            narrow_pair = compare(ours, _narrow(narrow))
    report.add(
        "task states + 2 attempts + 3 events per s, save_task vs raw sqlite3",
        rate(pair.ours),
        rate(pair.base),
        pair.ratio,
        "<= 1.50x",
        pair.ratio <= 1.5,
    )
    report.add(
        "the same, vs raw sqlite3 writing task + attempts + events only (no heartbeat, no rollups)",
        rate(narrow_pair.ours), rate(narrow_pair.base), narrow_pair.ratio, "(info)", True,
    )  # fmt: skip
    report.print()
    _concurrent_writers()


def _concurrent_writers(per_writer: int = 150) -> None:
    """Task states per second with 1 and 8 concurrent writers, SQLite and PostgreSQL, in one run."""
    report = Report("run store, concurrent writers (threads, one store each; 8-writer rate vs 1 writer)")
    with tempfile.TemporaryDirectory(prefix="marsrag-store-bench-") as tmp, _postgres_schema() as postgres:
        backends = {"SQLite": f"sqlite:///{tmp}/concurrent.db"}
        if postgres is not None:
            backends["PostgreSQL"] = postgres
        for name, url in backends.items():
            single = _states_per_second(url, 1, per_writer)
            many = _states_per_second(url, 8, per_writer)
            report.add(
                f"{name}: task states per s, 8 writers vs 1 writer", f"{many:.0f}/s", f"{single:.0f}/s",
                many / single, "(info)", True,
            )  # fmt: skip
            sharded = _states_per_second(url, 8, per_writer, shards=8)
            report.add(
                f"{name}: 8 writers, rollups in per-writer rows (8 shards) vs one row per counter",
                f"{sharded:.0f}/s", f"{many:.0f}/s", sharded / many, "(info)", True,
            )  # fmt: skip
        if postgres is None:
            report.add("PostgreSQL: unreachable, not measured", "-", "-", 1.0, "(info)", True)
    report.print()


def _states_per_second(url: str, writers: int, per_writer: int, *, shards: int = ROLLUP_SHARDS) -> float:
    stores = [SqlRunStore.from_url(url, rollup_shards=shards) for _ in range(writers)]
    try:
        runs = [RUN.model_copy(update={"run_id": f"w{writers}-{i}-{uuid.uuid4().hex[:8]}"}) for i in range(writers)]
        for store, run in zip(stores, runs, strict=True):
            store.create_run(run)
        barrier = threading.Barrier(writers + 1)

        def write(store: RunStore, run_id: str) -> None:
            barrier.wait()
            for number in range(per_writer):
                store.save_task(
                    STATE.model_copy(update={"run_id": run_id, "task_id": f"t{number}"}), _events_for(run_id)
                )

        threads = [threading.Thread(target=write, args=(s, r.run_id)) for s, r in zip(stores, runs, strict=True)]
        for thread in threads:
            thread.start()
        barrier.wait()
        start = time.perf_counter()
        for thread in threads:
            thread.join()
        return writers * per_writer / (time.perf_counter() - start)
    finally:
        for store in stores:
            store.close()


def _events_for(run_id: str) -> list[LoopEvent]:
    """EVENTS for another run."""
    return [event.model_copy(update={"run_id": run_id}) for event in EVENTS]


@contextmanager
def _postgres_schema() -> Iterator[str | None]:
    """A throwaway schema on the local PostgreSQL server (None when it is unreachable)."""
    from sqlalchemy import create_engine
    from sqlalchemy.exc import OperationalError

    base = os.environ.get("MARSRAG_TEST_POSTGRES", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
    engine = create_engine(base, connect_args={"connect_timeout": 5})
    schema = f"marsrag_bench_{uuid.uuid4().hex[:12]}"
    try:
        with engine.begin() as connection:
            connection.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
    except OperationalError:
        engine.dispose()
        yield None
        return
    try:
        yield f"{base}?options=-csearch_path%3D{schema}"
    finally:
        with engine.begin() as connection:
            connection.exec_driver_sql(f'DROP SCHEMA "{schema}" CASCADE')
        engine.dispose()


def _ours(store: RunStore) -> Callable[[], None]:
    numbers = itertools.count()
    # A new task id per call: the figure is for inserting states, not replacing one over and over.
    return lambda: store.save_task(STATE.model_copy(update={"task_id": f"t{next(numbers)}"}), EVENTS)


def _seeded(path: Path) -> Path:
    """``path`` made a store file (schema migrated, the benchmark's run row inserted) for a baseline to write to."""
    with open_store(f"sqlite:///{path}") as store:
        store.create_run(RUN)
    return path


def _connect(path: Path, *, autocommit: bool = False) -> sqlite3.Connection:
    """A plain sqlite3 connection with the store's connection settings (``autocommit``: sqlite3 begins nothing)."""
    connection = sqlite3.connect(path, isolation_level=None if autocommit else "DEFERRED")
    pragmas = (
        f"busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}",
        "journal_mode = WAL",
        "synchronous = NORMAL",
        "foreign_keys = ON",
    )
    for pragma in pragmas:
        connection.execute(f"PRAGMA {pragma}")
    return connection


# The task id in the baseline's prepared rows, replaced by each call's own.
_TASK = "\x00task"
_HEARTBEAT_SQL = (
    "UPDATE runs SET updated_at = ? WHERE run_id = ?"
    " RETURNING workflow, created_at, status, metrics_code, experiment, arm"
)

# Rows prepared for sqlite3: each its values but the task id, and its task id.
_Rows = list[tuple[tuple[Any, ...], str]]


def _same_rows(connection: sqlite3.Connection, dialect: Dialect) -> Callable[[], None]:
    """Plain sqlite3 writing, per call, the rows ``save_task`` writes for STATE and EVENTS (see the docstring).

    ``connection`` is in autocommit mode: each call begins its own ``BEGIN IMMEDIATE``, as the store does.
    """
    state = STATE.model_copy(update={"task_id": _TASK})
    event_rows = _rows.event_rows(EVENTS)
    # The rollup rows the store's commit adds, from its own Tally: per task (this task's id) and per event.
    tally = Tally()
    facts = TaskFacts.of(state.validation.status, [(a.number, a.status, a.kind) for a in state.attempts])
    tally.task(RUN.workflow, _rollups.NO_ARM, _rollups.day(RUN.created_at), _TASK, facts, 1)
    tally.events(event_rows)
    heartbeat = (_converted(runs, {"updated_at": _rows.as_utc(utcnow())}, dialect)[0], RUN.run_id)
    task_sql, task = _insert(
        task_states,
        [{**_rows.task_row(state), "commit_id": uuid.uuid4().hex}],
        "task_id",
        dialect,
        " ON CONFLICT (run_id, task_id) DO NOTHING RETURNING run_id",
    )
    attempts_sql, tried = _insert(attempts, _rows.attempt_rows(state), "task_id", dialect)
    events_sql, stored = _insert(events, event_rows, "task_id", dialect)
    key = ", ".join(column.name for column in rollups.primary_key.columns)
    rollups_sql, counted = _insert(
        rollups, tally.rows(0), "task", dialect, f" ON CONFLICT ({key}) DO UPDATE SET n = n + excluded.n"
    )
    event_values = [(*values, task) for values, task in stored]  # EVENTS name their own task, as stored
    cursor = connection.cursor()
    numbers = itertools.count()

    def commit_group() -> None:
        task_id = f"t{next(numbers)}"
        with connection:  # commits on exit
            cursor.execute("BEGIN IMMEDIATE")
            cursor.execute(_HEARTBEAT_SQL, heartbeat).fetchone()
            cursor.execute(task_sql, _for_task(task, task_id)[0]).fetchone()
            cursor.executemany(attempts_sql, _for_task(tried, task_id))
            cursor.executemany(events_sql, event_values)
            cursor.executemany(rollups_sql, _for_task(counted, task_id))

    return commit_group


def _insert(
    table: Table, rows: list[dict[str, Any]], task_key: str, dialect: Dialect, tail: str = ""
) -> tuple[str, _Rows]:
    """``INSERT INTO table (columns) VALUES (?, ...)`` then ``tail``, for ``rows``; and the rows as sqlite3 values.

    The ``task_key`` column is last, and each prepared row is its other values (converted by their columns'
    types as SQLAlchemy would) with its task id, for :func:`_for_task`.
    """
    columns = [*(name for name in rows[0] if name != task_key), task_key]
    sql = f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))}){tail}"
    prepared = [(_converted(table, {name: row[name] for name in columns[:-1]}, dialect), row[task_key]) for row in rows]
    return sql, prepared


def _converted(table: Table, row: dict[str, Any], dialect: Dialect) -> tuple[Any, ...]:
    """A row's values as sqlite3 takes them, converted by their columns' types as SQLAlchemy would."""
    values = []
    for name, value in row.items():
        convert = table.c[name].type.dialect_impl(dialect).bind_processor(dialect)
        values.append(convert(value) if convert is not None else value)
    return tuple(values)


def _for_task(rows: _Rows, task_id: str) -> list[tuple[Any, ...]]:
    """Prepared rows as sqlite3 parameters, the placeholder task id replaced by ``task_id``."""
    return [(*values, task_id if task == _TASK else task) for values, task in rows]


def _narrow(connection: sqlite3.Connection) -> Callable[[], None]:
    """Plain sqlite3 writing the task row's core columns, the attempts and the events only (the old baseline)."""
    now = utcnow().isoformat(sep=" ")
    task_row = (
        "bench", 0, "analyst", "1.0.0", "strict", "valid", "[]", *CONTENT.values(),
        STATE.rendered, "direct", now,
    )  # fmt: skip
    attempt_rows = [
        (a.number, a.raw, a.status, json.dumps([e.to_dict() for e in a.errors]), now) for a in STATE.attempts
    ]
    event_rows = [(e.name, e.task_id, "1.0.0", "strict", e.validation_status, e.transition_mode, now) for e in EVENTS]
    numbers = itertools.count()

    def insert_group() -> None:
        task_id = f"t{next(numbers)}"
        with connection:  # one transaction: commits on exit
            connection.execute(
                "INSERT INTO task_states (run_id, position, agent, loop_contract_version, loop_mode,"
                " validation_status, validation_errors, hook, grip, payoff, reinforce, loop, rendered, hook_source,"
                " created_at, task_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*task_row, task_id),
            )
            connection.executemany(
                "INSERT INTO attempts (run_id, task_id, number, raw, status, errors, created_at)"
                " VALUES ('bench', ?, ?, ?, ?, ?, ?)",
                [(task_id, *row) for row in attempt_rows],
            )
            connection.executemany(
                "INSERT INTO events (run_id, name, task_id, loop_contract_version, loop_mode, validation_status,"
                " transition_mode, timestamp) VALUES ('bench', ?, ?, ?, ?, ?, ?, ?)",
                event_rows,
            )

    return insert_group


if __name__ == "__main__":
    run()
