"""Initial schema: runs, task states with attempts, transitions and events.

Revision ID: 0001
Revises: (none)
Create Date: 2025-01-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Create the five tables and their indexes."""
    op.create_table(
        "runs",
        sa.Column("run_id", sa.String(), nullable=False),
        sa.Column("session_id", sa.String(), nullable=False),
        sa.Column("goal", sa.Text(), nullable=False),
        sa.Column("workflow", sa.String(), nullable=False),
        sa.Column("loop_mode", sa.String(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("status_reason", sa.Text(), nullable=True),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("loop_contract_version", sa.String(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("owner", sa.String(), nullable=True),
        sa.PrimaryKeyConstraint("run_id", name="pk_runs"),
    )
    op.create_index("ix_runs_session_id", "runs", ["session_id"])
    op.create_index("ix_runs_created_at", "runs", ["created_at"])

    op.create_table(
        "task_states",
        sa.Column("run_id", sa.String(), nullable=False),
        sa.Column("task_id", sa.String(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("agent", sa.String(), nullable=True),
        sa.Column("loop_contract_version", sa.String(), nullable=False),
        sa.Column("loop_mode", sa.String(), nullable=False),
        sa.Column("validation_status", sa.String(), nullable=False),
        sa.Column("validation_errors", sa.JSON(), nullable=False),
        sa.Column("hook", sa.Text(), nullable=True),
        sa.Column("grip", sa.Text(), nullable=True),
        sa.Column("payoff", sa.Text(), nullable=True),
        sa.Column("reinforce", sa.Text(), nullable=True),
        sa.Column("loop", sa.Text(), nullable=True),
        sa.Column("rendered", sa.Text(), nullable=False),
        sa.Column("hook_source", sa.String(), nullable=False),
        sa.Column("routing_next_agent", sa.String(), nullable=True),
        sa.Column("routing_next_tool", sa.String(), nullable=True),
        sa.Column("routing_next_workflow", sa.String(), nullable=True),
        sa.Column("retrieval_query", sa.Text(), nullable=True),
        sa.Column("retrieval_results", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "task_id", name="pk_task_states"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.run_id"], name="fk_task_states_run_id_runs"),
    )

    op.create_table(
        "attempts",
        sa.Column("run_id", sa.String(), nullable=False),
        sa.Column("task_id", sa.String(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("raw", sa.Text(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("errors", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "task_id", "number", name="pk_attempts"),
        sa.ForeignKeyConstraint(
            ["run_id", "task_id"],
            ["task_states.run_id", "task_states.task_id"],
            name="fk_attempts_run_id_task_states",
        ),
    )

    op.create_table(
        "transitions",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(), nullable=False),
        sa.Column("source_task_id", sa.String(), nullable=False),
        sa.Column("target_task_id", sa.String(), nullable=False),
        sa.Column("mode", sa.String(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("hook", sa.Text(), nullable=False),
        sa.Column("superseded", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_transitions"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.run_id"], name="fk_transitions_run_id_runs"),
    )
    op.create_index("ix_transitions_run_id", "transitions", ["run_id"])

    op.create_table(
        "events",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("run_id", sa.String(), nullable=False),
        sa.Column("task_id", sa.String(), nullable=True),
        sa.Column("loop_contract_version", sa.String(), nullable=True),
        sa.Column("loop_mode", sa.String(), nullable=True),
        sa.Column("validation_status", sa.String(), nullable=True),
        sa.Column("transition_mode", sa.String(), nullable=True),
        sa.Column("timestamp", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_events"),
    )
    op.create_index("ix_events_run_id_id", "events", ["run_id", "id"])
    op.create_index("ix_events_name_timestamp", "events", ["name", "timestamp"])


def downgrade() -> None:
    """Drop everything ``upgrade`` created, children first."""
    op.drop_table("events")
    op.drop_table("transitions")
    op.drop_table("attempts")
    op.drop_table("task_states")
    op.drop_table("runs")
