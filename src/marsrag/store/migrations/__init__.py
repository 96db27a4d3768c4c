"""Alembic migrations of the run store, applied by :func:`marsrag.store.open_store` (see ``_migrate``)."""
