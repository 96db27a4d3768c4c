"""The run store: one interface (:class:`RunStore`), opened from a URL by :func:`open_store`.

Everything above the store (runtime, metrics, retrieval, the web) uses only this package's public names: the
interface, its read models (:mod:`marsrag.store.queries`) and :class:`KnowledgeStore`. The SQL behind them
(``marsrag.store.sql`` and the private modules) is the store's own business.

Importing this package stays cheap: SQLAlchemy and Alembic load only when a store is opened.
"""

from __future__ import annotations

from marsrag.settings import resolve_settings
from marsrag.store.base import LEGACY_COLLECTION, KnowledgeStore, Rankings, RunStore
from marsrag.store.queries import (
    ChunkHit,
    ChunkText,
    ChunkVectors,
    CollectionSummary,
    DocumentChange,
    DocumentKey,
    DocumentOutcome,
    DocumentSummary,
    DocumentVersion,
    GroupedCounts,
    GroupKey,
    LoopCounts,
    MetricTotals,
    OutcomeCount,
    Removal,
    TaskFailure,
    TermCounts,
    UnembeddedChunk,
    UnsupportedGoal,
)

__all__ = [
    "LEGACY_COLLECTION",
    "ChunkHit",
    "ChunkText",
    "CollectionSummary",
    "DocumentChange",
    "DocumentKey",
    "DocumentOutcome",
    "DocumentSummary",
    "DocumentVersion",
    "GroupKey",
    "GroupedCounts",
    "KnowledgeStore",
    "LoopCounts",
    "MetricTotals",
    "OutcomeCount",
    "Rankings",
    "Removal",
    "RunStore",
    "TaskFailure",
    "TermCounts",
    "ChunkVectors",
    "UnembeddedChunk",
    "UnsupportedGoal",
    "default_db_url",
    "open_store",
    "still_holds",
]


def default_db_url() -> str:
    """The store URL to use when none is given: the resolved settings' (``$MARSRAG_DB``, the settings file, else
    a SQLite file in the data directory)."""
    return resolve_settings().db


def open_store(url: str | None = None) -> RunStore:
    """Open the run store at ``url`` (default :func:`default_db_url`), creating and migrating it as needed.

    Accepts ``sqlite:///PATH`` (the directory is created) and ``postgresql+psycopg://USER@HOST/DB``
    (``postgresql://`` means the same driver). The database is contacted once here, so a bad address fails
    now rather than at the first write.

    Raises:
        StoreUnavailableError: a bad URL (unparseable, unknown scheme, in-memory SQLite), an unreachable database
            or one that cannot be migrated.
    """
    from marsrag.store.sql import SqlRunStore  # lazy: SQLAlchemy, loaded only when a store opens

    return SqlRunStore.from_url(default_db_url() if url is None else url)


def still_holds(url: str, run_id: str) -> bool:
    """Whether the store at ``url``, read through a new connection, has run ``run_id`` (nothing is created).

    False when its SQLite file was removed or replaced since it was opened, or it cannot be read now.
    """
    from marsrag.store._recheck import holds_run  # lazy: SQLAlchemy, loaded only when a store is read

    return holds_run(url, run_id)
