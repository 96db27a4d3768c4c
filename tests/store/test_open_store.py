"""Opening a store: URLs accepted and refused, the default URL, SQLite settings, and what importing costs."""

from __future__ import annotations

import logging
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import Connection, func, select
from sqlalchemy.engine import make_url

from marsrag.errors import StoreError
from marsrag.paths import data_dir
from marsrag.store import _engine, default_db_url, open_store
from marsrag.store._migrate import HEAD, MIGRATIONS
from marsrag.store.schema import metadata
from marsrag.store.sql import SqlRunStore
from tests.store.records import event, run, task, transition


def store_error(url: str) -> str:
    """The message of the StoreError that opening ``url`` raises; it must be one line."""
    with pytest.raises(StoreError) as raised:
        open_store(url)
    message = str(raised.value)
    assert "\n" not in message, message
    return message


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("mysql://user@localhost/marsrag", "'mysql' is not supported"),
        ("postgresql+psycopg2://user@localhost/marsrag", "'postgresql+psycopg2' is not supported"),
        ("sqlite+aiosqlite:///x.db", "'sqlite+aiosqlite' is not supported"),
        ("https://example.org/db", "'https' is not supported"),
        ("not a url", "'not a url' cannot be parsed"),
        ("", "'' cannot be parsed"),
        ("postgresql://user@localhost:port/db", "cannot be parsed"),
        ("sqlite://", "in-memory"),
        ("sqlite:///:memory:", "in-memory"),
    ],
)
def test_bad_urls_raise_a_one_line_store_error(url: str, expected: str) -> None:
    """An unusable URL is refused before anything connects, saying what is wrong and what would work."""
    message = store_error(url)
    assert expected in message
    assert "sqlite:///PATH" in message


def test_unusable_url_options_raise_a_one_line_store_error(tmp_path: Path) -> None:
    """An option the driver cannot take is reported with the URL, not as the driver's exception."""
    assert "unusable options" in store_error(f"sqlite:///{tmp_path}/marsrag.db?timeout=soon")


def test_a_password_in_an_unparseable_url_is_masked() -> None:
    """Error messages never echo a password, even from a URL that does not parse."""
    message = store_error("postgresql://user:s3cret@host:port/db")
    assert "s3cret" not in message and "***" in message


def test_an_unreachable_postgres_raises_a_one_line_store_error() -> None:
    """A server that refuses connections fails the open itself, naming the URL, password masked."""
    message = store_error("postgresql+psycopg://user:s3cret@127.0.0.1:1/marsrag")
    assert message.startswith("cannot open the run store at postgresql+psycopg://user:***@127.0.0.1:1/marsrag")
    assert "s3cret" not in message


def test_postgresql_scheme_means_psycopg_and_url_masks_the_password(postgres_url: str) -> None:
    """``postgresql://`` opens through psycopg 3; the store's url hides the password."""
    url = make_url(postgres_url).set(drivername="postgresql", password="s3cret")  # trust auth ignores it
    with open_store(url.render_as_string(hide_password=False)) as opened:
        opened.create_run(run())
        expected = url.set(drivername="postgresql+psycopg").render_as_string(hide_password=True)
        assert opened.url == expected and ":***@" in expected
        assert "s3cret" not in opened.url


