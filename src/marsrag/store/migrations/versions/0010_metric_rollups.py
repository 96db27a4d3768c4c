"""Metric rollups: the loop metrics' counters per workflow and UTC day, and each run's counted fact bits.

The backfill, a recount of every counter from the existing rows, is not in this file: it must count with the
definitions of the MarsRAG that opens the store, so the store runs it (``marsrag.store._rollups.rebuild``) in
the same transaction, right after migrating a database from before this revision (see ``_migrate``).

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision: str | None = "0009"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("metrics_code", sa.Integer(), nullable=True))
    op.create_table(
        "rollups",
        sa.Column("workflow", sa.String(), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("task", sa.String(), nullable=False),
        sa.Column("counter", sa.String(), nullable=False),
        sa.Column("shard", sa.Integer(), nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("workflow", "day", "task", "counter", "shard", name="pk_rollups"),
    )


def downgrade() -> None:
    op.drop_table("rollups")
    # In place (SQLite >= 3.35 drops a column itself): a batch rebuild would trip the foreign keys.
    op.drop_column("runs", "metrics_code")
