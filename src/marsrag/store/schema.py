"""The run store's tables as SQLAlchemy Core metadata: the single source the migrations are checked against.

Types are the portable ones (``String``, ``Text``, ``JSON``, ``DateTime(timezone=True)``) so one schema serves
SQLite and PostgreSQL. Identifiers are unbounded ``String`` on purpose: SQLite ignores lengths, so a bound
would only bite on PostgreSQL. Every constraint and index is named, so both backends (and Alembic's
comparison) agree on the names.

The knowledge base's full-text index is the one thing not described here: it differs per backend (an FTS5
table with triggers on SQLite, a generated ``tsvector`` column with a GIN index on PostgreSQL), so migration
0002 creates it by hand (0008 makes the SQLite triggers again) and :func:`include_name` keeps it out of the
schema comparison.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Date,
    DateTime,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
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
    # The run whose next action this one follows (migration 0007): unique, so a run is followed at most once
    # however many requests race (NULL, for every other run, is never equal to another NULL).
    Column("followed_from", String, nullable=True),
    # What the run adds to the run-level rollup counters (migration 0010): NULL while it is not completed, else
    # its fact bits (offers a next action 1, followed 2, acted on otherwise 4), so a write that changes a fact
    # moves the run's counts from its old bits to its new ones (see marsrag.store._rollups).
    Column("metrics_code", Integer, nullable=True),
    # The experiment of the run's session and its arm (migration 0012): NULL outside an experiment.
    Column("experiment", String, nullable=True),
    Column("arm", String, nullable=True),
    # The knowledge base collections the run's retrieval keeps to, a JSON list (migration 0016); NULL: all.
    Column("collections", JSON(none_as_null=True), nullable=True),
    # The W3C traceparent its OpenTelemetry spans continue from (migration 0018); NULL: not traced.
    Column("trace", String, nullable=True),
    PrimaryKeyConstraint("run_id", name="pk_runs"),
    Index("uq_runs_followed_from", "followed_from", unique=True),
    Index("ix_runs_created_at", "created_at"),
    # Metrics (migration 0004): what the metrics read of a run, in run_id order, so they never touch its row;
    # and a session's runs with their workflow and creation time (session depth, later runs of a session).
    Index("ix_runs_metrics", "run_id", "status", "workflow", "created_at", "session_id"),
    Index("ix_runs_session_id_workflow_created_at", "session_id", "workflow", "created_at"),
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
    # Numbered source markers resolved to passages, and warnings about the ones that resolve to none
    # (migration 0009); NULL for tasks stored before it.
    Column("citations", JSON(none_as_null=True), nullable=True),
    Column("citation_warnings", JSON(none_as_null=True), nullable=True),
    # How well the retrieved passages support what the task was asked (migration 0015): the level ("strong",
    # "weak", "none") in a column of its own for the metrics, and the whole assessment; NULL before 0015.
    Column("support_level", String, nullable=True),
    Column("support", JSON(none_as_null=True), nullable=True),
    # The retrievers whose lists were fused into the results, and why the vector search did not answer
    # (migration 0019); NULL for tasks stored before it.
    Column("retrievers", JSON(none_as_null=True), nullable=True),
    Column("retrieval_skipped", Text, nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    # The operator action running on the task (migration 0005): who claimed it and when; NULL when none.
    Column("action_owner", String, nullable=True),
    Column("action_started_at", DateTime(timezone=True), nullable=True),
    # A token per save (migration 0007): a save retried after its connection dropped mid-commit reads it to
    # tell whether the lost commit landed, so nothing is written (or counted) twice.
    Column("commit_id", String, nullable=True),
    PrimaryKeyConstraint("run_id", "task_id", name="pk_task_states"),
    ForeignKeyConstraint(["run_id"], ["runs.run_id"], name="fk_task_states_run_id_runs"),
    # Metrics (migration 0004): a covering index by run and task, and the few tasks that route to a workflow.
    Index("ix_task_states_metrics", "run_id", "task_id", "validation_status", "routing_next_workflow"),
    # Partial in the database (WHERE routing_next_workflow IS NOT NULL, as 0004 creates it). The predicate is not
    # repeated here: a dialect keyword (postgresql_where) makes SQLAlchemy import that dialect's whole package
    # when this module loads, on every store open; the schema comparison does not compare predicates.
    Index("ix_task_states_routed", "routing_next_workflow", "run_id"),
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
    Column("kind", String, nullable=False, server_default="answer"),
    # The LLM call behind the attempt (migration 0006); NULL when unknown (every attempt stored before it).
    Column("model", String, nullable=True),
    # host[:port] only, never a key or a path.
    Column("endpoint", String, nullable=True),
    Column("structured_output", String, nullable=True),
    # The modes refused before the attempt, a JSON list; NULL (as in older rows) reads back as none.
    Column("structured_output_refused", JSON(none_as_null=True), nullable=True),
    Column("latency_ms", Integer, nullable=True),
    Column("prompt_tokens", Integer, nullable=True),
    Column("completion_tokens", Integer, nullable=True),
    Column("finish_reason", String, nullable=True),
    PrimaryKeyConstraint("run_id", "task_id", "number", name="pk_attempts"),
    ForeignKeyConstraint(
        ["run_id", "task_id"],
        ["task_states.run_id", "task_states.task_id"],
        name="fk_attempts_run_id_task_states",
    ),
    # Metrics (migration 0004): covering by run and task (first attempt, repair), and runs by kind (operator actions).
    Index("ix_attempts_metrics", "run_id", "task_id", "number", "status", "kind"),
    Index("ix_attempts_kind_run_id", "kind", "run_id"),
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
    # By run, covering what the fallback rate reads (migration 0004; it replaced ix_transitions_run_id).
    Index("ix_transitions_metrics", "run_id", "superseded", "mode"),
)

# What a task being written has so far (migration 0017): one row per task position of a run, replaced as the model
# streams the answer; ``seq`` is the run's progress number of the write (a reader asks for the rows after the last it
# saw). ``detail`` holds the rest of the TaskProgress record (call, sections, writing, counts, start).
task_progress = Table(
    "task_progress",
    metadata,
    Column("run_id", String, ForeignKey("runs.run_id", name="fk_task_progress_run_id_runs"), nullable=False),
    Column("position", Integer, nullable=False),
    Column("task_id", String, nullable=False),
    Column("seq", Integer, nullable=False),
    Column("detail", JSON, nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("run_id", "position", name="pk_task_progress"),
    Index("ix_task_progress_run_id_seq", "run_id", "seq"),
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
    # What an event name carries beyond the spec's fields (migration 0012): NULL for the spec's own events.
    Column("detail", JSON(none_as_null=True), nullable=True),
    PrimaryKeyConstraint("id", name="pk_events"),
    Index("ix_events_run_id_id", "run_id", "id"),
    Index("ix_events_name_timestamp", "name", "timestamp"),
    # Which runs have an event of a name (loop.action.followed, for the metrics; migration 0004).
    Index("ix_events_name_run_id", "name", "run_id"),
)

# The loop metrics' counters (migration 0010), kept up to date by every write in the same transaction, so reading
# the metrics costs the number of (workflow, day) groups, not the history. Keyed by the run's workflow and the UTC
# day it was created (session depth: the day of the session's first run); ``task`` is the task (for transitions
# the source task) a task-level counter counts, '' otherwise; ``workflow`` '' holds what is not per workflow
# (session depth over all workflows, events per name). A writer adds to its own ``shard`` so concurrent writers
# need not queue on one row; a read sums the shards. Each counter also has an all-time row, day 0001-01-01
# (migration 0011), which all-history reads sum instead of every day. ``experiment`` and ``arm`` (migration 0013)
# are the run's (a session's depth: its first run's), '' outside an experiment; a read that does not group by arm
# sums them. See marsrag.store._rollups for the counters.
rollups = Table(
    "rollups",
    metadata,
    Column("workflow", String, nullable=False),
    Column("day", Date, nullable=False),
    Column("task", String, nullable=False),
    Column("counter", String, nullable=False),
    Column("experiment", String, nullable=False),
    Column("arm", String, nullable=False),
    Column("shard", Integer, nullable=False),
    Column("n", BigInteger, nullable=False),
    # Day first (migration 0011): an all-history read (the all-time rows) and a window's (a range of days) read
    # only their rows. No other index: what else is read is a few rows per workflow, day, counter and arm.
    PrimaryKeyConstraint("day", "workflow", "task", "counter", "experiment", "arm", "shard", name="pk_rollups"),
)

# The knowledge base: one row per ingested file, its text cut into chunks (see marsrag.rag).
documents = Table(
    "documents",
    metadata,
    # A number of its own (migration 0008), so a document's identity can change without touching its chunks.
    Column("id", Integer, autoincrement=True, nullable=False),
    # The document's identity is (collection, path). The collection is named by the user or, by default, the
    # resolved folder the path is relative to; rows from before migration 0008 are in "legacy".
    Column("collection", Text, nullable=False),
    # What citations show: relative to the parent of the folder (or file) given to ingest, POSIX separators.
    Column("path", Text, nullable=False),
    Column("sha256", String, nullable=False),
    Column("size", BigInteger, nullable=False),
    # The resolved file the stored content was read from; NULL for rows from before migration 0008.
    Column("source", Text, nullable=True),
    # The chunker version that cut its chunks (migration 0009); NULL for documents ingested before it, which
    # the next ingest cuts again.
    Column("chunker", Integer, nullable=True),
    Column("ingested_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("id", name="pk_documents"),
    UniqueConstraint("collection", "path", name="uq_documents_collection_path"),
)

chunks = Table(
    "chunks",
    metadata,
    Column("id", Integer, autoincrement=True, nullable=False),
    Column(
        "document_id",
        Integer,
        ForeignKey("documents.id", name="fk_chunks_document_id_documents", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("position", Integer, nullable=False),
    # The heading path, outermost first: "Runbook: pre-warming caches > Steps" ("" before the first heading).
    Column("heading", Text, nullable=False),
    Column("text", Text, nullable=False),
    PrimaryKeyConstraint("id", name="pk_chunks"),
    # Also the index that replacing (or cascading the delete of) one document's chunks goes through.
    UniqueConstraint("document_id", "position", name="uq_chunks_document_id_position"),
    # Ids are never reused (SQLite would reuse the highest after a delete): a run's stored retrieval results
    # name chunk ids, which must not come to mean another passage when a document is re-ingested.
    sqlite_autoincrement=True,
)

# Per document, how many of its chunks contain each term (migration 0015): the term statistics the support signal
# weighs a goal's terms by (marsrag.rag.support). Replaced with the document's chunks.
document_terms = Table(
    "document_terms",
    metadata,
    Column(
        "document_id",
        Integer,
        ForeignKey("documents.id", name="fk_document_terms_document_id_documents", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("term", Text, nullable=False),
    Column("chunks", Integer, nullable=False),
    PrimaryKeyConstraint("document_id", "term", name="pk_document_terms"),
    Index("ix_document_terms_term", "term"),
)

# Per chunk its vector for the knowledge base's vector search (migration 0019): one per chunk, made by the
# embedder named (its identity) with its dimension, float32 little-endian, unit length. Goes with its chunk.
chunk_vectors = Table(
    "chunk_vectors",
    metadata,
    Column(
        "chunk_id",
        Integer,
        ForeignKey("chunks.id", name="fk_chunk_vectors_chunk_id_chunks", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("embedder", Text, nullable=False),
    Column("dimension", Integer, nullable=False),
    Column("vector", LargeBinary, nullable=False),
    PrimaryKeyConstraint("chunk_id", name="pk_chunk_vectors"),
    Index("ix_chunk_vectors_embedder", "embedder"),
)

# One row: a number every write to the knowledge base's chunks or vectors raises in its transaction (migration
# 0019). A process keeping the vectors in memory for its exact scan reads it to know whether they are current.
knowledge_state = Table(
    "knowledge_state",
    metadata,
    Column("id", Integer, nullable=False),
    Column("generation", BigInteger, nullable=False),
    PrimaryKeyConstraint("id", name="pk_knowledge_state"),
)

#: The full-text objects migration 0002 makes outside this metadata: on SQLite the FTS5 table ``chunks_fts``
#: (and the ``chunks_fts_*`` shadow tables FTS5 makes for it); on PostgreSQL the column ``chunks.fts`` and
#: its GIN index ``ix_chunks_fts``. (Triggers are not reflected, so they need no entry.)
FULL_TEXT_TABLE = "chunks_fts"
FULL_TEXT_COLUMN = "fts"
FULL_TEXT_INDEX = "ix_chunks_fts"


def include_name(name: str | None, type_: str, parent_names: Mapping[str, str | None]) -> bool:
    """Alembic ``include_name`` hook: False for the backend-specific full-text objects, True for the rest."""
    if type_ == "table":
        return name != FULL_TEXT_TABLE and not (name or "").startswith(f"{FULL_TEXT_TABLE}_")
    if type_ == "column":
        return not (parent_names.get("table_name") == "chunks" and name == FULL_TEXT_COLUMN)
    if type_ == "index":
        return name != FULL_TEXT_INDEX
    return True
