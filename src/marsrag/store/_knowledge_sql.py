"""The knowledge base's tables in SQL: documents replaced in one transaction, chunks found by full-text search.

Moved behind the store seam from ``marsrag.rag.knowledge``, which keeps reading, chunking and ranking policy.
Search ranks with BM25 on SQLite (FTS5) and ``ts_rank_cd`` on PostgreSQL, headings weighing 2.5 times the text
on both. The query words arrive already chosen (letters and digits only); this module only spells them in its
backend's full-text syntax.

A document is its collection and path (see :class:`marsrag.store.KnowledgeStore`); its chunks point to its id,
so moving it into another collection (adopting a legacy document) rewrites one row, not its chunks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Connection, Engine, bindparam, delete, func, insert, select, text, update
from sqlalchemy.exc import IntegrityError

from marsrag.store._transactions import Transactions
from marsrag.store.base import KnowledgeStore
from marsrag.store.queries import ChunkHit, ChunkText, DocumentChange, DocumentKey, DocumentVersion, TermCounts
from marsrag.store.schema import chunks, document_terms, documents

# FOR UPDATE (PostgreSQL; SQLite's BEGIN IMMEDIATE already serializes writers): a second ingest of the same
# changed file waits for the first, then finds it unchanged instead of colliding on chunk positions.
_CURRENT = (
    select(documents.c.id, documents.c.sha256, documents.c.source, documents.c.chunker)
    .where(documents.c.collection == bindparam("collection"), documents.c.path == bindparam("path"))
    .with_for_update()
)
_INSERT_DOCUMENT = insert(documents).returning(documents.c.id)
_UPDATE_DOCUMENT = update(documents).where(documents.c.id == bindparam("b_id"))
_DELETE_CHUNKS = delete(chunks).where(chunks.c.document_id == bindparam("document_id"))
_INSERT_CHUNKS = insert(chunks)
_DELETE_TERMS = delete(document_terms).where(document_terms.c.document_id == bindparam("document_id"))
_INSERT_TERMS = insert(document_terms)
_CHUNK_COUNT = select(func.count()).select_from(chunks)
_TERM_COUNTS = (
    select(document_terms.c.term, func.sum(document_terms.c.chunks))
    .where(document_terms.c.term.in_(bindparam("terms", expanding=True)))
    .group_by(document_terms.c.term)
)

# The inner query ranks inside the FTS index and keeps `limit` rowids; only those are joined to their text.
_SEARCH_SQLITE = text(
    "SELECT c.id, d.path, c.heading, c.text, -f.rank AS score FROM ("
    " SELECT rowid AS id, bm25(chunks_fts, 2.5, 1.0) AS rank FROM chunks_fts"
    " WHERE chunks_fts MATCH :query ORDER BY rank, rowid LIMIT :limit"
    ") AS f JOIN chunks AS c ON c.id = f.id JOIN documents AS d ON d.id = c.document_id ORDER BY f.rank, c.id"
)
# Normalization 1 divides by 1 + log(length), as BM25 discounts long chunks; weights A (heading) 1.0, B 0.4.
_SEARCH_POSTGRES = text(
    "SELECT c.id, d.path, c.heading, c.text, ts_rank_cd(c.fts, q.query, 1) AS score"
    " FROM to_tsquery('english', :query) AS q(query), chunks AS c JOIN documents AS d ON d.id = c.document_id"
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
    """Documents and their chunks in the run store's SQL database (migrations 0002 and 0008 made their tables)."""

    def __init__(self, engine: Engine, transactions: Transactions) -> None:
        """Use the engine of an open :class:`marsrag.store.sql.SqlRunStore` (migrated, with its connection setup)
        and its transactions (every statement here is retried as the run store's are)."""
        self.url = engine.url.render_as_string(hide_password=True)
        self._transactions = transactions
        postgres = engine.dialect.name == "postgresql"
        self._search = _SEARCH_POSTGRES if postgres else _SEARCH_SQLITE
        self._format = tsquery if postgres else fts5_query

    def known_hashes(self, *, chunker: int | None = None) -> dict[DocumentKey, str]:
        """(collection, path) -> the SHA-256 of its ingested content (only ``chunker``'s, when given)."""
        query = select(documents.c.collection, documents.c.path, documents.c.sha256)
        if chunker is not None:
            query = query.where(documents.c.chunker == chunker)

        def body(connection: Connection) -> dict[DocumentKey, str]:
            return {(collection, path): sha256 for collection, path, sha256 in connection.execute(query)}

        return self._transactions.reading("read the knowledge base", body)

    def replace_document(
        self,
        document: DocumentVersion,
        pieces: Sequence[ChunkText],
        *,
        adopt_from: str | None = None,
        terms: Mapping[str, int] | None = None,
    ) -> DocumentChange:
        """Store a document's chunks in one transaction, unless it is stored with this hash already (see base).

        Retried as it is when its connection drops: a try that landed after all makes the next find the document
        unchanged, which is then what it reports.
        """

        def body(connection: Connection) -> DocumentChange:
            try:
                with connection.begin_nested():
                    return self._replace(connection, document, pieces, adopt_from, terms or {})
            except IntegrityError:
                # A new document has no row to lock: a concurrent ingest may insert it first. Once more, then it
                # is there to compare with.
                return self._replace(connection, document, pieces, adopt_from, terms or {})

        return self._transactions.writing(f"ingest {document.path}", body)

    def term_counts(self, terms: Sequence[str]) -> TermCounts:
        """The number of chunks, and of the chunks containing each term (see base): two indexed reads."""
        wanted = list(dict.fromkeys(terms))

        def body(connection: Connection) -> TermCounts:
            total = int(connection.execute(_CHUNK_COUNT).scalar_one())
            found = dict(connection.execute(_TERM_COUNTS, {"terms": wanted}).all()) if wanted else {}
            return TermCounts(total, {term: int(found.get(term) or 0) for term in wanted})

        return self._transactions.reading("read the knowledge base's term counts", body)

    def search_chunks(self, words: Sequence[str], limit: int) -> list[ChunkHit]:
        """The chunks matching any of ``words``, best first, at most ``limit`` (see base)."""
        if not words or limit <= 0:
            return []
        parameters = {"query": self._format(words), "limit": limit}
        rows = self._transactions.reading(
            "search the knowledge base", lambda connection: connection.execute(self._search, parameters).all()
        )
        return [ChunkHit(int(id_), path, heading, body, float(score)) for id_, path, heading, body, score in rows]

    @staticmethod
    def _replace(
        connection: Connection,
        document: DocumentVersion,
        pieces: Sequence[ChunkText],
        adopt_from: str | None,
        terms: Mapping[str, int],
    ) -> DocumentChange:
        # Checked again under the write lock: another process may have ingested the same file meanwhile.
        current = _current(connection, document.collection, document.path)
        adopted = False
        if current is None and adopt_from is not None and adopt_from != document.collection:
            # Locked too: of two ingests adopting the same document, the second finds it moved and adds its own.
            current = _current(connection, adopt_from, document.path)
            adopted = current is not None
        now = datetime.now(UTC)
        if current is None:
            document_id = connection.execute(_INSERT_DOCUMENT, _document_row(document, now)).scalar_one()
        elif current.sha256 == document.sha256 and current.chunker == document.chunker:
            if adopted:  # moved into its collection, and read from this source now
                moved = {"b_id": current.id, "collection": document.collection, "source": document.source}
                connection.execute(_UPDATE_DOCUMENT, moved)
            return DocumentChange("unchanged", current.source, adopted)
        else:
            document_id = current.id
            connection.execute(_DELETE_CHUNKS, {"document_id": document_id})
            connection.execute(_DELETE_TERMS, {"document_id": document_id})
            connection.execute(_UPDATE_DOCUMENT, {"b_id": document_id, **_document_row(document, now)})
        if pieces:
            rows = [
                {"document_id": document_id, "position": p.position, "heading": p.heading, "text": p.text}
                for p in pieces
            ]
            connection.execute(_INSERT_CHUNKS, rows)
        if terms:
            counted = [{"document_id": document_id, "term": term, "chunks": count} for term, count in terms.items()]
            connection.execute(_INSERT_TERMS, counted)
        if current is None:
            return DocumentChange("added")
        return DocumentChange("updated", current.source, adopted, rechunked=current.sha256 == document.sha256)


@dataclass(frozen=True)
class _Stored:
    id: int
    sha256: str
    source: str | None
    chunker: int | None


def _current(connection: Connection, collection: str, path: str) -> _Stored | None:
    """The stored document of that collection and path, locked for the rest of the transaction."""
    row = connection.execute(_CURRENT, {"collection": collection, "path": path}).first()
    return None if row is None else _Stored(int(row.id), row.sha256, row.source, row.chunker)


def _document_row(document: DocumentVersion, ingested_at: datetime) -> dict[str, object]:
    return {
        "collection": document.collection,
        "path": document.path,
        "sha256": document.sha256,
        "size": document.size,
        "source": document.source,
        "chunker": document.chunker,
        "ingested_at": ingested_at,
    }
