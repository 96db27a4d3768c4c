"""Run trace: the W3C trace context a run's OpenTelemetry spans continue from (issue 42).

Nullable: runs stored before this revision, and runs traced by no one, have none.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision: str | None = "0017"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("trace", sa.String(), nullable=True))


def downgrade() -> None:
    # In place (SQLite >= 3.35 drops a column itself): a batch rebuild would trip the foreign keys.
    op.drop_column("runs", "trace")
