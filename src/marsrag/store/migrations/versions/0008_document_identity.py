"""Document identity: a document is (collection, path), no longer its path alone.

Before, two folders of the same name (``one/kb`` and ``two/kb``) gave their files the same path
(``kb/doc.md``), so ingesting the second replaced the first's documents. Now ``documents`` has an integer
``id`` (its primary key, which chunks point to), a ``collection`` (the document's identity with ``path``, which
stays the short path citations show) and the ``source`` file its content was read from. Existing documents
keep their rows, chunks and chunk ids in the collection ``legacy`` (source NULL); the next ingest of the same
path takes one over into its own collection instead of adding a duplicate.

SQLite cannot change a primary or foreign key in place, so there both tables are rebuilt under new names,
copied (chunk ids and the autoincrement counter kept, so the FTS5 index stays valid as it is) and renamed;
the full-text triggers go with the old ``chunks`` and are made again. PostgreSQL changes them in place (its
generated ``fts`` column stays). The downgrade keeps, of documents sharing a path, the one ingested last.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision: str | None = "0007"
branch_labels: str | None = None
depends_on: str | None = None

#: The collection of the documents stored before this revision (marsrag.store.LEGACY_COLLECTION).
LEGACY = "legacy"

# The triggers of migration 0002, unchanged (they name only the chunk's id, heading and text).
_SQLITE_TRIGGERS = [
    "CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN"
    " INSERT INTO chunks_fts (rowid, heading, text) VALUES (new.id, new.heading, new.text);"
    " END",
    "CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN"
    " INSERT INTO chunks_fts (chunks_fts, rowid, heading, text) VALUES ('delete', old.id, old.heading, old.text);"
    " END",
    "CREATE TRIGGER chunks_fts_update AFTER UPDATE ON chunks BEGIN"
    " INSERT INTO chunks_fts (chunks_fts, rowid, heading, text) VALUES ('delete', old.id, old.heading, old.text);"
    " INSERT INTO chunks_fts (rowid, heading, text) VALUES (new.id, new.heading, new.text);"
    " END",
]
_DROP_TRIGGERS = [f"DROP TRIGGER {name}" for name in ("chunks_fts_insert", "chunks_fts_delete", "chunks_fts_update")]

# Of documents sharing a path, all but the one ingested last (the highest id breaks a tie).
_DELETE_SHADOWED = (
    "DELETE FROM documents WHERE EXISTS (SELECT 1 FROM documents AS later WHERE later.path = documents.path"
    " AND (later.ingested_at > documents.ingested_at"
    " OR (later.ingested_at = documents.ingested_at AND later.id > documents.id)))"
)


def upgrade() -> None:
    """Give documents an id, a collection (``legacy`` for those stored already) and a source; chunks the id."""
    if op.get_context().dialect.name == "sqlite":
        _upgrade_sqlite()
    else:
        _upgrade_in_place()


def downgrade() -> None:
    """Back to documents keyed by path: of documents sharing a path, the one ingested last is kept."""
    # Through the live tables first, so the cascade and the full-text triggers remove the others' chunks.
    op.execute(_DELETE_SHADOWED)
    if op.get_context().dialect.name == "sqlite":
        _downgrade_sqlite()
    else:
        _downgrade_in_place()


def _documents_0008(name: str) -> None:
    op.create_table(
        name,
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("collection", sa.Text(), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("sha256", sa.String(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("source", sa.Text(), nullable=True),
        sa.Column("ingested_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_documents"),
        sa.UniqueConstraint("collection", "path", name="uq_documents_collection_path"),
    )


def _upgrade_sqlite() -> None:
    _documents_0008("documents_0008")
    op.execute(
        sa.text(
            "INSERT INTO documents_0008 (collection, path, sha256, size, source, ingested_at)"
            " SELECT :legacy, path, sha256, size, NULL, ingested_at FROM documents ORDER BY path"
        ).bindparams(legacy=LEGACY)
    )
    op.create_table(
        "chunks_0008",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("document_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("heading", sa.Text(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_chunks"),
        # Renaming documents_0008 to documents below rewrites this reference too.
        sa.ForeignKeyConstraint(
            ["document_id"], ["documents_0008.id"], name="fk_chunks_document_id_documents", ondelete="CASCADE"
        ),
        sa.UniqueConstraint("document_id", "position", name="uq_chunks_document_id_position"),
        sqlite_autoincrement=True,
    )
    op.execute(
        "INSERT INTO chunks_0008 (id, document_id, position, heading, text)"
        " SELECT c.id, d.id, c.position, c.heading, c.text FROM chunks AS c"
        " JOIN documents_0008 AS d ON d.path = c.document_path ORDER BY c.id"
    )
    _swap_sqlite("documents_0008", "chunks_0008")


def _downgrade_sqlite() -> None:
    op.create_table(
        "documents_0006",
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("sha256", sa.String(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("ingested_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("path", name="pk_documents"),
    )
    op.execute(
        "INSERT INTO documents_0006 (path, sha256, size, ingested_at)"
        " SELECT path, sha256, size, ingested_at FROM documents ORDER BY path"
    )
    op.create_table(
        "chunks_0006",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("document_path", sa.Text(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("heading", sa.Text(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_chunks"),
        sa.ForeignKeyConstraint(
            ["document_path"], ["documents_0006.path"], name="fk_chunks_document_path_documents", ondelete="CASCADE"
        ),
        sa.UniqueConstraint("document_path", "position", name="uq_chunks_document_path_position"),
        sqlite_autoincrement=True,
    )
    op.execute(
        "INSERT INTO chunks_0006 (id, document_path, position, heading, text)"
        " SELECT c.id, d.path, c.position, c.heading, c.text FROM chunks AS c"
        " JOIN documents AS d ON d.id = c.document_id ORDER BY c.id"
    )
    _swap_sqlite("documents_0006", "chunks_0006")


def _swap_sqlite(new_documents: str, new_chunks: str) -> None:
    """Replace documents and chunks by their rebuilt copies; keep the chunk id counter; make the triggers again."""
    # AUTOINCREMENT's counter may be past the highest id left (deleted chunks): carry it over, so no id that
    # a stored retrieval result names is ever handed out again.
    op.execute(sa.text("DELETE FROM sqlite_sequence WHERE name = :name").bindparams(name=new_chunks))
    op.execute(
        sa.text(
            "INSERT INTO sqlite_sequence (name, seq) SELECT :name, seq FROM sqlite_sequence WHERE name = 'chunks'"
        ).bindparams(name=new_chunks)
    )
    # Dropping the triggers first keeps the drop of chunks from touching the full-text index: the copies have
    # the same ids, headings and texts, so the index stays right as it is.
    for statement in _DROP_TRIGGERS:
        op.execute(statement)
    op.drop_table("chunks")  # the children first: dropping documents would cascade into them
    op.drop_table("documents")
    op.rename_table(new_documents, "documents")
    op.rename_table(new_chunks, "chunks")
    for statement in _SQLITE_TRIGGERS:
        op.execute(statement)


def _upgrade_in_place() -> None:
    # SERIAL numbers the existing rows as it adds the column, and makes the same sequence create_table would.
    op.execute("ALTER TABLE documents ADD COLUMN id SERIAL NOT NULL")
    op.add_column("documents", sa.Column("collection", sa.Text(), nullable=False, server_default=LEGACY))
    op.alter_column("documents", "collection", server_default=None)
    op.add_column("documents", sa.Column("source", sa.Text(), nullable=True))
    op.add_column("chunks", sa.Column("document_id", sa.Integer(), nullable=True))
    op.execute("UPDATE chunks SET document_id = d.id FROM documents AS d WHERE d.path = chunks.document_path")
    op.alter_column("chunks", "document_id", nullable=False)
    op.drop_constraint("fk_chunks_document_path_documents", "chunks", type_="foreignkey")
    op.drop_constraint("uq_chunks_document_path_position", "chunks", type_="unique")
    op.drop_column("chunks", "document_path")
    op.drop_constraint("pk_documents", "documents", type_="primary")
    op.create_primary_key("pk_documents", "documents", ["id"])
    op.create_unique_constraint("uq_documents_collection_path", "documents", ["collection", "path"])
    op.create_foreign_key(
        "fk_chunks_document_id_documents", "chunks", "documents", ["document_id"], ["id"], ondelete="CASCADE"
    )
    op.create_unique_constraint("uq_chunks_document_id_position", "chunks", ["document_id", "position"])


def _downgrade_in_place() -> None:
    op.add_column("chunks", sa.Column("document_path", sa.Text(), nullable=True))
    op.execute("UPDATE chunks SET document_path = d.path FROM documents AS d WHERE d.id = chunks.document_id")
    op.alter_column("chunks", "document_path", nullable=False)
    op.drop_constraint("uq_chunks_document_id_position", "chunks", type_="unique")
    op.drop_constraint("fk_chunks_document_id_documents", "chunks", type_="foreignkey")
    op.drop_column("chunks", "document_id")
    op.drop_constraint("uq_documents_collection_path", "documents", type_="unique")
    op.drop_constraint("pk_documents", "documents", type_="primary")
    op.drop_column("documents", "source")
    op.drop_column("documents", "collection")
    op.drop_column("documents", "id")  # its sequence goes with it
    op.create_primary_key("pk_documents", "documents", ["path"])
    op.create_foreign_key(
        "fk_chunks_document_path_documents", "chunks", "documents", ["document_path"], ["path"], ondelete="CASCADE"
    )
    op.create_unique_constraint("uq_chunks_document_path_position", "chunks", ["document_path", "position"])
