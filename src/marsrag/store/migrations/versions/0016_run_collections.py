"""Run collections: the knowledge base collections a run's retrieval keeps to.

Nullable: runs stored before this revision read as searching every collection, as they did.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision: str | None = "0015"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("collections", sa.JSON(none_as_null=True), nullable=True))


def downgrade() -> None:
    # In place (SQLite >= 3.35 drops a column itself): a batch rebuild would trip the foreign keys.
    op.drop_column("runs", "collections")
