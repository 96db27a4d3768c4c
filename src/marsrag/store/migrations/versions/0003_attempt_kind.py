"""Attempt kinds: where each attempt came from (answer, in-run repair, operator repair, regenerate).

Existing rows get ``answer`` for attempt 1 and ``repair`` for later ones: before operator actions existed,
a later attempt could only be the in-run repair.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision: str | None = "0002"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    # A constant default lets both backends add the NOT NULL column in place (no table rebuild on SQLite).
    op.add_column("attempts", sa.Column("kind", sa.String(), nullable=False, server_default="answer"))
    op.execute("UPDATE attempts SET kind = 'repair' WHERE number > 1")


def downgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        batch.drop_column("kind")
