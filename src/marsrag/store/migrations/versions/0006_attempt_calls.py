"""Attempt calls: what each attempt asked of the LLM, of whom, and what it cost.

Eight nullable columns on ``attempts``: the model and the endpoint (``host[:port]`` only), the
structured-output mode used and those the endpoint refused before it (a JSON list), the latency, the prompt
and completion token counts and the finish reason. Attempts stored before this revision keep NULL in all of
them, which reads back as unknown (and the refused modes as an empty list).

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision: str | None = "0005"
branch_labels: str | None = None
depends_on: str | None = None

_COLUMNS = (
    ("model", sa.String),
    ("endpoint", sa.String),
    ("structured_output", sa.String),
    ("structured_output_refused", sa.JSON),
    ("latency_ms", sa.Integer),
    ("prompt_tokens", sa.Integer),
    ("completion_tokens", sa.Integer),
    ("finish_reason", sa.String),
)


def upgrade() -> None:
    # Nullable, no default: both backends add them in place (no table rebuild on SQLite).
    for name, type_ in _COLUMNS:
        op.add_column("attempts", sa.Column(name, type_(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        for name, _ in reversed(_COLUMNS):
            batch.drop_column(name)
