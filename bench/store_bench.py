"""Run store benchmarks (issue: run store on SQLite and PostgreSQL).

- task states persisted per second on SQLite, each with its attempts (2) and events (3) in one transaction,
  through ``RunStore.save_task``; next to the raw rate of plain ``sqlite3`` inserting the same rows into the
  same schema (a second file migrated by the store, same settings: WAL, busy timeout, foreign keys), one
  transaction per row group, with every value prepared in advance (target: <= 1.5x). The ratio prices the
  store's record-to-row mapping, the run's heartbeat (its lock) and the metric rollups' upsert, which the
  baseline does not write.
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

from bench._samples import CONTENT
from bench._timing import Report, compare, rate
from marsrag.contract import ContractIssue
from marsrag.state import AttemptRecord, LoopEvent, LoopFields, RunRecord, TaskState, Validation, utcnow
from marsrag.store import RunStore, open_store
from marsrag.store._engine import SQLITE_BUSY_TIMEOUT_MS
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
        ours_url, base_path = f"sqlite:///{tmp}/ours.db", Path(tmp, "base.db")
        # The baseline file gets the same schema and run row from the store, then plain sqlite3 writes to it.
        with open_store(f"sqlite:///{base_path}") as base_store:
            base_store.create_run(RUN)
        with open_store(ours_url) as store, closing(sqlite3.connect(base_path)) as connection:
            store.create_run(RUN)
            pair = compare(_ours(store), _raw(connection))
    report.add(
        "task states + 2 attempts + 3 events per s, save_task vs raw sqlite3",
        rate(pair.ours),
        rate(pair.base),
        pair.ratio,
        "<= 1.50x",
        pair.ratio <= 1.5,
    )
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


def _raw(connection: sqlite3.Connection) -> Callable[[], None]:
    pragmas = (
        f"busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}",
        "journal_mode = WAL",
        "synchronous = NORMAL",
        "foreign_keys = ON",
    )
    for pragma in pragmas:
        connection.execute(f"PRAGMA {pragma}")
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
