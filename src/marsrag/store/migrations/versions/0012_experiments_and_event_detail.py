"""Experiments and event details: the experiment and arm of a run's session, and what an event carries beyond
the spec's fields.

All nullable: runs stored before this revision read as outside any experiment, events as the spec's own.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision: str | None = "0011"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("experiment", sa.String(), nullable=True))
    op.add_column("runs", sa.Column("arm", sa.String(), nullable=True))
    op.add_column("events", sa.Column("detail", sa.JSON(none_as_null=True), nullable=True))


def downgrade() -> None:
    # In place (SQLite >= 3.35 drops a column itself): a batch rebuild would trip the foreign keys.
    op.drop_column("events", "detail")
    op.drop_column("runs", "arm")
    op.drop_column("runs", "experiment")
