"""Support: how well each task's retrieved passages support what it was asked, and the terms that measure it.

``task_states`` gains the support level (a plain column, so the metrics count it in SQL) and its evidence
(JSON); both NULL for tasks stored before this revision, which read as "not assessed". ``document_terms`` holds,
per document, how many of its chunks contain each term (:func:`marsrag.tokens.stems`): the knowledge base's
term statistics the support signal weighs a goal's terms by. Existing documents are counted here from their
stored chunks, so no ingest is needed.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-05
"""

from __future__ import annotations

from collections import Counter

import sqlalchemy as sa
from alembic import op

from marsrag.tokens import stems

revision = "0015"
down_revision: str | None = "0014"
branch_labels: str | None = None
depends_on: str | None = None

_BATCH = 1000


def upgrade() -> None:
    op.add_column("task_states", sa.Column("support_level", sa.String(), nullable=True))
    op.add_column("task_states", sa.Column("support", sa.JSON(none_as_null=True), nullable=True))
    op.create_table(
        "document_terms",
        sa.Column("document_id", sa.Integer(), nullable=False),
        sa.Column("term", sa.Text(), nullable=False),
        sa.Column("chunks", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["document_id"], ["documents.id"], name="fk_document_terms_document_id_documents", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("document_id", "term", name="pk_document_terms"),
    )
    op.create_index("ix_document_terms_term", "document_terms", ["term"])
    if not op.get_context().as_sql:
        _count_stored_chunks(op.get_bind())


def _count_stored_chunks(connection: sa.Connection) -> None:
    """Fill ``document_terms`` from the chunks already stored, one document at a time."""
    chunks = sa.table("chunks", sa.column("document_id"), sa.column("heading"), sa.column("text"))
    terms = sa.table("document_terms", sa.column("document_id"), sa.column("term"), sa.column("chunks"))
    rows = connection.execute(
        sa.select(chunks.c.document_id, chunks.c.heading, chunks.c.text).order_by(chunks.c.document_id)
    )
    pending: list[dict[str, object]] = []
    current: int | None = None
    counts: Counter[str] = Counter()
    for document_id, heading, body in rows:
        if document_id != current:
            pending.extend(_rows(current, counts))
            current, counts = document_id, Counter()
        counts.update(set(stems(f"{heading}\n{body}")))
        if len(pending) >= _BATCH:
            connection.execute(sa.insert(terms), pending)
            pending = []
    pending.extend(_rows(current, counts))
    if pending:
        connection.execute(sa.insert(terms), pending)


def _rows(document_id: int | None, counts: Counter[str]) -> list[dict[str, object]]:
    if document_id is None:
        return []
    return [{"document_id": document_id, "term": term, "chunks": count} for term, count in counts.items()]


def downgrade() -> None:
    op.drop_index("ix_document_terms_term", table_name="document_terms")
    op.drop_table("document_terms")
    op.drop_column("task_states", "support")
    op.drop_column("task_states", "support_level")
