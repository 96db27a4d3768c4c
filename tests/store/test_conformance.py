"""The RunStore conformance kit on every backend (SQLite file, PostgreSQL schema), plus the SQL store's own tests.

``marsrag.store.conformance.RunStoreConformance`` holds the interface-level suite; each class below gives it a
fresh store. The SQL-only tests after them look at the tables themselves (columns, tampered rows, migrations).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Engine, text

from marsrag.contract import LOOP_CONTRACT_VERSION
from marsrag.errors import IncompatibleRecordError, StoreError
from marsrag.state import RunRecord, TaskState
from marsrag.store import RunStore, open_store
from marsrag.store._migrate import HEAD
from marsrag.store.conformance import RunStoreConformance, in_threads
from marsrag.store.schema import VERSION_TABLE, include_name, metadata
from marsrag.store.sql import SqlRunStore
from tests.store.cuts import cutting
from tests.store.migrations import at_revision
from tests.store.records import CALL, T0, bare_task, run, task


def sql(store: RunStore, statement: str, **params: Any) -> list[Any]:
    """Run raw SQL on the store's database in its own transaction; the rows, if any."""
    assert isinstance(store, SqlRunStore)  # the SQL backend's own tables
    with store.engine.begin() as connection:
        result = connection.execute(text(statement), params)
        return list(result.all()) if result.returns_rows else []


def task_row_before_0009(state: TaskState) -> dict[str, Any]:
    """A ``task_states`` row as revisions before 0009 had it (no citation columns, nor 0015's support, nor 0019's
    retrievers)."""
    from marsrag.store import _rows

    row = _rows.task_row(state)
    del row["citations"], row["citation_warnings"], row["support_level"], row["support"]
    del row["retrievers"], row["retrieval_skipped"]
    return row


def run_row_before_0007(record: RunRecord) -> dict[str, Any]:
    """A ``runs`` row as revisions before 0007 had it (no ``followed_from``, nor 0012's experiment and arm, nor
    0016's collections, nor 0018's trace)."""
    from marsrag.store import _rows

    row = _rows.run_row(record)
    del row["followed_from"], row["experiment"], row["arm"], row["collections"], row["trace"]
    return row


class SqlConformance(RunStoreConformance):
    """The kit on a SQL store, which also counts the attempts rows."""

    def check_attempt_rows(self, store: RunStore, expected: int) -> None:
        """The ``attempts`` table holds exactly ``expected`` rows."""
        assert sql(store, "SELECT count(*) FROM attempts") == [(expected,)]


class TestSqliteStore(SqlConformance):
    """The kit on a fresh SQLite file (in a directory of its own)."""

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[RunStore]:
        """A fresh SQLite store."""
        (tmp_path / "store").mkdir()
        with open_store(f"sqlite:///{tmp_path}/store/marsrag.db") as opened:
            yield opened


class TestPostgresStore(SqlConformance):
    """The kit on a fresh PostgreSQL schema, whose connections the server itself terminates in the drop case."""

    @pytest.fixture
    def store(self, postgres_url: str, postgres_admin: Engine) -> Iterator[RunStore]:
        """A fresh PostgreSQL store."""
        self.admin = postgres_admin
        with open_store(postgres_url) as opened:
            yield opened

    @contextmanager
    def dropping(self, store: RunStore, at: int) -> Iterator[list[int]]:
        """``pg_terminate_backend`` on the store's connection just before its ``at``-th statement is sent."""
        with cutting(store, self.admin, lambda count: count == at) as cuts:
            yield cuts


# -- the SQL store's tables (both backends, via the db_url and store fixtures) ---------------------------------


def test_no_retrieval_is_stored_as_nulls(store: RunStore) -> None:
    """A task without retrieval leaves both retrieval columns NULL (not an empty query or list)."""
    store.create_run(run())
    bare = bare_task()
    store.save_task(bare)
    assert sql(store, "SELECT retrieval_query, retrieval_results FROM task_states") == [(None, None)]


def test_loop_fields_and_rendered_text_are_separate_columns(store: RunStore) -> None:
    """The five loop fields sit in five columns and the rendered prose in its own."""
    store.create_run(run())
    store.save_task(task())
    rows = sql(store, "SELECT hook, grip, payoff, reinforce, loop, rendered FROM task_states")
    fields = task().loop_output
    assert rows == [(fields.hook, fields.grip, fields.payoff, fields.reinforce, fields.loop, task().rendered)]


