"""Migration 0008 (document identity) on every backend: documents stored before it keep their rows and chunks.

Before 0008 a document was its path alone; after, it is (collection, path) with an id its chunks point to.
Documents stored before it land in the ``legacy`` collection with their chunk ids, and stay searchable; the
downgrade keeps, of documents sharing a path, the one ingested last.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import Connection, text

from marsrag.store import LEGACY_COLLECTION, ChunkText, DocumentVersion, RunStore, open_store
from marsrag.store._migrate import HEAD
from marsrag.store.schema import VERSION_TABLE
from marsrag.store.sql import SqlRunStore
from tests.store.migrations import at_revision
from tests.store.records import T0

REVISION = "0008"
#: (path, sha256, size, chunks) as revision 0006 stored them; chunk ids follow in this order from 1.
OLD_DOCUMENTS = [
    ("kb/doc.md", "s1", 60, ["Restart the scrubber heater", "Oxygen levels stay above nineteen percent"]),
    ("kb/other.md", "s2", 20, ["Cycle the airlock twice"]),
]


def sql(store: RunStore, statement: str, **params: Any) -> list[Any]:
    """Rows of ``statement`` on the store's database, in a transaction of their own."""
    assert isinstance(store, SqlRunStore)  # the SQL backend's own tables
    with store.engine.begin() as connection:
        result = connection.execute(text(statement), params)
        return list(result.all()) if result.returns_rows else []


def store_at_0006(connection: Connection) -> None:
    """Documents and chunks as revision 0006 stored them, and a chunk since deleted (id 4: ids past it are used)."""
    for path, sha256, size, texts in OLD_DOCUMENTS:
        connection.execute(
            text("INSERT INTO documents (path, sha256, size, ingested_at) VALUES (:p, :s, :n, :t)"),
            {"p": path, "s": sha256, "n": size, "t": T0},
        )
        for position, body in enumerate(texts):
            connection.execute(
                text("INSERT INTO chunks (document_path, position, heading, text) VALUES (:p, :i, 'Habitat', :b)"),
                {"p": path, "i": position, "b": body},
            )
    connection.execute(
        text("INSERT INTO chunks (document_path, position, heading, text) VALUES ('kb/other.md', 1, 'Gone', 'x')")
    )
    connection.execute(text("DELETE FROM chunks WHERE position = 1 AND document_path = 'kb/other.md'"))


def check_full_text_index(store: RunStore) -> None:
    """On SQLite, FTS5's check that its index matches the chunks table, and the foreign keys' (PostgreSQL enforces
    both itself: a generated column, constraints checked on every write)."""
    assert isinstance(store, SqlRunStore)
    if store.engine.dialect.name == "sqlite":
        sql(store, "INSERT INTO chunks_fts (chunks_fts, rank) VALUES ('integrity-check', 1)")
        assert sql(store, "PRAGMA foreign_key_check") == []


def test_documents_stored_before_0008_keep_their_rows_and_chunk_ids_in_the_legacy_collection(db_url: str) -> None:
    """Every document in ``legacy`` with its hash and no source; every chunk under its old id, found by search."""
    with at_revision(db_url, "0006") as connection:
        store_at_0006(connection)
    with open_store(db_url) as store:
        assert sql(store, f"SELECT version_num FROM {VERSION_TABLE}") == [(HEAD,)] and HEAD >= REVISION
        assert sql(store, "SELECT collection, path, sha256, size, source FROM documents ORDER BY path") == [
            (LEGACY_COLLECTION, path, sha256, size, None) for path, sha256, size, _ in OLD_DOCUMENTS
        ]
        chunks = sql(
            store,
            "SELECT c.id, d.path, c.position, c.text FROM chunks AS c JOIN documents AS d ON d.id = c.document_id"
            " ORDER BY c.id",
        )
        assert chunks == [
            (1, "kb/doc.md", 0, OLD_DOCUMENTS[0][3][0]),
            (2, "kb/doc.md", 1, OLD_DOCUMENTS[0][3][1]),
            (3, "kb/other.md", 0, OLD_DOCUMENTS[1][3][0]),
        ]
        knowledge = store.knowledge()
        (hit,) = knowledge.search_chunks(["heater"], 5)
        assert (hit.chunk_id, hit.document_path) == (1, "kb/doc.md")
        assert knowledge.known_hashes() == {
            (LEGACY_COLLECTION, "kb/doc.md"): "s1",
            (LEGACY_COLLECTION, "kb/other.md"): "s2",
        }
        check_full_text_index(store)
        # New chunks never reuse an id, not even the deleted one's; the triggers and the cascade work again.
        new = DocumentVersion("/srv", "kb/new.md", "s3", 5, "/srv/kb/new.md")
        knowledge.replace_document(new, [ChunkText(0, "New", "Fresh filters")])
        (fresh,) = knowledge.search_chunks(["filters"], 5)
        assert fresh.chunk_id > 4
        sql(store, "DELETE FROM documents WHERE path = 'kb/other.md'")
        assert sql(store, "SELECT id FROM chunks ORDER BY id") == [(1,), (2,), (fresh.chunk_id,)]
        assert knowledge.search_chunks(["airlock"], 5) == []
        check_full_text_index(store)


def test_0008_downgrades_keeping_of_each_path_the_document_ingested_last(db_url: str) -> None:
    """Two collections' ``kb/doc.md``: the later one is kept with its chunks, the other's go; upgrading again works."""
    with open_store(db_url) as store:
        knowledge = store.knowledge()
        knowledge.replace_document(DocumentVersion("/one", "kb/doc.md", "s1", 1), [ChunkText(0, "One", "Scrubber")])
        knowledge.replace_document(DocumentVersion("/two", "kb/doc.md", "s2", 1), [ChunkText(0, "Two", "Airlock")])
        knowledge.replace_document(DocumentVersion("/one", "kb/x.md", "s3", 1), [ChunkText(0, "X", "Heater")])
        # Ingestion times as if /one's kb/doc.md came last: the kept one is the latest, not the highest id.
        sql(store, "UPDATE documents SET ingested_at = :t WHERE sha256 = 's1'", t=T0 + timedelta(days=1))
        sql(store, "UPDATE documents SET ingested_at = :t WHERE sha256 <> 's1'", t=T0)
    with at_revision(db_url, "0006", downgrade=True) as connection:
        rows = connection.execute(text("SELECT path, sha256 FROM documents ORDER BY path")).all()
        assert [tuple(row) for row in rows] == [("kb/doc.md", "s1"), ("kb/x.md", "s3")]
        texts = connection.execute(text("SELECT document_path, text FROM chunks ORDER BY id")).all()
        assert [tuple(row) for row in texts] == [("kb/doc.md", "Scrubber"), ("kb/x.md", "Heater")]
    with open_store(db_url) as store:
        knowledge = store.knowledge()
        assert knowledge.known_hashes() == {
            (LEGACY_COLLECTION, "kb/doc.md"): "s1",
            (LEGACY_COLLECTION, "kb/x.md"): "s3",
        }
        assert knowledge.search_chunks(["airlock"], 5) == []
        assert [hit.text for hit in knowledge.search_chunks(["scrubber", "heater"], 5)] == ["Scrubber", "Heater"]
        check_full_text_index(store)
