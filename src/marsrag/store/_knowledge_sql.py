"""The knowledge base's tables in SQL: documents replaced in one transaction, chunks found by full-text search.

Moved behind the store seam from ``marsrag.rag.knowledge``, which keeps reading, chunking and ranking policy.
Search ranks with BM25 on SQLite (FTS5) and ``ts_rank_cd`` on PostgreSQL, headings weighing 2.5 times the text
on both. The query words arrive already chosen (letters and digits only); this module only spells them in its
backend's full-text syntax.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime

from sqlalchemy import Connection, Engine, bindparam, delete, insert, select, text, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from marsrag.errors import StoreError
from marsrag.store._engine import WRITE_OPTION, one_line
from marsrag.store.base import DocumentOutcome, KnowledgeStore
from marsrag.store.queries import ChunkHit, ChunkText
from marsrag.store.schema import chunks, documents

# FOR UPDATE (PostgreSQL; SQLite's BEGIN IMMEDIATE already serializes writers): a second ingest of the same
# changed file waits for the first, then finds it unchanged instead of colliding on chunk positions.
_SHA = select(documents.c.sha256).where(documents.c.path == bindparam("path")).with_for_update()
_INSERT_DOCUMENT = insert(documents)
_UPDATE_DOCUMENT = update(documents).where(documents.c.path == bindparam("b_path"))
_DELETE_CHUNKS = delete(chunks).where(chunks.c.document_path == bindparam("path"))
_INSERT_CHUNKS = insert(chunks)

# The inner query ranks inside the FTS index and keeps `limit` rowids; only those are joined to their text.
_SEARCH_SQLITE = text(
    "SELECT c.id, c.document_path, c.heading, c.text, -f.rank AS score FROM ("
    " SELECT rowid AS id, bm25(chunks_fts, 2.5, 1.0) AS rank FROM chunks_fts"
    " WHERE chunks_fts MATCH :query ORDER BY rank, rowid LIMIT :limit"
    ") AS f JOIN chunks AS c ON c.id = f.id ORDER BY f.rank, c.id"
)
# Normalization 1 divides by 1 + log(length), as BM25 discounts long chunks; weights A (heading) 1.0, B 0.4.
_SEARCH_POSTGRES = text(
    "SELECT c.id, c.document_path, c.heading, c.text, ts_rank_cd(c.fts, q.query, 1) AS score"
    " FROM chunks AS c, to_tsquery('english', :query) AS q(query)"
    " WHERE c.fts @@ q.query ORDER BY score DESC, c.id LIMIT :limit"
)


def fts5_query(words: Sequence[str]) -> str:
    """An FTS5 MATCH expression: each word a quoted string, OR-ed (``"cache" OR "restart"``)."""
    # Words hold no '"' (letters and digits only), so quoting needs no escaping.
    return " OR ".join(f'"{word}"' for word in words)


def tsquery(words: Sequence[str]) -> str:
    """A PostgreSQL ``to_tsquery`` expression: each word quoted, OR-ed (``'cache' | 'restart'``)."""
    return " | ".join(f"'{word}'" for word in words)


class SqlKnowledgeStore(KnowledgeStore):
    """Documents and their chunks in the run store's SQL database (migration 0002 made their tables)."""

    def __init__(self, engine: Engine) -> None:
        """Use the engine of an open :class:`marsrag.store.sql.SqlRunStore` (migrated, with its connection setup)."""
        self.url = engine.url.render_as_string(hide_password=True)
        self._engine = engine
        self._writer = engine.execution_options(**{WRITE_OPTION: True})
        postgres = engine.dialect.name == "postgresql"
        self._search = _SEARCH_POSTGRES if postgres else _SEARCH_SQLITE
        self._format = tsquery if postgres else fts5_query

    def known_hashes(self) -> dict[str, str]:
        """Document path -> the SHA-256 of its ingested content."""
        with self._errors("read the knowledge base"), self._engine.connect() as connection:
            return {path: sha256 for path, sha256 in connection.execute(select(documents.c.path, documents.c.sha256))}

    def replace_document(self, path: str, sha256: str, size: int, pieces: Sequence[ChunkText]) -> DocumentOutcome:
        """Store a document's chunks in one transaction, unless it is stored with this hash already (see base)."""
        with self._errors(f"ingest {path}"):
            try:
                with self._writer.begin() as connection:
                    return self._replace(connection, path, sha256, size, pieces)
            except IntegrityError:
                # A new document has no row to lock: a concurrent ingest may insert it first. Once more, then it
                # is there to compare with.
                with self._writer.begin() as connection:
                    return self._replace(connection, path, sha256, size, pieces)

    def search_chunks(self, words: Sequence[str], limit: int) -> list[ChunkHit]:
        """The chunks matching any of ``words``, best first, at most ``limit`` (see base)."""
        if not words or limit <= 0:
            return []
        with self._errors("search the knowledge base"), self._engine.connect() as connection:
            rows = connection.execute(self._search, {"query": self._format(words), "limit": limit}).all()
        return [ChunkHit(int(id_), path, heading, body, float(score)) for id_, path, heading, body, score in rows]

    @staticmethod
    def _replace(
        connection: Connection, key: str, sha256: str, size: int, pieces: Sequence[ChunkText]
    ) -> DocumentOutcome:
        # Checked again under the write lock: another process may have ingested the same file meanwhile.
        current = connection.execute(_SHA, {"path": key}).scalar()
        if current == sha256:
            return "unchanged"
        now = datetime.now(UTC)
        if current is None:
            connection.execute(_INSERT_DOCUMENT, [{"path": key, "sha256": sha256, "size": size, "ingested_at": now}])
        else:
            connection.execute(_DELETE_CHUNKS, {"path": key})
            connection.execute(_UPDATE_DOCUMENT, {"b_path": key, "sha256": sha256, "size": size, "ingested_at": now})
        if pieces:
            rows = [
                {"document_path": key, "position": p.position, "heading": p.heading, "text": p.text} for p in pieces
            ]
            connection.execute(_INSERT_CHUNKS, rows)
        return "added" if current is None else "updated"

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        try:
            yield
        except SQLAlchemyError as error:
            detail = one_line(getattr(error, "orig", None) or error)
            raise StoreError(f"cannot {action} in {self.url}: {detail}") from error
