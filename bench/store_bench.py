"""Run store benchmarks (issue: run store on SQLite and PostgreSQL).

- task states persisted per second on SQLite, each with its attempts (2) and events (3) in one transaction,
  through ``RunStore.save_task``; next to the raw rate of plain ``sqlite3`` inserting the same rows into the
  same schema (a second file migrated by the store, same settings: WAL, busy timeout, foreign keys), one
  transaction per row group, with every value prepared in advance. The ratio is information: it prices the
  store's record-to-row mapping, SQLAlchemy, and the run lock and replace-deletes of ``save_task``.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
import tempfile
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

from bench._samples import CONTENT
from bench._timing import Report, compare, rate
from marsrag.events.model import LoopEvent
from marsrag.runtime.state import AttemptRecord, Issue, LoopFields, RunRecord, TaskState, Validation, utcnow
from marsrag.store import RunStore, open_store
from marsrag.store._engine import SQLITE_BUSY_TIMEOUT_MS

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
            errors=[Issue(field="grip", code="missing_field", message="grip is missing")],
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
        "(info)",
        True,
    )
    report.print()


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
        (a.number, a.raw, a.status, json.dumps([e.model_dump() for e in a.errors]), now) for a in STATE.attempts
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
