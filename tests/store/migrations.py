"""A database at an earlier schema revision, to store rows the way that revision did before upgrading them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection

from marsrag.store import _engine
from marsrag.store._migrate import MIGRATIONS


@contextmanager
def at_revision(db_url: str, revision: str, *, downgrade: bool = False) -> Iterator[Connection]:
    """A connection to the database at ``db_url`` migrated up (or down) to ``revision``, in one transaction.

    The transaction commits when the block ends; the store migrates the database to the head when next opened.
    """
    engine = _engine.create(_engine.parse_url(db_url))
    try:
        with engine.begin() as connection:
            config = Config()
            config.set_main_option("script_location", str(MIGRATIONS))
            config.attributes["connection"] = connection
            (command.downgrade if downgrade else command.upgrade)(config, revision)
            yield connection
    finally:
        engine.dispose()
