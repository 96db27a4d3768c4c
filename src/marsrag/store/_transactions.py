"""The one path every SQL statement of the store takes: a transaction, retried when its connection drops.

A PostgreSQL connection can be cut at any statement (a failover, ``pg_terminate_backend``, a proxy's idle
timeout); a transaction can be chosen as a deadlock's victim. Either way the transaction did not happen, or, for a
connection cut during ``COMMIT``, it may have: :meth:`Transactions.writing` asks ``landed`` first on the fresh
connection. Every read and write of the run store and of the knowledge base goes through :class:`Transactions`,
so none has a retry policy of its own (or none at all): :data:`RETRY_DELAYS` between tries, for at most
:data:`RETRY_BUDGET` seconds since the first.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DBAPIError, OperationalError, SQLAlchemyError

import marsrag.store._direct as _direct
import marsrag.store._engine as _engine
from marsrag.errors import StoreError
from marsrag.store._prepared import Cursor
from marsrag.store.base import RETRY_BUDGET, RETRY_DELAYS

Result = TypeVar("Result")

log = logging.getLogger(__name__)

# SQLSTATE classes of a connection that is gone: connection exceptions (08) and operator intervention (57P:
# an administrator's shutdown or pg_terminate_backend). The driver may not have marked the connection broken yet
# when the server's message arrives, so SQLAlchemy would not call it a disconnect.
_LOST_STATES = ("08", "57P")
# A deadlock's victim (40P01) and a serialization failure (40001): the server rolled the whole transaction back,
# so running it again is safe (and nothing of it landed).
_ROLLED_BACK_STATES = ("40P01", "40001")


def dropped(error: BaseException) -> bool:
    """Whether a database error means the connection was lost (the server closed it, or the network did)."""
    if not isinstance(error, DBAPIError):
        return False
    return bool(error.connection_invalidated) or _sqlstate(error).startswith(_LOST_STATES) or _unanswered(error)


def _unanswered(error: DBAPIError) -> bool:
    """Whether the driver failed to talk to the server at all: an operational error without the SQLSTATE that
    every error the server sends carries, from a driver that reports one (psycopg: ``sqlstate`` None).

    A backend killed in the middle of a pipeline leaves psycopg saying "sending query failed: cannot exit
    pipeline mode while busy" before the connection is marked broken, so neither SQLAlchemy nor the SQLSTATE
    says it dropped. SQLite's errors have no SQLSTATE at all and are never taken for this.
    """
    return isinstance(error, OperationalError) and hasattr(error.orig, "sqlstate") and not _sqlstate(error)


def rolled_back(error: BaseException) -> bool:
    """Whether a database error is one the server answered by rolling the transaction back (a deadlock)."""
    return isinstance(error, DBAPIError) and _sqlstate(error) in _ROLLED_BACK_STATES


def _sqlstate(error: DBAPIError) -> str:
    return getattr(error.orig, "sqlstate", None) or ""


def _retrying(action: str, error: SQLAlchemyError, delay: float) -> None:
    # An operator sees each retry (a failover, a deadlock) in the log, even when the retry then succeeds.
    why = "a deadlock" if rolled_back(error) else "a dropped connection"
    detail = _engine.one_line(getattr(error, "orig", None) or error)
    log.warning("retrying to %s in %.1f s after %s: %s", action, delay, why, detail)


class Transactions:
    """Read and write transactions on one engine, each retried on a fresh connection when it drops."""

    def __init__(self, engine: Engine, url: str) -> None:
        """Transactions on an engine made by :func:`marsrag.store._engine.create`; ``url`` (masked) in errors."""
        self.url = url
        self._engine = engine
        self._writer = engine.execution_options(**{_engine.WRITE_OPTION: True})
        # The task commit's: its BEGIN IMMEDIATE goes to the DBAPI connection (see marsrag.store._engine.DIRECT).
        self._direct_writer = engine.execution_options(**{_engine.WRITE_OPTION: _engine.DIRECT})
        # On SQLite the task commit runs without a SQLAlchemy connection when it can (see marsrag.store._direct).
        self._direct_commits = engine.dialect.name == "sqlite"

    def writing(
        self,
        action: str,
        body: Callable[[Connection], Result],
        landed: Callable[[Connection], Result | None] | None = None,
        *,
        direct: Callable[[Cursor], Result] | None = None,
    ) -> Result:
        """Run ``body`` in one write transaction; on a dropped connection or a deadlock, again on a fresh one.

        ``landed`` tells, on a fresh connection, whether a try whose connection dropped committed after all
        (a drop during COMMIT leaves its outcome unknown): its result, else None and ``body`` runs again.
        Without it the write is retried as it is, so ``body`` must be safe to apply twice. ``direct`` (the task
        commit's): the same write on a DBAPI cursor, whose transaction begins on the DBAPI connection (see
        marsrag.store._engine.DIRECT); on SQLite its first try runs without a SQLAlchemy connection, and
        ``body`` runs only when it needs one (see marsrag.store._direct).

        Raises:
            StoreError: the write failed for another reason, or the connection kept dropping past the budget.
        """
        writer = self._writer if direct is None else self._direct_writer
        lost = False
        deadline = time.monotonic() + RETRY_BUDGET
        for delay in (*RETRY_DELAYS, None):
            try:
                if direct is not None and self._direct_commits and not lost:
                    try:
                        with _direct.transaction(self._engine) as cursor:
                            return direct(cursor)
                    except _direct.NeedsConnection:
                        pass  # rolled back: the ordinary transaction below runs the write
                with writer.begin() as connection:
                    if lost and landed is not None and (done := landed(connection)) is not None:
                        return done
                    return body(connection)
            except SQLAlchemyError as error:
                # A deadlock's victim was rolled back whole: it runs again as it is, no landed check needed.
                retry = dropped(error) or rolled_back(error)
                if not retry or delay is None or time.monotonic() + delay > deadline:
                    raise self.error(action, error) from error
                lost = lost or dropped(error)
                _retrying(action, error, delay)
                time.sleep(delay)
        raise AssertionError("unreachable")  # the loop returns or raises

    def reading(self, action: str, body: Callable[[Connection], Result]) -> Result:
        """Run ``body`` in one (deferred) read transaction; on a dropped connection, again on a fresh one.

        One transaction per read, so what it reads (a task and its attempts) comes from one snapshot.

        Raises:
            StoreError: the read failed for another reason, or the connection kept dropping past the budget.
        """
        deadline = time.monotonic() + RETRY_BUDGET
        for delay in (*RETRY_DELAYS, None):
            try:
                with self._engine.begin() as connection:
                    return body(connection)
            except SQLAlchemyError as error:
                if not dropped(error) or delay is None or time.monotonic() + delay > deadline:
                    raise self.error(action, error) from error
                _retrying(action, error, delay)
                time.sleep(delay)
        raise AssertionError("unreachable")  # the loop returns or raises

    def error(self, action: str, error: SQLAlchemyError) -> StoreError:
        """``error`` as the store reports it: what it could not do, where, and the driver's reason on one line."""
        detail = _engine.one_line(getattr(error, "orig", None) or error)
        return StoreError(f"cannot {action} in {self.url}: {detail}")
