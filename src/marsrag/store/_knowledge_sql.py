"""The knowledge base's tables in SQL: documents replaced in one transaction, chunks found by full-text search.

Moved behind the store seam from ``marsrag.rag.knowledge``, which keeps reading, chunking and ranking policy.
Search ranks with BM25 on SQLite (FTS5) and, on PostgreSQL, ``ts_rank_cd`` per word weighted by the word's
inverse document frequency (:mod:`marsrag.store._ranking`), headings weighing 2.5 times the text on both. The
query words arrive already chosen (letters and digits only); this module only spells them in its backend's
full-text syntax.

A document is its collection and path (see :class:`marsrag.store.KnowledgeStore`); its chunks point to its id,
so moving it into another collection (adopting a legacy document) rewrites one row, not its chunks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Engine, bindparam, delete, func, insert, or_, select, text, tuple_, update
from sqlalchemy.exc import IntegrityError

from marsrag.store._ranking import term_of, weighted_search, weights
from marsrag.store._rows import as_utc
from marsrag.store._statistics import TermStatistics
from marsrag.store._transactions import Transactions
from marsrag.store._vectors import VectorIndex, bump_generation
from marsrag.store.base import KnowledgeStore
from marsrag.store.queries import (
    ChunkHit,
    ChunkText,
    ChunkVectors,
    CollectionSummary,
    DocumentChange,
    DocumentKey,
    DocumentSummary,
    DocumentVersion,
    Removal,
    TermCounts,
    UnembeddedChunk,
)
from marsrag.store.schema import chunk_vectors, chunks, document_terms, documents

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
_IN_COLLECTIONS = documents.c.collection.in_(bindparam("collections", expanding=True))
_SCOPED_CHUNK_COUNT = (
    select(func.count())
    .select_from(chunks.join(documents, documents.c.id == chunks.c.document_id))
    .where(_IN_COLLECTIONS)
)
_SCOPED_TERM_COUNTS = (
    select(document_terms.c.term, func.sum(document_terms.c.chunks))
    .select_from(document_terms.join(documents, documents.c.id == document_terms.c.document_id))
    .where(document_terms.c.term.in_(bindparam("terms", expanding=True)), _IN_COLLECTIONS)
    .group_by(document_terms.c.term)
)
# Per document its chunk count (a document with none counts 0): what listing and removal report.
_CHUNKS_PER_DOCUMENT = (
    select(chunks.c.document_id, func.count().label("chunks")).group_by(chunks.c.document_id).subquery("per_document")
)
_DOCUMENTS = (
    select(
        documents.c.id,
        documents.c.collection,
        documents.c.path,
        func.coalesce(_CHUNKS_PER_DOCUMENT.c.chunks, 0).label("chunks"),
        documents.c.size,
        documents.c.source,
        documents.c.ingested_at,
    )
    .select_from(documents.outerjoin(_CHUNKS_PER_DOCUMENT, _CHUNKS_PER_DOCUMENT.c.document_id == documents.c.id))
    .order_by(documents.c.collection, documents.c.path)
)
_COLLECTIONS = (
    select(
        documents.c.collection,
        func.count(),
        func.coalesce(func.sum(_CHUNKS_PER_DOCUMENT.c.chunks), 0),
        func.max(documents.c.ingested_at),
    )
    .select_from(documents.outerjoin(_CHUNKS_PER_DOCUMENT, _CHUNKS_PER_DOCUMENT.c.document_id == documents.c.id))
    .group_by(documents.c.collection)
    .order_by(documents.c.collection)
)
_DOCUMENT_VECTORS = (
    select(chunks.c.heading, chunks.c.text, chunk_vectors.c.vector)
    .select_from(
        chunks.join(chunk_vectors, chunk_vectors.c.chunk_id == chunks.c.id).join(
            documents, documents.c.id == chunks.c.document_id
        )
    )
    .where(
        documents.c.collection == bindparam("collection"),
        documents.c.path == bindparam("path"),
        chunk_vectors.c.embedder == bindparam("embedder"),
    )
)
_UNEMBEDDED = (
    select(chunks.c.id, chunks.c.heading, chunks.c.text)
    .select_from(
        chunks.outerjoin(
            chunk_vectors,
            (chunk_vectors.c.chunk_id == chunks.c.id) & (chunk_vectors.c.embedder == bindparam("embedder")),
        )
    )
    .where(chunk_vectors.c.chunk_id.is_(None))
    .order_by(chunks.c.id)
    .limit(bindparam("limit"))
)
_EXISTING_CHUNKS = select(chunks.c.id).where(chunks.c.id.in_(bindparam("ids", expanding=True)))
_DELETE_VECTORS = delete(chunk_vectors).where(chunk_vectors.c.chunk_id.in_(bindparam("ids", expanding=True)))
_INSERT_VECTORS = insert(chunk_vectors)
_EMBEDDERS = select(chunk_vectors.c.embedder, chunk_vectors.c.dimension, func.count()).group_by(
    chunk_vectors.c.embedder, chunk_vectors.c.dimension
)
_SCOPED_EMBEDDERS = (
    select(chunk_vectors.c.embedder, chunk_vectors.c.dimension, func.count())
    .select_from(
        chunk_vectors.join(chunks, chunks.c.id == chunk_vectors.c.chunk_id).join(
            documents, documents.c.id == chunks.c.document_id
        )
    )
    .where(_IN_COLLECTIONS)
    .group_by(chunk_vectors.c.embedder, chunk_vectors.c.dimension)
)
_HITS = (
    select(chunks.c.id, documents.c.path, chunks.c.heading, chunks.c.text)
    .select_from(chunks.join(documents, documents.c.id == chunks.c.document_id))
    .where(chunks.c.id.in_(bindparam("ids", expanding=True)))
)
# Removal deletes by id, this many at a time: a collection of many documents stays under every backend's limit
# of bound parameters.
_REMOVE_BATCH = 500

# The inner query ranks inside the FTS index and keeps `limit` rowids; only those are joined to their text.
_SEARCH_SQLITE = text(
    "SELECT c.id, d.path, c.heading, c.text, -f.rank AS score FROM ("
    " SELECT rowid AS id, bm25(chunks_fts, 2.5, 1.0) AS rank FROM chunks_fts"
    " WHERE chunks_fts MATCH :query ORDER BY rank, rowid LIMIT :limit"
    ") AS f JOIN chunks AS c ON c.id = f.id JOIN documents AS d ON d.id = c.document_id ORDER BY f.rank, c.id"
)
# The same, kept to some collections: the collections' chunks are chosen inside the FTS query (a rowid filter),
# so the `limit` best are those of the collections, not the best overall filtered afterwards.
_SEARCH_SQLITE_SCOPED = text(
    "SELECT c.id, d.path, c.heading, c.text, -f.rank AS score FROM ("
    " SELECT rowid AS id, bm25(chunks_fts, 2.5, 1.0) AS rank FROM chunks_fts"
    " WHERE chunks_fts MATCH :query AND rowid IN ("
    "  SELECT sc.id FROM chunks AS sc JOIN documents AS sd ON sd.id = sc.document_id"
    "  WHERE sd.collection IN :collections"
    " ) ORDER BY rank, rowid LIMIT :limit"
    ") AS f JOIN chunks AS c ON c.id = f.id JOIN documents AS d ON d.id = c.document_id ORDER BY f.rank, c.id"
).bindparams(bindparam("collections", expanding=True))


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
        self._postgres = postgres
        self._format = tsquery if postgres else fts5_query
        self._vectors = VectorIndex()
        self._statistics = TermStatistics(_CHUNK_COUNT, _SCOPED_CHUNK_COUNT, _TERM_COUNTS, _SCOPED_TERM_COUNTS)

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
        vectors: ChunkVectors | None = None,
    ) -> DocumentChange:
        """Store a document's chunks in one transaction, unless it is stored with this hash already (see base).

        Retried as it is when its connection drops: a try that landed after all makes the next find the document
        unchanged, which is then what it reports.
        """

        def body(connection: Connection) -> DocumentChange:
            try:
                with connection.begin_nested():
                    return self._replace(connection, document, pieces, adopt_from, terms or {}, vectors)
            except IntegrityError:
                # A new document has no row to lock: a concurrent ingest may insert it first. Once more, then it
                # is there to compare with.
                return self._replace(connection, document, pieces, adopt_from, terms or {}, vectors)

        return self._transactions.writing(f"ingest {document.path}", body)

    def term_counts(self, terms: Sequence[str], *, collections: Sequence[str] | None = None) -> TermCounts:
        """The number of chunks, and of the chunks containing each term (see base): read once per generation."""
        wanted = list(dict.fromkeys(terms))

        def body(connection: Connection) -> TermCounts:
            if collections is not None and not collections:
                return TermCounts(0, dict.fromkeys(wanted, 0))
            return self._statistics.counts(connection, wanted, collections)

        return self._transactions.reading("read the knowledge base's term counts", body)

    def search_chunks(
        self, words: Sequence[str], limit: int, *, collections: Sequence[str] | None = None
    ) -> list[ChunkHit]:
        """The chunks matching any of ``words``, best first, at most ``limit`` (see base)."""
        if not words or limit <= 0 or (collections is not None and not collections):
            return []
        parameters: dict[str, object] = {"query": self._format(words), "limit": limit}
        if collections is not None:
            parameters["collections"] = list(collections)
        if self._postgres:
            rows = self._transactions.reading(
                "search the knowledge base", lambda connection: self._weighted(connection, words, parameters)
            )
        else:
            query = _SEARCH_SQLITE if collections is None else _SEARCH_SQLITE_SCOPED
            rows = self._transactions.reading(
                "search the knowledge base", lambda connection: list(connection.execute(query, parameters).all())
            )
        return [ChunkHit(int(id_), path, heading, body, float(score)) for id_, path, heading, body, score in rows]

    def _weighted(self, connection: Connection, words: Sequence[str], parameters: Mapping[str, object]) -> list[Any]:
        """PostgreSQL's search: each word's rank weighted by its rarity (:mod:`marsrag.store._ranking`)."""
        terms = list(dict.fromkeys(term for word in words if (term := term_of(word)) is not None))
        statistics = self._statistics.counts(connection, terms, None)
        weighed = weights(words, statistics.chunks, statistics.counts)
        common = min(range(len(words)), key=lambda position: weighed[position])
        rest = [word for position, word in enumerate(words) if position != common] or list(words)
        bound = {**parameters, "rest": tsquery(rest), "common": weighed[common]}
        for position, (word, weight) in enumerate(zip(words, weighed, strict=True)):
            bound[f"t{position}"], bound[f"w{position}"] = tsquery([word]), weight
        statement = weighted_search(len(words), scoped="collections" in parameters)
        return list(connection.execute(statement, bound).all())

    def document_vectors(self, key: DocumentKey, embedder: str) -> dict[tuple[str, str], bytes]:
        """The stored document's chunk vectors of ``embedder`` by (heading, text) (see base)."""
        parameters = {"collection": key[0], "path": key[1], "embedder": embedder}

        def body(connection: Connection) -> dict[tuple[str, str], bytes]:
            return {
                (heading, text): bytes(vector)
                for heading, text, vector in connection.execute(_DOCUMENT_VECTORS, parameters)
            }

        return self._transactions.reading("read the knowledge base's vectors", body)

    def unembedded(self, embedder: str, limit: int) -> list[UnembeddedChunk]:
        """Chunks with no vector of ``embedder``, by id (see base)."""

        def body(connection: Connection) -> list[UnembeddedChunk]:
            rows = connection.execute(_UNEMBEDDED, {"embedder": embedder, "limit": limit})
            return [UnembeddedChunk(int(id_), heading, text) for id_, heading, text in rows]

        return self._transactions.reading("read the knowledge base's chunks", body)

    def set_vectors(self, embedder: str, dimension: int, vectors: Mapping[int, bytes]) -> int:
        """Store chunk vectors as ``embedder``'s, replacing any other (see base)."""
        wanted = dict(vectors)

        def body(connection: Connection) -> int:
            if not wanted:
                return 0
            ids = list(wanted)
            existing: set[int] = set()
            for start in range(0, len(ids), _REMOVE_BATCH):
                batch = ids[start : start + _REMOVE_BATCH]
                existing.update(connection.execute(_EXISTING_CHUNKS, {"ids": batch}).scalars().all())
                connection.execute(_DELETE_VECTORS, {"ids": batch})
            rows = [
                {"chunk_id": id_, "embedder": embedder, "dimension": dimension, "vector": wanted[id_]}
                for id_ in ids
                if id_ in existing
            ]
            if rows:
                connection.execute(_INSERT_VECTORS, rows)
            bump_generation(connection)
            return len(rows)

        return self._transactions.writing("store the knowledge base's vectors", body)

    def embedders(self, *, collections: Sequence[str] | None = None) -> dict[str, tuple[int, int]]:
        """Each embedder whose vectors are stored -> (dimension, chunks) (see base)."""
        if collections is not None and not collections:
            return {}
        query = _EMBEDDERS if collections is None else _SCOPED_EMBEDDERS
        scope = {} if collections is None else {"collections": list(collections)}

        def body(connection: Connection) -> dict[str, tuple[int, int]]:
            found: dict[str, tuple[int, int]] = {}
            for embedder, dimension, count in connection.execute(query, scope):
                # Of one identity stored at two dimensions (a server that changed), the more common one.
                if embedder not in found or found[embedder][1] < int(count):
                    found[embedder] = (int(dimension), int(count))
            return found

        return self._transactions.reading("read the knowledge base's embedders", body)

    def search_vectors(
        self, vector: bytes, embedder: str, limit: int, *, collections: Sequence[str] | None = None
    ) -> list[ChunkHit]:
        """The chunks nearest ``vector`` among ``embedder``'s, by an exact scan in memory (see base)."""
        if limit <= 0 or (collections is not None and not collections) or not vector:
            return []
        # lazy: NumPy, loaded when vectors are searched
        import numpy as np

        query = np.frombuffer(vector, dtype="<f4").astype(np.float32)

        def body(connection: Connection) -> list[ChunkHit]:
            nearest = self._vectors.search(connection, query, embedder, limit, collections)
            if not nearest:
                return []
            rows = {row.id: row for row in connection.execute(_HITS, {"ids": [id_ for id_, _ in nearest]})}
            return [
                ChunkHit(id_, rows[id_].path, rows[id_].heading, rows[id_].text, score)
                for id_, score in nearest
                if id_ in rows
            ]

        return self._transactions.reading("search the knowledge base's vectors", body)

    def collections(self) -> list[CollectionSummary]:
        """Every collection holding a document, by name (see base): one grouped read."""

        def body(connection: Connection) -> list[CollectionSummary]:
            return [
                CollectionSummary(name, int(count), int(pieces), as_utc(latest))
                for name, count, pieces, latest in connection.execute(_COLLECTIONS)
            ]

        return self._transactions.reading("list the knowledge base's collections", body)

    def documents(self, *, collections: Sequence[str] | None = None) -> list[DocumentSummary]:
        """The stored documents, by collection then path (see base)."""
        if collections is not None and not collections:
            return []
        query = _DOCUMENTS if collections is None else _DOCUMENTS.where(_IN_COLLECTIONS)
        scope = {} if collections is None else {"collections": list(collections)}

        def body(connection: Connection) -> list[DocumentSummary]:
            return [_summary(row) for row in connection.execute(query, scope)]

        return self._transactions.reading("list the knowledge base's documents", body)

    def remove_documents(self, keys: Sequence[DocumentKey] = (), *, collections: Sequence[str] = ()) -> Removal:
        """Remove documents with their chunks, index entries and term counts, all or nothing (see base).

        Retried as it is when its connection drops; when the lost try's commit may have landed, the retry first
        looks: its documents all gone means it did, and its removal is reported (not "missing").
        """
        wanted_keys = list(dict.fromkeys(keys))
        wanted_collections = list(dict.fromkeys(collections))
        tried: dict[str, tuple[Removal, list[int]]] = {}

        def landed(connection: Connection) -> Removal | None:
            if "removal" not in tried:
                return None
            removal, ids = tried["removal"]
            still = select(func.count()).select_from(documents).where(documents.c.id.in_(ids[:_REMOVE_BATCH]))
            left = connection.execute(still).scalar_one()
            return removal if not left else None

        def body(connection: Connection) -> Removal:
            found = _locked_documents(connection, wanted_keys, wanted_collections)
            missing_keys = tuple(key for key in wanted_keys if key not in {d.key for d in found})
            held = {d.collection for d in found}
            missing_collections = tuple(name for name in wanted_collections if name not in held)
            if missing_keys or missing_collections:
                return Removal(missing_documents=missing_keys, missing_collections=missing_collections)
            ids = list(found.values())
            tried["removal"] = (Removal(documents=tuple(found)), ids)
            for start in range(0, len(ids), _REMOVE_BATCH):
                batch = ids[start : start + _REMOVE_BATCH]
                # Children first (not left to the cascade): on SQLite the trigger takes each chunk out of the
                # full-text index as its row goes, whatever the connection's foreign key setting.
                connection.execute(delete(chunks).where(chunks.c.document_id.in_(batch)))
                connection.execute(delete(document_terms).where(document_terms.c.document_id.in_(batch)))
                connection.execute(delete(documents).where(documents.c.id.in_(batch)))
            bump_generation(connection)
            return Removal(documents=tuple(found))

        return self._transactions.writing("remove documents from the knowledge base", body, landed)

    @staticmethod
    def _replace(
        connection: Connection,
        document: DocumentVersion,
        pieces: Sequence[ChunkText],
        adopt_from: str | None,
        terms: Mapping[str, int],
        vectors: ChunkVectors | None,
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
                bump_generation(connection)  # its vectors' collection changed
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
            if vectors is not None:
                inserted = connection.execute(_INSERT_CHUNKS.returning(chunks.c.id, sort_by_parameter_order=True), rows)
                ids = inserted.scalars().all()
                connection.execute(
                    _INSERT_VECTORS,
                    [
                        {"chunk_id": id_, "embedder": vectors.embedder, "dimension": vectors.dimension, "vector": v}
                        for id_, v in zip(ids, vectors.vectors, strict=True)
                    ],
                )
            else:
                connection.execute(_INSERT_CHUNKS, rows)
        bump_generation(connection)
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


def _summary(row: Any) -> DocumentSummary:
    return DocumentSummary(
        row.collection, row.path, int(row.chunks), int(row.size), row.source, as_utc(row.ingested_at)
    )


def _locked_documents(
    connection: Connection, keys: Sequence[DocumentKey], collections: Sequence[str]
) -> dict[DocumentSummary, int]:
    """The documents of ``keys`` and ``collections`` -> their ids, locked for the rest of the transaction."""
    conditions = []
    for start in range(0, len(keys), _REMOVE_BATCH):
        conditions.append(tuple_(documents.c.collection, documents.c.path).in_(keys[start : start + _REMOVE_BATCH]))
    if collections:
        conditions.append(documents.c.collection.in_(collections))
    if not conditions:
        return {}
    # FOR UPDATE on PostgreSQL: an ingest replacing one of them waits, then finds it gone and adds it anew.
    ids = connection.execute(select(documents.c.id).where(or_(*conditions)).with_for_update()).scalars().all()
    found: dict[DocumentSummary, int] = {}
    for start in range(0, len(ids), _REMOVE_BATCH):
        rows = connection.execute(_DOCUMENTS.where(documents.c.id.in_(ids[start : start + _REMOVE_BATCH])))
        found.update({_summary(row): int(row.id) for row in rows})
    return dict(sorted(found.items(), key=lambda item: item[0].key))
