"""Citations: each task's numbered source markers resolved to passages, and warnings about the others; and the
chunker version of each document.

All nullable: tasks stored before this revision keep NULL and read as no citations; documents keep a NULL
chunker, so the next ingest cuts them again with the current chunker (whose chunks keep their own heading).

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision: str | None = "0008"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.add_column("task_states", sa.Column("citations", sa.JSON(none_as_null=True), nullable=True))
    op.add_column("task_states", sa.Column("citation_warnings", sa.JSON(none_as_null=True), nullable=True))
    op.add_column("documents", sa.Column("chunker", sa.Integer(), nullable=True))


def downgrade() -> None:
    # In place (SQLite >= 3.35 drops a column itself): a batch rebuild would trip the foreign keys.
    op.drop_column("documents", "chunker")
    op.drop_column("task_states", "citation_warnings")
    op.drop_column("task_states", "citations")