def test_sqlite_creates_the_data_directory_and_sets_wal_busy_timeout_and_foreign_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new file in a new data directory gets it made; every connection runs WAL, a 30 s busy timeout and FKs."""
    monkeypatch.setenv("MARSRAG_HOME", str(tmp_path / "deep" / "er"))
    path = tmp_path / "deep" / "er" / "marsrag.db"
    with open_store(f"sqlite:///{path}") as opened:
        assert isinstance(opened, SqlRunStore)
        assert opened.url == f"sqlite:///{path}"
        with opened.engine.connect() as connection:
            pragmas = [
                connection.exec_driver_sql(f"PRAGMA {name}").scalar()
                for name in ("journal_mode", "busy_timeout", "foreign_keys")
            ]
    assert pragmas == ["wal", 30_000, 1]
    assert path.is_file()


def test_a_task_commit_takes_the_write_lock_as_it_begins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The task commit's BEGIN IMMEDIATE (sent to the DBAPI connection) waits for another writer's lock; one it
    cannot get within the busy timeout is a one-line StoreError, and the store writes on once the lock is free."""
    monkeypatch.setattr(_engine, "SQLITE_BUSY_TIMEOUT_MS", 50)
    path = tmp_path / "runs.db"
    with open_store(f"sqlite:///{path}") as opened:
        opened.create_run(run())
        other = sqlite3.connect(path, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")
            with pytest.raises(StoreError, match=r"^cannot save task 't1' of run 'run-1' in .*: database is locked$"):
                opened.save_task(task())
            other.execute("ROLLBACK")
        finally:
            other.close()
        opened.save_task(task())
        assert [state.task_id for state in opened.get_tasks("run-1")] == ["t1"]


def test_a_task_commit_failing_after_its_first_rows_stores_none_of_them(tmp_path: Path) -> None:
    """The task commit is one transaction though its BEGIN bypasses SQLAlchemy: a transition it cannot insert
    (its run does not exist) leaves no task, attempt, event or rollup of the commit behind."""
    with open_store(f"sqlite:///{tmp_path / 'runs.db'}") as opened:
        assert isinstance(opened, SqlRunStore)
        opened.create_run(run())
        with opened.engine.connect() as connection:
            before = {name: count(connection, name) for name in ("task_states", "attempts", "events", "rollups")}
        with pytest.raises(StoreError, match="FOREIGN KEY constraint failed"):
            opened.save_task(task(), [event()], transition=transition(run_id="no-such-run"))
        with opened.engine.connect() as connection:
            after = {name: count(connection, name) for name in before}
    assert after == before


def count(connection: Connection, table: str) -> int:
    """The rows in one of the store's tables."""
    return int(connection.execute(select(func.count()).select_from(metadata.tables[table])).scalar_one())


def test_a_file_that_is_not_a_database_raises_store_error(tmp_path: Path) -> None:
    """Pointing the store at some other file fails cleanly, naming it."""
    path = tmp_path / "notes.txt"
    path.write_text("these are not the tables you are looking for\n" * 100)
    assert str(path) in store_error(f"sqlite:///{path}")


def test_a_directory_that_cannot_be_created_raises_store_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A data directory under a regular file cannot be made; the error says so."""
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("MARSRAG_HOME", str(tmp_path / "file" / "sub"))
    assert "cannot create the directory" in store_error(f"sqlite:///{tmp_path}/file/sub/marsrag.db")


def test_no_directory_but_the_data_directory_is_ever_created(tmp_path: Path) -> None:
    """A SQLite file in a missing folder (a typo in --db) is refused and the folder is not made."""
    missing = tmp_path / "nonexistdir"
    assert "does not exist: create it first" in store_error(f"sqlite:///{missing}/x.db")
    assert not missing.exists()
    (tmp_path / "file").write_text("")
    assert "is not a directory" in store_error(f"sqlite:///{tmp_path}/file/x.db")


def test_default_url_is_marsrag_db_when_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """MARSRAG_DB wins."""
    monkeypatch.setenv("MARSRAG_DB", "postgresql+psycopg://someone@db.example/marsrag")
    assert default_db_url() == "postgresql+psycopg://someone@db.example/marsrag"


def test_default_url_is_a_file_in_the_data_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without MARSRAG_DB the store is marsrag.db in the data directory."""
    monkeypatch.delenv("MARSRAG_DB", raising=False)
    assert default_db_url() == f"sqlite:///{data_dir()}/marsrag.db"


def test_open_store_without_a_url_uses_the_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """open_store() opens the default URL; an odd data directory name survives the trip through a URL."""
    monkeypatch.delenv("MARSRAG_DB", raising=False)
    home = tmp_path / "odd 100% #name?"
    monkeypatch.setenv("MARSRAG_HOME", str(home))
    with open_store() as opened:
        opened.create_run(run())
    with sqlite3.connect(home / "marsrag.db") as connection:
        assert connection.execute("SELECT run_id FROM runs").fetchall() == [("run-1",)]


def test_opening_prints_nothing_and_leaves_logging_alone(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """Migrating a new database writes nothing to stdout or stderr and configures no logger."""
    before = {name: (logger.level, list(logger.handlers)) for name, logger in _loggers().items()}
    with open_store(f"sqlite:///{tmp_path}/marsrag.db"):
        pass
    assert capfd.readouterr() == ("", "")
    after = {name: (logger.level, list(logger.handlers)) for name, logger in _loggers().items()}
    assert {name: after[name] for name in before} == before
    alembic_handlers = [h for name, (_, hs) in after.items() if name.startswith("alembic") for h in hs]
    assert all(isinstance(handler, logging.NullHandler) for handler in alembic_handlers), alembic_handlers


def _loggers() -> dict[str, logging.Logger]:
    loggers = {name: logging.getLogger(name) for name in logging.root.manager.loggerDict}
    return {"": logging.getLogger(), **loggers}


def test_head_names_the_newest_migration() -> None:
    """The revision the store checks for without Alembic is the head of the migration scripts."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    assert ScriptDirectory.from_config(config).get_heads() == [HEAD]


def _python(code: str) -> str:
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return result.stdout.strip()


def test_importing_the_store_package_imports_no_sqlalchemy() -> None:
    """``import marsrag.store`` stays light: SQLAlchemy, Alembic and psycopg load only when a store opens."""
    heavy = "{'sqlalchemy', 'alembic', 'psycopg'}"
    code = f"import sys, marsrag.store; print(sorted({{m.split('.')[0] for m in sys.modules}} & {heavy}))"
    assert _python(code) == "[]"


def test_opening_a_migrated_database_does_not_import_alembic(tmp_path: Path) -> None:
    """An up-to-date database is recognised with one query; Alembic is imported only to migrate."""
    url = f"sqlite:///{tmp_path}/marsrag.db"
    open_store(url).close()
    code = f"import sys, marsrag.store as s; s.open_store({url!r}).close(); print('alembic' in sys.modules)"
    assert _python(code) == "False"


def test_migrations_render_as_sql_for_review(capsys: pytest.CaptureFixture[str]) -> None:
    """Offline mode prints the migration as PostgreSQL DDL, without a database."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", "postgresql+psycopg://reviewer@nowhere/marsrag")
    command.upgrade(config, "head", sql=True)
    ddl = capsys.readouterr().out
    assert "CREATE TABLE events" in ddl and "TIMESTAMP WITH TIME ZONE" in ddl
    assert "CREATE INDEX ix_events_name_timestamp ON events (name, timestamp)" in ddl
