"""Database URLs and engines: which URLs the store accepts, and how each backend's connections are set up.

SQLite gets WAL, a generous busy timeout and enforced foreign keys on every new connection, and SQLAlchemy's
"begin" event (not the sqlite3 module) emits ``BEGIN``: deferred for reads, ``BEGIN IMMEDIATE`` for writes, so
concurrent writers queue on the busy timeout instead of failing when a read lock cannot be upgraded; the task
commit's writes send their ``BEGIN IMMEDIATE`` straight to the DBAPI connection (:data:`DIRECT`). PostgreSQL gets a
short connect timeout (an unreachable server fails fast) and pre-ping (a restarted server is survived).
Both replace lone surrogates and NULs in text parameters and JSON values by U+FFFD (see :func:`_valid_unicode`
and :mod:`marsrag.text`).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, Connection, Dialect, make_url
from sqlalchemy.engine.interfaces import DBAPIModule
from sqlalchemy.exc import ArgumentError, DBAPIError, StatementError
from sqlalchemy.pool import ConnectionPoolEntry, PoolProxiedConnection

from marsrag.errors import StoreUnavailableError
from marsrag.paths import data_dir
from marsrag.project import current_data_dir, prepare_data_dir
from marsrag.text import has_unstorable, loads_storable, storable, storable_json
from marsrag.urls import mask

#: Execution option marking a connection that writes; on SQLite it begins with ``BEGIN IMMEDIATE``.
WRITE_OPTION = "marsrag_write"
#: :data:`WRITE_OPTION`'s value for a write whose ``BEGIN IMMEDIATE`` goes to the DBAPI connection, not through
#: SQLAlchemy's statement execution, which costs several times SQLite's BEGIN: the task commit's, whose other
#: statements run on the DBAPI cursor too (see marsrag.store._prepared). Errors are translated as SQLAlchemy does.
DIRECT = "direct"

SQLITE_BUSY_TIMEOUT_MS = 30_000
POSTGRES_CONNECT_TIMEOUT_S = 5


# JSON values are written with no escaped lone surrogate or NUL (PostgreSQL's JSON functions reject both, and a
# reader would hand them on), and values stored so before that rule are read back storable.
_JSON_CODEC: dict[str, Any] = {"json_serializer": storable_json, "json_deserializer": loads_storable}

_EXPECTED = "expected sqlite:///PATH or postgresql+psycopg://USER@HOST:PORT/DATABASE"


def parse_url(text: str) -> URL:
    """Parse and normalize a store URL (``postgresql://`` means psycopg 3).

    Raises:
        StoreUnavailableError: unparseable, an unsupported scheme or driver, or an in-memory SQLite database.
    """
    try:
        url = make_url(text)
    except (ArgumentError, ValueError) as error:
        raise StoreUnavailableError(f"database URL {mask(text)!r} cannot be parsed ({error}); {_EXPECTED}") from None
    # Split by hand: URL.get_driver_name() imports the dialect to find its default driver.
    backend, _, driver = url.drivername.partition("+")
    if backend == "sqlite" and driver in ("", "pysqlite"):
        if not url.database or url.database == ":memory:" or url.query.get("mode") == "memory":
            raise StoreUnavailableError(
                f"database URL {url.render_as_string()!r} names an in-memory SQLite database, which every "
                "connection sees empty; use a file: sqlite:///PATH"
            )
        return url
    if backend == "postgresql" and driver in ("", "psycopg"):
        if url.host and "@" in url.host:
            # An unescaped "@" in the password ends it early; the rest would be taken for the host and echoed.
            raise StoreUnavailableError(
                f"database URL {_hide_userinfo(text)!r} has an '@' in its user or password: percent-encode it as %40"
            )
        return url.set(drivername="postgresql+psycopg")
    raise StoreUnavailableError(f"database URL scheme {url.drivername!r} is not supported; {_EXPECTED}")


def _hide_userinfo(text: str) -> str:
    """The URL with everything between ``://`` and its last ``@`` masked."""
    scheme, _, rest = text.partition("://")
    return f"{scheme}://***@{rest.rpartition('@')[2]}"


def create(url: URL) -> Engine:
    """An engine for a URL returned by :func:`parse_url`, with the backend's connection setup attached.

    Raises:
        StoreUnavailableError: the SQLite file's directory cannot be created, or the engine rejects the URL's options.
    """
    try:
        if url.get_backend_name() == "sqlite":
            return _sqlite_engine(url)
        return _postgres_engine(url)
    except (ArgumentError, TypeError, ValueError) as error:
        raise StoreUnavailableError(f"database URL {url.render_as_string()!r} has unusable options: {error}") from None


def _sqlite_engine(url: URL) -> Engine:
    assert url.database is not None
    if not url.query.get("uri") and url.database != ":memory:":
        parent = Path(url.database).parent
        # Only MarsRAG's own data folders (the data directory, the project's .marsrag/) are made on demand; a
        # folder a URL names must exist (a typo such as sqlite:////nonexistdir/x.db would otherwise create
        # /nonexistdir).
        if parent.resolve() in {data_dir().resolve(), current_data_dir().resolve()}:
            try:
                prepare_data_dir(parent)
            except OSError as error:
                raise StoreUnavailableError(
                    f"cannot create the directory of the SQLite database {url.database!r}: {error}"
                ) from None
        elif not parent.is_dir():
            what = "is not a directory" if parent.exists() else "does not exist"
            raise StoreUnavailableError(
                f"the directory of the SQLite database {url.database!r} {what}: create it first "
                "(MarsRAG creates only its own data directory)"
            )
    engine = create_engine(url, **_JSON_CODEC)
    event.listen(engine, "connect", _sqlite_connect)
    event.listen(engine, "begin", _sqlite_begin)
    event.listen(engine, "before_cursor_execute", _valid_unicode, retval=True)
    return engine


def _sqlite_connect(dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
    # Stop the sqlite3 module's own implicit BEGIN (it skips SELECT and DDL); _sqlite_begin emits ours.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        # busy_timeout first: switching to WAL takes a lock another opener may hold.
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        _switch_to_wal(cursor)
        # With WAL, NORMAL syncs at checkpoints instead of on every commit: a killed process never loses a
        # committed transaction; only a power cut may drop the last few (the database stays consistent).
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.execute("PRAGMA foreign_keys = ON")
    finally:
        cursor.close()


def _switch_to_wal(cursor: Any) -> None:
    # Switching a brand-new file to WAL can fail at once with "database is locked" while other connections
    # open it, without waiting for busy_timeout: retry for as long as busy_timeout would have waited.
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _sqlite_begin(connection: Connection) -> None:
    # A deferred transaction that later writes fails at once (SQLITE_BUSY) when another connection wrote in
    # between; taking the write lock up front makes writers wait their turn on busy_timeout instead.
    mode = connection.get_execution_options().get(WRITE_OPTION, False)
    if mode == DIRECT:
        _begin_directly(connection, "BEGIN IMMEDIATE")
    else:
        connection.exec_driver_sql("BEGIN IMMEDIATE" if mode else "BEGIN")


def _begin_directly(connection: Connection, statement: str) -> None:
    """Run ``statement`` on the connection's DBAPI connection, a DBAPI error raised as SQLAlchemy's own."""
    dbapi_connection = connection.connection.driver_connection
    try:
        dbapi_connection.execute(statement)  # type: ignore[union-attr]
    except connection.dialect.loaded_dbapi.Error as error:
        pooled = connection.connection
        raise dbapi_error(connection.dialect, connection.invalidate, statement, (), error, pooled) from error


def dbapi_error(
    dialect: Dialect,
    invalidate: Callable[[BaseException], None],
    statement: str | None,
    params: Any,
    error: DBAPIModule.Error,
    pooled: PoolProxiedConnection,
    cursor: Any = None,
) -> StatementError:
    """A DBAPI error of ``statement`` as SQLAlchemy's ``execute`` raises it (a ``DBAPIError``), marked when lost.

    ``pooled`` is the pool's connection the statement ran on, ``invalidate`` what discards it (a SQLAlchemy
    connection's or the pooled connection's own). When the dialect says the connection was lost, it is
    invalidated and the error marked, so the store's retries see what they would have seen.
    """
    lost = dialect.is_disconnect(error, pooled.dbapi_connection, cursor)
    if lost:
        invalidate(error)
    base = dialect.loaded_dbapi.Error
    return DBAPIError.instance(statement, params, error, base, connection_invalidated=lost, dialect=dialect)


def _postgres_engine(url: URL) -> Engine:
    connect_args: dict[str, Any] = {}
    if "connect_timeout" not in url.query:
        connect_args["connect_timeout"] = POSTGRES_CONNECT_TIMEOUT_S
    engine = create_engine(url, pool_pre_ping=True, connect_args=connect_args, **_JSON_CODEC)
    event.listen(engine, "before_cursor_execute", _valid_unicode, retval=True)
    return engine


def _valid_unicode(
    _connection: Connection, _cursor: Any, statement: str, parameters: Any, _context: Any, executemany: bool
) -> tuple[str, Any]:
    # The last line of defence for text from anywhere (a goal, a file, an LLM answer): U+FFFD for each lone
    # surrogate, as a lossy UTF-8 decode would give, instead of a write that fails on encoding.
    if executemany and isinstance(parameters, list):
        return statement, [storable_parameters(row) for row in parameters]
    return statement, storable_parameters(parameters)


def storable_parameters(parameters: Any) -> Any:
    """DBAPI parameters (a dict, tuple or list) with every lone surrogate in their text replaced by U+FFFD."""
    if isinstance(parameters, dict):
        if any(isinstance(v, str) and has_unstorable(v) for v in parameters.values()):
            return {k: storable(v) if isinstance(v, str) else v for k, v in parameters.items()}
    elif isinstance(parameters, tuple | list):
        if any(isinstance(v, str) and has_unstorable(v) for v in parameters):
            return type(parameters)(storable(v) if isinstance(v, str) else v for v in parameters)
    return parameters


def one_line(error: BaseException) -> str:
    """An exception's message on one line (drivers' messages often span several)."""
    lines = (line.strip() for line in str(error).splitlines())
    return "; ".join(line for line in lines if line) or type(error).__name__