def test_a_task_of_another_major_version_raises_incompatible_record(store: RunStore) -> None:
    """A task stored under contract 2.x is refused with a message naming run, task and both versions."""
    store.create_run(run())
    store.save_task(task())
    store.save_task(task(task_id="t2", position=1))
    sql(store, "UPDATE task_states SET loop_contract_version = '2.1.0' WHERE task_id = 't2'")
    with pytest.raises(IncompatibleRecordError) as raised:
        store.get_tasks("run-1")
    message = str(raised.value)
    assert all(part in message for part in ("run-1", "'t2'", "2.1.0", LOOP_CONTRACT_VERSION)), message
    assert "\n" not in message


def test_a_run_of_another_major_version_raises_incompatible_record(store: RunStore) -> None:
    """A run row inserted under contract 2.0.0 is refused by get_run and list_runs, naming the run."""
    store.create_run(run())
    sql(
        store,
        "INSERT INTO runs (run_id, session_id, goal, workflow, loop_mode, status, summary, loop_contract_version,"
        " created_at, updated_at) VALUES ('future', 's', 'g', 'w', 'strict', 'running', '', '2.0.0', :t, :t)",
        t=T0,
    )
    with pytest.raises(IncompatibleRecordError, match=rf"'future'.*2\.0\.0.*{re.escape(LOOP_CONTRACT_VERSION)}"):
        store.get_run("future")
    with pytest.raises(IncompatibleRecordError, match="future"):
        store.list_runs()
    assert store.get_run("run-1") == run()


def test_records_of_an_older_minor_version_stay_readable(store: RunStore) -> None:
    """Runs and tasks stored under contract 1.0.0 read back unchanged under the running 1.5.0."""
    assert LOOP_CONTRACT_VERSION != "1.0.0"
    store.create_run(run())
    store.save_task(task())
    sql(store, "UPDATE runs SET loop_contract_version = '1.0.0'")
    assert store.get_run("run-1").loop_contract_version == "1.0.0"  # type: ignore[union-attr]
    assert [stored.loop_contract_version for stored in store.get_tasks("run-1")] == ["1.0.0"]


def test_a_malformed_stored_version_raises_incompatible_record(store: RunStore) -> None:
    """A version that is not semver is reported, not crashed on."""
    store.create_run(run())
    sql(store, "UPDATE runs SET loop_contract_version = 'one'")
    with pytest.raises(IncompatibleRecordError, match="'one'"):
        store.get_run("run-1")


def test_a_newer_minor_version_reads_fine(store: RunStore) -> None:
    """Only the major version decides whether a record is readable."""
    store.create_run(run())
    store.save_task(task())
    sql(store, "UPDATE task_states SET loop_contract_version = '1.7.3'")
    assert store.get_tasks("run-1")[0].loop_contract_version == "1.7.3"


def test_an_invalid_stored_value_raises_store_error(store: RunStore) -> None:
    """A row that breaks the record's rules surfaces as StoreError naming the record, not a crash."""
    store.create_run(run())
    sql(store, "UPDATE runs SET status = 'exploded'")
    with pytest.raises(StoreError, match=r"run 'run-1'.*status"):
        store.get_run("run-1")


def test_migrated_schema_matches_the_metadata(store: RunStore) -> None:
    """The hand-written migrations build exactly the tables, columns, types and indexes of schema.py.

    The backend-specific full-text objects are left out (``include_name``); the knowledge base tests cover them.
    """
    assert isinstance(store, SqlRunStore)
    opts = {
        "version_table": VERSION_TABLE,
        "compare_type": True,
        "compare_server_default": True,
        "include_name": include_name,
    }
    with store.engine.connect() as connection:
        context = MigrationContext.configure(connection, opts=opts)
        assert compare_metadata(context, metadata) == []


def test_opening_twice_migrates_once_and_keeps_data(db_url: str) -> None:
    """Opening an existing store again is a no-op for the schema; its data is still there."""
    with open_store(db_url) as first:
        first.create_run(run())
        first.save_task(task())
    with open_store(db_url) as second:
        assert second.get_tasks("run-1") == [task()]
        assert sql(second, f"SELECT version_num FROM {VERSION_TABLE}") == [(HEAD,)]


def test_opening_a_new_database_from_several_threads_migrates_it_once(db_url: str) -> None:
    """Concurrent first opens of one database serialize on the migration lock; all succeed."""
    stores: list[RunStore] = []
    errors = in_threads(6, lambda _: stores.append(open_store(db_url)))
    try:
        assert errors == []
        assert sql(stores[0], f"SELECT version_num FROM {VERSION_TABLE}") == [(HEAD,)]
    finally:
        for opened in stores:
            opened.close()


