"""Cutting a PostgreSQL store's connection under chosen statements, by the server itself (``pg_terminate_backend``).

Statements are counted by psycopg's cursor (its ``cursor_factory``), not by SQLAlchemy's events: the task commit
sends its prepared statements on the DBAPI cursor itself (see marsrag.store._prepared).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from sqlalchemy import Engine, event, text

from marsrag.store import RunStore
from marsrag.store.sql import SqlRunStore


@contextmanager
def cutting(store: RunStore, admin: Engine, cut: Callable[[int], bool]) -> Iterator[list[int]]:
    """While active, terminate the store's connection just before each statement ``n`` (1, 2...) with ``cut(n)``.

    Yields the numbers of the statements cut so far.
    """
    assert isinstance(store, SqlRunStore)
    cuts: list[int] = []
    count = 0

    def tick(connection: psycopg.Connection[Any]) -> None:
        nonlocal count
        count += 1
        if cut(count):
            with admin.connect() as other:
                # Waits (up to 5 s) until the backend is gone: the statement meets a dead connection.
                other.execute(text("SELECT pg_terminate_backend(:pid, 5000)"), {"pid": connection.info.backend_pid})
            cuts.append(count)

    class Cutting(psycopg.Cursor[Any]):
        def execute(self, *args: Any, **kwargs: Any) -> Any:
            tick(self.connection)
            return super().execute(*args, **kwargs)

        def executemany(self, *args: Any, **kwargs: Any) -> Any:
            tick(self.connection)
            return super().executemany(*args, **kwargs)

    def checkout(dbapi_connection: Any, *_: Any) -> None:
        dbapi_connection.cursor_factory = Cutting

    event.listen(store.engine, "checkout", checkout)
    try:
        yield cuts
    finally:
        event.remove(store.engine, "checkout", checkout)
        store.engine.dispose()  # no pooled connection keeps the counting cursor
