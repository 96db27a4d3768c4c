"""The metric rollups per experiment arm: ``rollups`` gains ``experiment`` and ``arm`` in its primary key.

A run's counters are kept under its experiment and arm ('' and '' outside an experiment; a session's depth under
its first run's), so a read per arm costs what a read per workflow does; a read that does not group by arm sums
them. Two columns rather than one ``experiment\\x1farm`` string: a read of one experiment is an equality on a
column (no LIKE and its escaping of the experiment's name) and a group's arm is the column itself.

The table is recreated empty: the store recounts it (``marsrag.store._rollups.rebuild``, which also recomputes
every run's fact bits, the new ``edited`` one among them, and counts the feedback) in the same transaction, right
after migrating a database from before this revision (see ``_migrate``).

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision: str | None = "0012"
branch_labels: str | None = None
depends_on: str | None = None


def _create(*arms: str) -> sa.Table:
    return op.create_table(
        "rollups",
        sa.Column("workflow", sa.String(), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("task", sa.String(), nullable=False),
        sa.Column("counter", sa.String(), nullable=False),
        *(sa.Column(name, sa.String(), nullable=False) for name in arms),
        sa.Column("shard", sa.Integer(), nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("day", "workflow", "task", "counter", *arms, "shard", name="pk_rollups"),
    )


def upgrade() -> None:
    op.drop_table("rollups")
    _create("experiment", "arm")


def downgrade() -> None:
    # 0012 keeps no arm: each counter's rows summed over the arms (its readers skip the counters it does not know).
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
    keys = [table.c.workflow, table.c.day, table.c.task, table.c.counter, table.c.shard]
    summed = sa.select(*keys, sa.func.sum(table.c.n).label("n")).group_by(*keys)
    kept = [{**row, "n": int(row["n"])} for row in bind.execute(summed).mappings()]
    op.drop_table("rollups")
    created = _create()
    if kept:
        op.bulk_insert(created, kept)