def test_a_schema_revision_from_a_newer_marsrag_is_reported(db_url: str) -> None:
    """A database migrated past this MarsRAG's head is refused with a StoreError naming the revision."""
    with open_store(db_url) as opened:
        sql(opened, f"UPDATE {VERSION_TABLE} SET version_num = '0099'")
    with pytest.raises(StoreError, match="0099") as raised:
        open_store(db_url)
    assert "\n" not in str(raised.value)


def test_migration_0003_names_the_kind_of_existing_attempts(db_url: str) -> None:
    """Attempts stored at revision 0002 (no kind) read back as answer (number 1) and repair (later)."""
    from sqlalchemy import insert

    from marsrag.store import _rows
    from marsrag.store.schema import runs, task_states

    stored = task(run_id="r")
    with at_revision(db_url, "0002") as connection:
        connection.execute(insert(runs), [run_row_before_0007(run("r"))])
        connection.execute(insert(task_states), [task_row_before_0009(stored)])
        for row in _rows.attempt_rows(stored):
            del row["kind"]
            connection.execute(
                text(
                    "INSERT INTO attempts (run_id, task_id, number, raw, status, errors, created_at)"
                    " VALUES (:run_id, :task_id, :number, :raw, :status, '[]', :created_at)"
                ),
                {key: value for key, value in row.items() if key != "errors"},
            )
    with open_store(db_url) as migrated:
        assert [(a.number, a.kind) for a in migrated.get_tasks("r")[0].attempts] == [(1, "answer"), (2, "repair")]


def test_migration_0006_keeps_attempts_stored_before_it_with_unknown_calls(db_url: str) -> None:
    """Attempts stored at revision 0005 keep their rows; their LLM call fields read back None and []."""
    from sqlalchemy import insert

    from marsrag.store import _rows
    from marsrag.store.schema import runs, task_states

    stored = task(run_id="r")
    with at_revision(db_url, "0005") as connection:
        connection.execute(insert(runs), [run_row_before_0007(run("r"))])
        connection.execute(insert(task_states), [task_row_before_0009(stored)])
        for row in _rows.attempt_rows(stored):
            connection.execute(
                text(
                    "INSERT INTO attempts (run_id, task_id, number, raw, status, errors, kind, created_at)"
                    " VALUES (:run_id, :task_id, :number, :raw, :status, '[]', :kind, :created_at)"
                ),
                {key: row[key] for key in ("run_id", "task_id", "number", "raw", "status", "kind", "created_at")},
            )
    with open_store(db_url) as migrated:
        assert sql(migrated, f"SELECT version_num FROM {VERSION_TABLE}") == [(HEAD,)]
        columns = ", ".join(_rows.ATTEMPT_CALL_FIELDS)
        assert sql(migrated, f"SELECT {columns} FROM attempts ORDER BY number") == [(None,) * 8] * 2
        loaded = migrated.get_tasks("r")[0].attempts
        assert [(a.number, a.raw, a.kind) for a in loaded] == [(a.number, a.raw, a.kind) for a in stored.attempts]
        for attempt in loaded:
            assert (attempt.model, attempt.endpoint, attempt.structured_output, attempt.latency_ms) == (None,) * 4
            assert (attempt.prompt_tokens, attempt.completion_tokens, attempt.finish_reason) == (None,) * 3
            assert attempt.structured_output_refused == []
        # New attempts of a migrated store keep their calls.
        with_call = loaded[0].model_copy(update=CALL)
        migrated.save_task(task(run_id="r", attempts=[with_call]))
        assert migrated.get_tasks("r")[0].attempts == [with_call]


def test_migration_0006_downgrades_to_0005(db_url: str) -> None:
    """Downgrading from 0006 drops the call columns and keeps the attempts."""
    from sqlalchemy import inspect

    with open_store(db_url) as opened:
        opened.create_run(run())
        opened.save_task(task())
    with at_revision(db_url, "0005", downgrade=True) as connection:
        names = {column["name"] for column in inspect(connection).get_columns("attempts")}
        assert names == {"run_id", "task_id", "number", "raw", "status", "errors", "created_at", "kind"}
        assert connection.execute(text("SELECT count(*) FROM attempts")).scalar() == 2


def test_migration_0007_keeps_runs_and_tasks_stored_before_it(db_url: str) -> None:
    """Runs and tasks stored at revision 0006 read back as they were (following nothing); follows then work."""
    from sqlalchemy import insert

    from marsrag.errors import AlreadyFollowedError
    from marsrag.store.schema import runs, task_states

    stored = task(run_id="r", attempts=[])
    with at_revision(db_url, "0006") as connection:
        connection.execute(insert(runs), [run_row_before_0007(run("r")), run_row_before_0007(run("s"))])
        connection.execute(insert(task_states), [task_row_before_0009(stored)])
    with open_store(db_url) as migrated:
        assert sql(migrated, f"SELECT version_num FROM {VERSION_TABLE}") == [(HEAD,)]
        assert [migrated.get_run(run_id).followed_from for run_id in ("r", "s")] == [None, None]
        assert migrated.get_tasks("r") == [stored]
        migrated.create_run(run("next", followed_from="r"))
        with pytest.raises(AlreadyFollowedError):
            migrated.create_run(run("again", followed_from="r"))


