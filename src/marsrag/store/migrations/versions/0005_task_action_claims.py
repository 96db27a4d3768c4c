"""Task action claims: an operator action claims its task first, so two racing actions cannot both run.

Two nullable columns on ``task_states``: the claim's owner and when it was taken. Saving the task (which
replaces its row) releases the claim.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision: str | None = "0004"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.add_column("task_states", sa.Column("action_owner", sa.String(), nullable=True))
    op.add_column("task_states", sa.Column("action_started_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("task_states") as batch:
        batch.drop_column("action_started_at")
        batch.drop_column("action_owner")
