"""Stored text made storable: JSON values holding an escaped lone surrogate or NUL get U+FFFD in its place.

Before this revision a feedback comment posted as JSON with ``\\ud800`` (or typed on a command line with an
undecodable byte) was stored escaped in ``events.detail``; on PostgreSQL every JSON operator on that row then
failed, and with it the windowed metrics, ``--verify`` and ``--rebuild``. No schema change: the values are
rewritten (see ``marsrag.store._repair``). The columns are the JSON columns of the schema at this revision.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-04
"""

from __future__ import annotations

from alembic import op

from marsrag.store._repair import JsonColumn, repair_json

revision = "0014"
down_revision: str | None = "0013"
branch_labels: str | None = None
depends_on: str | None = None

_TASK, _ATTEMPT = ("run_id", "task_id"), ("run_id", "task_id", "number")
COLUMNS = (
    JsonColumn("task_states", "validation_errors", _TASK),
    JsonColumn("task_states", "retrieval_results", _TASK),
    JsonColumn("task_states", "citations", _TASK),
    JsonColumn("task_states", "citation_warnings", _TASK),
    JsonColumn("attempts", "errors", _ATTEMPT),
    JsonColumn("attempts", "structured_output_refused", _ATTEMPT),
    JsonColumn("events", "detail", ("id",)),
)


def upgrade() -> None:
    if op.get_context().as_sql:
        # Offline (SQL for review): the values to rewrite depend on the rows, so there is no SQL to print.
        return
    repair_json(op.get_bind(), COLUMNS)


def downgrade() -> None:
    # Nothing to undo: the repaired values are valid at every revision.
    pass