def test_migration_0016_reads_runs_stored_before_it_as_searching_every_collection(db_url: str) -> None:
    """A run stored at 0015 reads back with no collections; a new run's collections round-trip; 0016 downgrades."""
    from sqlalchemy import insert, inspect

    from marsrag.store import _rows
    from marsrag.store.schema import runs

    before = {k: v for k, v in _rows.run_row(run("r")).items() if k not in ("collections", "trace")}
    with at_revision(db_url, "0015") as connection:
        connection.execute(insert(runs), [before])
    with open_store(db_url) as migrated:
        assert migrated.get_run("r").collections is None
        migrated.create_run(run("s", collections=["handbook", "/srv/docs"]))
        assert migrated.get_run("s").collections == ["handbook", "/srv/docs"]
    with at_revision(db_url, "0015", downgrade=True) as connection:
        assert "collections" not in {column["name"] for column in inspect(connection).get_columns("runs")}
        assert connection.execute(text("SELECT count(*) FROM runs")).scalar() == 2


def test_migration_0018_reads_runs_stored_before_it_as_untraced(db_url: str) -> None:
    """A run stored at 0017 reads back with no trace; a claim gives it one, once; 0018 downgrades."""
    from sqlalchemy import insert, inspect

    from marsrag.store import _rows
    from marsrag.store.schema import runs

    before = {k: v for k, v in _rows.run_row(run("r")).items() if k != "trace"}
    with at_revision(db_url, "0017") as connection:
        connection.execute(insert(runs), [before])
    first = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    with open_store(db_url) as migrated:
        seen = migrated.get_run("r")
        assert seen.trace is None
        assert migrated.claim_run("r", "host:1", seen=seen, trace=first)
        assert migrated.get_run("r").trace == first
    with at_revision(db_url, "0017", downgrade=True) as connection:
        assert "trace" not in {column["name"] for column in inspect(connection).get_columns("runs")}
        assert connection.execute(text("SELECT count(*) FROM runs")).scalar() == 1


def test_migration_0007_downgrades_to_0006(db_url: str) -> None:
    """Downgrading from 0007 drops the follow and commit columns and keeps the rows."""
    from sqlalchemy import inspect

    with open_store(db_url) as opened:
        opened.create_run(run())
        opened.create_run(run("next", followed_from="run-1"))
        opened.save_task(task())
    with at_revision(db_url, "0006", downgrade=True) as connection:
        assert "followed_from" not in {column["name"] for column in inspect(connection).get_columns("runs")}
        assert "commit_id" not in {column["name"] for column in inspect(connection).get_columns("task_states")}
        assert connection.execute(text("SELECT count(*) FROM runs")).scalar() == 2


def test_migration_0009_reads_tasks_stored_before_it_with_no_citations(db_url: str) -> None:
    """Tasks stored at revision 0008 read back with no citations; new saves keep theirs; downgrade keeps rows."""
    from sqlalchemy import insert, inspect

    from marsrag.state import Citation
    from marsrag.store.schema import runs, task_states

    stored = task(run_id="r", attempts=[])
    with at_revision(db_url, "0008") as connection:
        connection.execute(insert(runs), [run_row_before_0007(run("r"))])
        connection.execute(insert(task_states), [task_row_before_0009(stored)])
    cited = stored.model_copy(
        update={
            "task_id": "t2",
            "position": 1,
            "citations": [Citation(ref="1", source="a.md#A", chunk_id=7, fields=["reinforce"])],
            "citation_warnings": ["marker [9] in grip names no passage (it was given 1)"],
        }
    )
    with open_store(db_url) as migrated:
        assert sql(migrated, f"SELECT version_num FROM {VERSION_TABLE}") == [(HEAD,)]
        assert migrated.get_tasks("r") == [stored]
        assert stored.citations == [] and stored.citation_warnings == []
        migrated.save_task(cited)
        assert migrated.get_tasks("r")[1] == cited
    with at_revision(db_url, "0008", downgrade=True) as connection:
        assert "citations" not in {column["name"] for column in inspect(connection).get_columns("task_states")}
        assert connection.execute(text("SELECT count(*) FROM task_states")).scalar() == 2
