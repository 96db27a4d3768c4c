"""Whether a run outlives this process: the store read again through a new connection, no file created.

Connections already open keep the SQLite file they opened: remove (or replace) the file while a run is under
way and the run still completes and reads back, from a file nobody can reach any more. A new connection opens
the database by its name again, so it tells whether the state was kept where the user asked.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlalchemy import Engine, create_engine, select
from sqlalchemy.engine import URL
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import NullPool

from marsrag.store import _engine
from marsrag.store.schema import runs


def holds_run(url: str, run_id: str) -> bool:
    """Whether a new connection to the store at ``url`` finds run ``run_id``; False when it cannot read it.

    A SQLite database is opened read-only, so a removed file is not created again (empty) by asking.

    Raises:
        StoreUnavailableError: ``url`` is not a store URL.
    """
    parsed = _engine.parse_url(url)
    engine = _fresh_engine(parsed)
    if engine is None:
        return False
    try:
        with engine.connect() as connection:
            found = connection.execute(select(runs.c.run_id).where(runs.c.run_id == run_id)).first()
        return found is not None
    except SQLAlchemyError:
        return False
    finally:
        engine.dispose()


def _fresh_engine(url: URL) -> Engine | None:
    if url.get_backend_name() != "sqlite" or url.query.get("uri"):
        # A server database, or a SQLite URI (its own open flags): the store's engine, one new connection.
        return _engine.create(url)
    assert url.database is not None  # parse_url refuses a SQLite URL without a file
    path = Path(url.database).absolute()
    if not path.is_file():
        return None
    target = f"{path.as_uri()}?mode=ro"
    return create_engine("sqlite://", creator=lambda: sqlite3.connect(target, uri=True), poolclass=NullPool)
