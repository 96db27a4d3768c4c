"""Metrics indexes: covering indexes so the loop metrics never read the wide rows.

``marsrag metrics`` aggregates over every run, task state, attempt, transition and event
(``marsrag.store._metrics_sql``). These indexes hold exactly the columns its queries read, in ``run_id`` order
where rows are joined by run, so both backends answer from the indexes alone (SQLite probes them in order;
PostgreSQL scans them index-only) instead of the Loop Contract text, retrieval results and raw answers:

- ``runs``: the run's status, workflow, creation time and session, by run id; and workflow and creation time
  by session (replaces ``ix_runs_session_id``, which it extends), for session depth and later runs;
- ``task_states``: validation status and routed workflow, by run and task; and the few rows that route to
  a workflow (a partial index), for "a later run of the session ran a workflow this run routed to";
- ``attempts``: number, status and kind by run and task (first attempt, repair), and runs by attempt kind
  (operator actions);
- ``transitions``: superseded and mode by run (replaces ``ix_transitions_run_id``, which it extends);
- ``events``: by name and run (which runs were followed).

On an existing store the upgrade builds them in its transaction, which blocks writers meanwhile (seconds
for a million events).

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision: str | None = "0003"
branch_labels: str | None = None
depends_on: str | None = None

_ROUTED = "routing_next_workflow IS NOT NULL"


def upgrade() -> None:
    """Create the metrics indexes; two replace narrower ones (``ix_runs_session_id``, ``ix_transitions_run_id``)."""
    op.create_index("ix_runs_metrics", "runs", ["run_id", "status", "workflow", "created_at", "session_id"])
    op.drop_index("ix_runs_session_id", table_name="runs")
    op.create_index("ix_runs_session_id_workflow_created_at", "runs", ["session_id", "workflow", "created_at"])
    op.create_index(
        "ix_task_states_metrics", "task_states", ["run_id", "task_id", "validation_status", "routing_next_workflow"]
    )
    op.create_index(
        "ix_task_states_routed",
        "task_states",
        ["routing_next_workflow", "run_id"],
        sqlite_where=sa.text(_ROUTED),
        postgresql_where=sa.text(_ROUTED),
    )
    op.create_index("ix_attempts_metrics", "attempts", ["run_id", "task_id", "number", "status", "kind"])
    op.create_index("ix_attempts_kind_run_id", "attempts", ["kind", "run_id"])
    op.drop_index("ix_transitions_run_id", table_name="transitions")
    op.create_index("ix_transitions_metrics", "transitions", ["run_id", "superseded", "mode"])
    op.create_index("ix_events_name_run_id", "events", ["name", "run_id"])


def downgrade() -> None:
    """Drop them and restore the two narrower indexes."""
    op.drop_index("ix_events_name_run_id", table_name="events")
    op.drop_index("ix_transitions_metrics", table_name="transitions")
    op.create_index("ix_transitions_run_id", "transitions", ["run_id"])
    op.drop_index("ix_attempts_kind_run_id", table_name="attempts")
    op.drop_index("ix_attempts_metrics", table_name="attempts")
    op.drop_index("ix_task_states_routed", table_name="task_states")
    op.drop_index("ix_task_states_metrics", table_name="task_states")
    op.drop_index("ix_runs_session_id_workflow_created_at", table_name="runs")
    op.create_index("ix_runs_session_id", "runs", ["session_id"])
    op.drop_index("ix_runs_metrics", table_name="runs")
