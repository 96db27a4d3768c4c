"""All-time rollup rows, and the rollups keyed by day first.

Each metric counter is also kept in one row for all history (``day`` 0001-01-01), which all-history reads sum
instead of every day; the primary key starts with ``day``, so those reads and a window's (a range of days)
read only their rows. The table is recreated empty: the store recounts it (``marsrag.store._rollups.rebuild``,
which writes both kinds of rows) in the same transaction, right after migrating a database from before this
revision (see ``_migrate``), with the definitions of the MarsRAG that opens it.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02
"""

from __future__ import annotations

import datetime

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision: str | None = "0010"
branch_labels: str | None = None
depends_on: str | None = None

_ALL_TIME = datetime.date(1, 1, 1)


def _create(*key: str) -> sa.Table:
    return op.create_table(
        "rollups",
        sa.Column("workflow", sa.String(), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("task", sa.String(), nullable=False),
        sa.Column("counter", sa.String(), nullable=False),
        sa.Column("shard", sa.Integer(), nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint(*key, name="pk_rollups"),
    )


def upgrade() -> None:
    op.drop_table("rollups")
    _create("day", "workflow", "task", "counter", "shard")


def downgrade() -> None:
    # 0010 reads all history as the sum of every row: it gets the day rows back, never the all-time ones.
    bind = op.get_bind()
    table = sa.table(
        "rollups",
        sa.column("workflow", sa.String()),
        sa.column("day", sa.Date()),
        sa.column("task", sa.String()),
        sa.column("counter", sa.String()),
        sa.column("shard", sa.Integer()),
        sa.column("n", sa.BigInteger()),
    )
    kept = [dict(row) for row in bind.execute(sa.select(table).where(table.c.day != _ALL_TIME)).mappings()]
    op.drop_table("rollups")
    created = _create("workflow", "day", "task", "counter", "shard")
    if kept:
        op.bulk_insert(created, kept)
