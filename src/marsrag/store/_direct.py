"""The task commit's transaction on SQLite, on a pooled DBAPI connection rather than a SQLAlchemy ``Connection``.

On SQLite a task commit spent about as long in SQLAlchemy's connection and transaction objects (checkout, the
begin, commit and reset events, ~50 us) as in all of its statements, which already run on the DBAPI cursor
(see marsrag.store._prepared). So the store runs the common task commit on a connection of the engine's pool
itself: ``BEGIN IMMEDIATE``, the prepared statements (:class:`~marsrag.store._prepared.Cursor`), ``COMMIT``.
A DBAPI error is raised as SQLAlchemy's own, as ``execute`` or the transaction would raise it, so the store's
messages and retries are the same; anything else rolls the transaction back.

A commit that needs more than the prepared statements (replacing a task, a run already counted, ratings, a
missing run...) reaches for its SQLAlchemy connection, which is :data:`UNAVAILABLE` here: the first use raises
:class:`NeedsConnection`, the transaction is rolled back before it wrote anything another connection can see,
and the store runs the same commit again in an ordinary SQLAlchemy transaction.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

from sqlalchemy import Connection, Engine

from marsrag.store._prepared import Cursor


class NeedsConnection(Exception):
    """A direct commit used its SQLAlchemy connection: it is rolled back and runs again on one."""


class _Unavailable:
    """Stands in for the SQLAlchemy connection in a direct commit: any use of it raises NeedsConnection."""

    def __getattr__(self, name: str) -> Any:
        raise NeedsConnection(name)


#: The "connection" a direct commit's code is given (typed as one: the same code runs on a real one).
UNAVAILABLE = cast(Connection, _Unavailable())


@contextmanager
def transaction(engine: Engine) -> Iterator[Cursor]:
    """A ``BEGIN IMMEDIATE`` transaction on a pooled connection of ``engine`` (SQLite), committed at the block's end.

    Raises:
        NeedsConnection: no connection could be checked out (the SQLAlchemy path reports why), or the block
            used the SQLAlchemy connection.
        sqlalchemy.exc.DBAPIError: the database refused a statement, the BEGIN or the COMMIT.
    """
    dialect = engine.dialect
    try:
        pooled = engine.raw_connection()
    except dialect.loaded_dbapi.Error:
        raise NeedsConnection("connect") from None  # an ordinary connect fails again, and says so as usual
    try:
        dbapi_connection = pooled.driver_connection
        try:
            cursor = Cursor(dialect, pooled, pooled.invalidate)
        except dialect.loaded_dbapi.Error:
            raise NeedsConnection("cursor") from None
        try:
            try:
                dbapi_connection.execute("BEGIN IMMEDIATE")  # type: ignore[union-attr]
            except dialect.loaded_dbapi.Error as error:
                raise cursor.error("BEGIN IMMEDIATE", (), error) from error
            yield cursor
            try:
                dbapi_connection.commit()  # type: ignore[union-attr]
            except dialect.loaded_dbapi.Error as error:
                raise cursor.error(None, None, error) from error  # no statement, as SQLAlchemy's commit says
        except BaseException:
            _rollback(pooled.driver_connection, pooled.invalidate, dialect.loaded_dbapi.Error)
            raise
        finally:
            cursor.close()
    finally:
        pooled.close()


def _rollback(dbapi_connection: Any, invalidate: Any, error_type: type[Exception]) -> None:
    """Roll back (nothing when no transaction is open); a connection that cannot is discarded, not pooled."""
    try:
        dbapi_connection.rollback()
    except error_type as error:
        invalidate(error)
