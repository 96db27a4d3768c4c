"""All-time rollup rows: each metric counter also kept in one row for all history (``day`` 0001-01-01).

No table changes: the rows are counted by the writes from this revision on. A database at 0010 has only the
day rows, so the store recounts its rollups (``marsrag.store._rollups.rebuild``, which writes both) in the
same transaction, right after migrating it (see ``_migrate``): the definitions of the MarsRAG that opens it.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02
"""

from __future__ import annotations

revision = "0011"
down_revision: str | None = "0010"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Nothing to alter: the recount after the migration writes the all-time rows."""


def downgrade() -> None:
    """The all-time rows stay (0010's reads of days never reach 0001-01-01): nothing to undo."""
