"""SQLite's direct task commit: a pooled DBAPI transaction that commits, rolls back, and hands over whole.

The task commit runs without a SQLAlchemy connection when it can (marsrag.store._direct); one that needs the
connection (a replaced task, a counted run, ratings) is rolled back and runs on the general path instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import event, insert, text
from sqlalchemy.exc import IntegrityError

from marsrag.errors import RunNotFoundError
from marsrag.metrics.verify import verify
from marsrag.store import _direct
from marsrag.store._prepared import Prepared
from marsrag.store.schema import events, transitions
from marsrag.store.sql import SqlRunStore
from tests.store.records import T0, run, task
from tests.store.records import event as loop_event


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SqlRunStore]:
    """A fresh SQLite store."""
    store = SqlRunStore.from_url(f"sqlite:///{tmp_path}/marsrag.db")
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def begins(sqlite_store: SqlRunStore) -> list[str]:
    """The SQLAlchemy transactions begun on the store's engine from now on (one entry each)."""
    begun: list[str] = []
    event.listen(sqlite_store.engine, "begin", lambda connection: begun.append("begin"))
    return begun


def event_names(store: SqlRunStore) -> list[str]:
    with store.engine.connect() as connection:
        return list(connection.execute(text("SELECT name FROM events ORDER BY id")).scalars())


def event_insert(store: SqlRunStore) -> tuple[Prepared, dict[str, object]]:
    """A prepared insert of one event of run-1, and its values."""
    row = {"name": "loop.ui.rendered", "run_id": "run-1", "timestamp": T0}
    return Prepared(insert(events), store.engine.dialect, tuple(row)), row


def transition_insert(store: SqlRunStore, run_id: str) -> tuple[Prepared, dict[str, object]]:
    """A prepared insert of one transition of ``run_id``, and its values."""
    row = {"run_id": run_id, "source_task_id": "t1", "target_task_id": "t2", "mode": "direct", "hook": "h"}
    row |= {"reason": "r", "superseded": False, "created_at": T0}
    return Prepared(insert(transitions), store.engine.dialect, tuple(row)), row


def test_a_direct_transaction_commits_its_statements(sqlite_store: SqlRunStore) -> None:
    """Rows written on the direct cursor are there for another connection once the block ends."""
    sqlite_store.create_run(run())
    prepared, row = event_insert(sqlite_store)
    with _direct.transaction(sqlite_store.engine) as cursor:
        cursor.many(prepared, [row, row])
    assert event_names(sqlite_store) == ["loop.ui.rendered"] * 2


def test_using_the_connection_rolls_the_direct_transaction_back(sqlite_store: SqlRunStore) -> None:
    """The stand-in connection raises NeedsConnection at first use; what the block wrote is gone."""
    sqlite_store.create_run(run())
    prepared, row = event_insert(sqlite_store)
    with pytest.raises(_direct.NeedsConnection), _direct.transaction(sqlite_store.engine) as cursor:
        cursor.many(prepared, [row])
        _direct.UNAVAILABLE.execute(text("SELECT 1"))
    assert event_names(sqlite_store) == []
    # The connection went back to the pool with no transaction open: the next write begins and commits.
    with _direct.transaction(sqlite_store.engine) as cursor:
        cursor.many(prepared, [row])
    assert event_names(sqlite_store) == ["loop.ui.rendered"]


def test_a_database_error_is_sqlalchemys_own_and_rolls_back(sqlite_store: SqlRunStore) -> None:
    """A foreign key violation surfaces as SQLAlchemy's IntegrityError; the rows before it are not stored."""
    sqlite_store.create_run(run())
    prepared, row = event_insert(sqlite_store)
    handed, missing = transition_insert(sqlite_store, "no-such-run")
    with pytest.raises(IntegrityError, match="FOREIGN KEY"), _direct.transaction(sqlite_store.engine) as cursor:
        cursor.many(prepared, [row])
        cursor.many(handed, [missing])
    assert event_names(sqlite_store) == []


def test_a_new_task_commits_without_a_sqlalchemy_transaction(sqlite_store: SqlRunStore, begins: list[str]) -> None:
    """Saving a new (partial) task with its events begins no SQLAlchemy transaction; it reads back as saved."""
    sqlite_store.create_run(run())
    begins.clear()
    state = task()
    assert state.validation.status == "partial"  # the current transitions out of it are read too
    sqlite_store.save_task(state, [loop_event(task_id="t1")])
    assert begins == []
    assert sqlite_store.get_tasks("run-1") == [state]


def test_a_replaced_task_runs_on_the_general_path_and_counts_once(sqlite_store: SqlRunStore, begins: list[str]) -> None:
    """Replacing a task needs the connection: one SQLAlchemy transaction stores it, and the rollups stay exact."""
    sqlite_store.create_run(run())
    sqlite_store.save_task(task())
    begins.clear()
    replacement = task(rendered="replaced")
    sqlite_store.save_task(replacement, [loop_event(task_id="t1")])
    assert begins == ["begin"]
    assert sqlite_store.get_tasks("run-1") == [replacement]
    assert event_names(sqlite_store) == ["loop.contract.validated"]
    verdict = verify(sqlite_store)
    assert verdict.ok, [difference.line() for difference in verdict.differences]
    assert sqlite_store.loop_counts()[()].executions == 1


def test_a_task_of_a_missing_run_is_refused_as_before(sqlite_store: SqlRunStore) -> None:
    """The heartbeat finds no run: the general path names it, and nothing is stored."""
    with pytest.raises(RunNotFoundError, match="run-1"):
        sqlite_store.save_task(task(), [loop_event(task_id="t1")])
    assert event_names(sqlite_store) == []
