"""Which database errors the store's transactions take for a dropped connection (and retry on a fresh one)."""

from __future__ import annotations

import sqlite3

import psycopg
import psycopg.errors
from sqlalchemy.exc import DBAPIError

from marsrag.store._transactions import dropped, rolled_back


def wrapped(error: Exception, base: type[Exception]) -> DBAPIError:
    """A driver's error as SQLAlchemy raises it from a statement."""
    return DBAPIError.instance("COMMIT", (), error, base)


def test_a_psycopg_error_the_server_never_answered_is_a_dropped_connection() -> None:
    """A backend killed mid-pipeline: psycopg's client-side error has no SQLSTATE, and the connection is gone."""
    error = wrapped(
        psycopg.OperationalError("sending query failed: cannot exit pipeline mode while busy"), psycopg.Error
    )
    assert dropped(error) and not rolled_back(error)


def test_errors_the_server_sent_keep_their_meaning() -> None:
    """An administrator's termination (57P01) is dropped; a constraint violation or a deadlock is not."""
    terminated = psycopg.errors.AdminShutdown("terminating connection due to administrator command")
    assert dropped(wrapped(terminated, psycopg.Error))
    assert not dropped(wrapped(psycopg.errors.UniqueViolation("duplicate key"), psycopg.Error))
    deadlock = wrapped(psycopg.errors.DeadlockDetected("deadlock detected"), psycopg.Error)
    assert not dropped(deadlock) and rolled_back(deadlock)


def test_sqlite_errors_are_never_taken_for_a_dropped_connection() -> None:
    """SQLite reports no SQLSTATE: a missing table is a missing table, not a connection to retry."""
    assert not dropped(wrapped(sqlite3.OperationalError("no such table: runs"), sqlite3.Error))
    assert not dropped(wrapped(sqlite3.OperationalError("database is locked"), sqlite3.Error))
