"""Knowledge base: documents, their chunks, and a full-text index over the chunks per backend.

SQLite: ``chunks_fts``, an FTS5 table with external content (it stores only the index; the text stays in
``chunks``), kept in step by triggers, so every write path (including the cascade from ``documents``)
updates it. The porter stemmer matches PostgreSQL's English stemming closely enough.
PostgreSQL: ``chunks.fts``, a stored generated ``tsvector`` (heading weighted A, text B), under a GIN index.

Revision ID: 0002
Revises: 0001
Create Date: 2025-01-15
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None

_SQLITE_FTS = [
    "CREATE VIRTUAL TABLE chunks_fts USING fts5("
    "heading, text, content='chunks', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2')",
    "CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN"
    " INSERT INTO chunks_fts (rowid, heading, text) VALUES (new.id, new.heading, new.text);"
    " END",
    # An external-content FTS5 index is told what to remove with the 'delete' command and the old values.
    "CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN"
    " INSERT INTO chunks_fts (chunks_fts, rowid, heading, text) VALUES ('delete', old.id, old.heading, old.text);"
    " END",
    "CREATE TRIGGER chunks_fts_update AFTER UPDATE ON chunks BEGIN"
    " INSERT INTO chunks_fts (chunks_fts, rowid, heading, text) VALUES ('delete', old.id, old.heading, old.text);"
    " INSERT INTO chunks_fts (rowid, heading, text) VALUES (new.id, new.heading, new.text);"
    " END",
]

_POSTGRES_FTS = [
    "ALTER TABLE chunks ADD COLUMN fts tsvector GENERATED ALWAYS AS ("
    "setweight(to_tsvector('english', heading), 'A') || setweight(to_tsvector('english', text), 'B')) STORED",
    "CREATE INDEX ix_chunks_fts ON chunks USING gin (fts)",
]


def upgrade() -> None:
    """Create documents and chunks, then the backend's full-text index over chunks."""
    op.create_table(
        "documents",
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("sha256", sa.String(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("ingested_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("path", name="pk_documents"),
    )
    op.create_table(
        "chunks",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("document_path", sa.Text(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("heading", sa.Text(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_chunks"),
        sa.ForeignKeyConstraint(
            ["document_path"], ["documents.path"], name="fk_chunks_document_path_documents", ondelete="CASCADE"
        ),
        sa.UniqueConstraint("document_path", "position", name="uq_chunks_document_path_position"),
        sqlite_autoincrement=True,  # never reuse a chunk id (stored retrieval results cite them)
    )
    # The context's dialect, not op.get_bind(): offline mode (SQL for review) has a dialect but no connection.
    for statement in _full_text_ddl(op.get_context().dialect.name):
        op.execute(statement)


def downgrade() -> None:
    """Drop the full-text index, then chunks and documents."""
    dialect = op.get_context().dialect.name
    if dialect == "sqlite":
        for trigger in ("chunks_fts_insert", "chunks_fts_delete", "chunks_fts_update"):
            op.execute(f"DROP TRIGGER {trigger}")
        op.execute("DROP TABLE chunks_fts")
    op.drop_table("chunks")  # on PostgreSQL the fts column and its index go with it
    op.drop_table("documents")


def _full_text_ddl(dialect: str) -> list[str]:
    if dialect == "sqlite":
        return _SQLITE_FTS
    if dialect == "postgresql":
        return _POSTGRES_FTS
    raise NotImplementedError(f"the knowledge base has no full-text index for {dialect!r}")
