"""Schema migrations, applied when a store is opened: idempotent, serialized, silent.

Alembic runs programmatically on the store's own connection (no ``alembic.ini``), inside one transaction that
holds a lock: ``BEGIN IMMEDIATE`` on SQLite, an advisory lock on PostgreSQL, so two processes opening a new
database at once migrate it once. A database already at :data:`HEAD` is recognised with one query, without
importing Alembic, which keeps opening a store cheap.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Connection, Engine, column, inspect, select, table, text
from sqlalchemy.exc import SQLAlchemyError

from marsrag.errors import StoreUnavailableError
from marsrag.store._engine import WRITE_OPTION, one_line
from marsrag.store.schema import VERSION_TABLE

#: The newest revision in ``migrations/versions`` (a test keeps the two in step).
HEAD = "0019"
#: The revision of the metric rollups as this MarsRAG keeps them (0010: per day; 0011: and all time; 0013: per
#: experiment arm, with the feedback and the edited follows): a database migrated from before it gets them recounted.
ROLLUPS = "0013"

MIGRATIONS = Path(__file__).with_name("migrations")

# Arbitrary but fixed: every MarsRAG process contends for the same advisory lock ("mars" in ASCII).
_PG_LOCK_KEY = 0x6D617273


def current_revision(connection: Connection) -> str | None:
    """The schema revision recorded in the database; None when it was never migrated."""
    if not inspect(connection).has_table(VERSION_TABLE):
        return None
    version = table(VERSION_TABLE, column("version_num"))
    return connection.execute(select(version.c.version_num)).scalar()


def ensure_schema(engine: Engine, url: str) -> None:
    """Bring the database to :data:`HEAD` unless it is there already.

    Raises:
        StoreUnavailableError: the database cannot be reached, or the migration fails (e.g. the database carries a
            revision this MarsRAG does not know, written by a newer one).
    """
    try:
        with engine.connect() as connection:
            if current_revision(connection) == HEAD:
                return
        with engine.execution_options(**{WRITE_OPTION: True}).begin() as connection:
            if connection.dialect.name == "postgresql":
                connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_LOCK_KEY})
            _upgrade(connection, url)
    except SQLAlchemyError as error:
        raise StoreUnavailableError(
            f"cannot open the run store at {url}: {one_line(getattr(error, 'orig', None) or error)}"
        ) from error


def _upgrade(connection: Connection, url: str) -> None:
    from alembic import command  # lazy: Alembic, only for a database that needs migrating
    from alembic.config import Config  # lazy: Alembic
    from alembic.util import CommandError  # lazy: Alembic

    config = Config()
    # Config values go through ConfigParser interpolation: a literal '%' in the path must be doubled.
    config.set_main_option("script_location", str(MIGRATIONS).replace("%", "%%"))
    config.attributes["connection"] = connection
    before = current_revision(connection)
    try:
        command.upgrade(config, "head")
    except CommandError as error:
        found = current_revision(connection)
        raise StoreUnavailableError(
            f"cannot migrate the run store at {url}: its schema revision is {found!r}, this MarsRAG knows revisions "
            f"up to {HEAD!r} (a newer MarsRAG may have migrated it): {one_line(error)}"
        ) from error
    if before is None or before < ROLLUPS:
        # The backfill of migrations 0010, 0011 and 0013, with this MarsRAG's definitions: recount the rollups from
        # the rows.
        from marsrag.store._rollups import rebuild  # lazy: only for a database that was just migrated

        rebuild(connection)
