"""Chunk vectors: each chunk's embedding for hybrid retrieval, and the knowledge base's generation (issue 43).

``task_states`` gains the retrievers fused into each task's results and why the vector search was skipped.

``chunk_vectors`` holds at most one vector per chunk, with the identity and dimension of the embedder that
made it, and goes with its chunk. ``knowledge_state`` is one row whose generation every knowledge-base write
raises: processes keeping vectors in memory reload them when it moved.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision: str | None = "0018"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.add_column("task_states", sa.Column("retrievers", sa.JSON(none_as_null=True), nullable=True))
    op.add_column("task_states", sa.Column("retrieval_skipped", sa.Text(), nullable=True))
    op.create_table(
        "chunk_vectors",
        sa.Column("chunk_id", sa.Integer(), nullable=False),
        sa.Column("embedder", sa.Text(), nullable=False),
        sa.Column("dimension", sa.Integer(), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["chunk_id"], ["chunks.id"], name="fk_chunk_vectors_chunk_id_chunks", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("chunk_id", name="pk_chunk_vectors"),
    )
    op.create_index("ix_chunk_vectors_embedder", "chunk_vectors", ["embedder"])
    state = op.create_table(
        "knowledge_state",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("generation", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_knowledge_state"),
    )
    op.bulk_insert(state, [{"id": 1, "generation": 0}])


def downgrade() -> None:
    op.drop_table("knowledge_state")
    op.drop_index("ix_chunk_vectors_embedder", table_name="chunk_vectors")
    op.drop_table("chunk_vectors")
    # In place (SQLite >= 3.35 drops a column itself): a batch rebuild would trip the foreign keys.
    op.drop_column("task_states", "retrieval_skipped")
    op.drop_column("task_states", "retrievers")
