"""The run store's tables as SQLAlchemy Core metadata: the single source the migrations are checked against.

Types are the portable ones (``String``, ``Text``, ``JSON``, ``DateTime(timezone=True)``) so one schema serves
SQLite and PostgreSQL. Identifiers are unbounded ``String`` on purpose: SQLite ignores lengths, so a bound
would only bite on PostgreSQL. Every constraint and index is named, so both backends (and Alembic's
comparison) agree on the names.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    DateTime,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    false,
)

#: Name of Alembic's bookkeeping table; not ``alembic_version``, so MarsRAG can share a schema with an app
#: that has its own Alembic history.
VERSION_TABLE = "marsrag_schema_version"

metadata = MetaData()

runs = Table(
    "runs",
    metadata,
    Column("run_id", String, nullable=False),
    Column("session_id", String, nullable=False),
    Column("goal", Text, nullable=False),
    Column("workflow", String, nullable=False),
    Column("loop_mode", String, nullable=False),
    Column("status", String, nullable=False),
    Column("status_reason", Text, nullable=True),
    Column("summary", Text, nullable=False),
    Column("loop_contract_version", String, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    # "host:pid" of the process executing the run, so a run left running by a dead process can be told stale.
    Column("owner", String, nullable=True),
    PrimaryKeyConstraint("run_id", name="pk_runs"),
    Index("ix_runs_session_id", "session_id"),
    Index("ix_runs_created_at", "created_at"),
)

task_states = Table(
    "task_states",
    metadata,
    Column("run_id", String, nullable=False),
    Column("task_id", String, nullable=False),
    Column("position", Integer, nullable=False),
    Column("agent", String, nullable=True),
    Column("loop_contract_version", String, nullable=False),
    Column("loop_mode", String, nullable=False),
    Column("validation_status", String, nullable=False),
    Column("validation_errors", JSON, nullable=False),
    # The five loop fields, one column each: metrics and queries read them without parsing the prose.
    Column("hook", Text, nullable=True),
    Column("grip", Text, nullable=True),
    Column("payoff", Text, nullable=True),
    Column("reinforce", Text, nullable=True),
    Column("loop", Text, nullable=True),
    Column("rendered", Text, nullable=False),
    Column("hook_source", String, nullable=False),
    Column("routing_next_agent", String, nullable=True),
    Column("routing_next_tool", String, nullable=True),
    Column("routing_next_workflow", String, nullable=True),
    Column("retrieval_query", Text, nullable=True),
    # none_as_null: "no retrieval" is SQL NULL, not the JSON value null.
    Column("retrieval_results", JSON(none_as_null=True), nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("run_id", "task_id", name="pk_task_states"),
    ForeignKeyConstraint(["run_id"], ["runs.run_id"], name="fk_task_states_run_id_runs"),
)

attempts = Table(
    "attempts",
    metadata,
    Column("run_id", String, nullable=False),
    Column("task_id", String, nullable=False),
    Column("number", Integer, nullable=False),
    Column("raw", Text, nullable=False),
    Column("status", String, nullable=False),
    Column("errors", JSON, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("run_id", "task_id", "number", name="pk_attempts"),
    ForeignKeyConstraint(
        ["run_id", "task_id"],
        ["task_states.run_id", "task_states.task_id"],
        name="fk_attempts_run_id_task_states",
    ),
)

transitions = Table(
    "transitions",
    metadata,
    Column("id", Integer, autoincrement=True, nullable=False),
    Column("run_id", String, ForeignKey("runs.run_id", name="fk_transitions_run_id_runs"), nullable=False),
    Column("source_task_id", String, nullable=False),
    Column("target_task_id", String, nullable=False),
    Column("mode", String, nullable=False),
    Column("reason", Text, nullable=False),
    Column("hook", Text, nullable=False),
    Column("superseded", Boolean, nullable=False, server_default=false()),
    Column("created_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("id", name="pk_transitions"),
    Index("ix_transitions_run_id", "run_id"),
)

# No foreign key to runs: events are the high-volume table (metrics aggregate over millions of rows) and
# describe runs; they are written in the same transaction as the state they describe.
events = Table(
    "events",
    metadata,
    Column("id", Integer, autoincrement=True, nullable=False),
    Column("name", String, nullable=False),
    Column("run_id", String, nullable=False),
    Column("task_id", String, nullable=True),
    Column("loop_contract_version", String, nullable=True),
    Column("loop_mode", String, nullable=True),
    Column("validation_status", String, nullable=True),
    Column("transition_mode", String, nullable=True),
    Column("timestamp", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("id", name="pk_events"),
    Index("ix_events_run_id_id", "run_id", "id"),
    Index("ix_events_name_timestamp", "name", "timestamp"),
)
