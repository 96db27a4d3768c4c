"""Alembic environment for the run store: migrates the connection the store hands over, nothing else.

The store runs this through ``alembic.command.upgrade`` with its own open connection in
``config.attributes["connection"]``. Deliberately no ``fileConfig``: a library must not configure logging.
Offline mode (SQL scripts for review) reads ``sqlalchemy.url`` from the config.
"""

from __future__ import annotations

from alembic import context

from marsrag.store.schema import VERSION_TABLE, include_name, metadata

config = context.config

if context.is_offline_mode():
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=metadata,
        version_table=VERSION_TABLE,
        literal_binds=True,
    )
    with context.begin_transaction():
        context.run_migrations()
else:
    connection = config.attributes.get("connection")
    if connection is None:
        raise RuntimeError(
            "the run store migrations run on a connection the store provides; use marsrag.store.open_store()"
        )
    # include_name keeps the full-text objects (FTS5 tables, tsvector column) out of autogenerate's diff.
    context.configure(
        connection=connection,
        target_metadata=metadata,
        version_table=VERSION_TABLE,
        include_name=include_name,  # type: ignore[arg-type]  # Alembic types the hook narrower than it calls it
    )
    # The store opened the transaction (and holds the migration lock); Alembic joins it.
    with context.begin_transaction():
        context.run_migrations()
