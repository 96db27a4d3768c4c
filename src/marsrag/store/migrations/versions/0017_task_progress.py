"""Task progress: what a task being written has so far, while its answer streams (issue 41).

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision: str | None = "0016"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "task_progress",
        sa.Column("run_id", sa.String(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.String(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("detail", sa.JSON(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.run_id"], name="fk_task_progress_run_id_runs"),
        sa.PrimaryKeyConstraint("run_id", "position", name="pk_task_progress"),
    )
    op.create_index("ix_task_progress_run_id_seq", "task_progress", ["run_id", "seq"])


def downgrade() -> None:
    op.drop_index("ix_task_progress_run_id_seq", table_name="task_progress")
    op.drop_table("task_progress")
