"""Holders: a run followed at most once, and task saves that can tell whether a lost commit landed.

``runs.followed_from`` names the run whose next action a run follows, under a unique constraint (so racing
follows of one run store one run); ``task_states.commit_id`` is a token written by each save (a save retried
after its connection dropped during COMMIT reads it to know whether the first one landed). Both nullable:
existing rows keep NULL (runs stored before this revision are not known as follows; their tasks have no token).

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision: str | None = "0006"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    # A unique index, not a constraint: both backends add it in place (no rebuild of runs on SQLite).
    op.add_column("runs", sa.Column("followed_from", sa.String(), nullable=True))
    op.create_index("uq_runs_followed_from", "runs", ["followed_from"], unique=True)
    op.add_column("task_states", sa.Column("commit_id", sa.String(), nullable=True))


def downgrade() -> None:
    # In place (SQLite >= 3.35 drops a column itself): a batch rebuild of these tables would trip the
    # foreign keys that point at them.
    op.drop_column("task_states", "commit_id")
    op.drop_index("uq_runs_followed_from", table_name="runs")
    op.drop_column("runs", "followed_from")
