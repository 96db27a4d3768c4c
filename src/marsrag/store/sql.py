"""The SQL run store: one implementation of :class:`RunStore` for SQLite and PostgreSQL, over SQLAlchemy Core.

Every write is one transaction (``engine.begin()``; a task commit on SQLite, when it can, a pooled DBAPI
connection's own: see marsrag.store._direct). The store holds nothing mutable but the engine, whose pool is
thread-safe, so one store serves every thread of a process.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from datetime import datetime
from itertools import groupby
from typing import Any

from sqlalchemy import Connection, Engine, bindparam, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError

import marsrag.store._direct as _direct
import marsrag.store._engine as _engine
import marsrag.store._metrics_sql as _metrics_sql
import marsrag.store._repair as _repair
import marsrag.store._rollup_reads as _rollup_reads
import marsrag.store._rollups as _rollups
import marsrag.store._rows as _rows
from marsrag.errors import AlreadyFollowedError, AmbiguousRunIdError, HolderLostError, RunNotFoundError, StoreError
from marsrag.liveness import holder_gone
from marsrag.state import (
    VALIDATION_STATUSES,
    LoopEvent,
    RunRecord,
    RunStatus,
    TaskProgress,
    TaskState,
    TransitionRecord,
    utcnow,
)
from marsrag.store._knowledge_sql import SqlKnowledgeStore
from marsrag.store._metrics_sql import Span
from marsrag.store._migrate import ensure_schema
from marsrag.store._prepared import Cursor, Prepared
from marsrag.store._rollups import Tally, TaskFacts
from marsrag.store._transactions import Transactions
from marsrag.store.base import KnowledgeStore, Rankings, RunStore
from marsrag.store.queries import (
    Claim,
    GroupedCounts,
    GroupKey,
    Holder,
    MetricTotals,
    TaskFailure,
    UnsupportedGoal,
)
from marsrag.store.schema import attempts, events, metadata, runs, task_progress, task_states, transitions

# Write statements built once: building the expression each call cost more than executing it on SQLite.
# The heartbeat also returns what the rollups need to know of the run (its group, whether it is counted).
_HEARTBEAT = (
    update(runs)
    .where(runs.c.run_id == bindparam("b_run_id"))
    .values(updated_at=bindparam("b_now"))
    .returning(runs.c.workflow, runs.c.created_at, runs.c.status, runs.c.metrics_code, runs.c.experiment, runs.c.arm)
)
_HEARTBEAT_HELD = _HEARTBEAT.where(runs.c.status == "running", runs.c.owner == bindparam("b_owner"))
_HEARTBEAT_COLUMNS = ("workflow", "created_at", "status", "metrics_code", "experiment", "arm")
# An executor's heartbeat between commits (RunStore.heartbeat_runs): only the runs it still holds.
_BEAT_HELD = (
    update(runs)
    .where(
        runs.c.run_id.in_(bindparam("run_ids", expanding=True)),
        runs.c.status == "running",
        runs.c.owner == bindparam("b_owner"),
    )
    .values(updated_at=bindparam("b_now"))
    .returning(runs.c.run_id)
)
_RUN_EXISTS = select(runs.c.run_id).where(runs.c.run_id == bindparam("run_id"))
# Replacing a task deletes its rows and returns what the rollups counted of them.
_DELETE_ATTEMPTS = (
    delete(attempts)
    .where((attempts.c.run_id == bindparam("run_id")) & (attempts.c.task_id == bindparam("task_id")))
    .returning(attempts.c.number, attempts.c.status, attempts.c.kind)
)
_DELETE_TASK = (
    delete(task_states)
    .where((task_states.c.run_id == bindparam("run_id")) & (task_states.c.task_id == bindparam("task_id")))
    .returning(task_states.c.validation_status, task_states.c.position, task_states.c.support_level)
)
# A task has at most one current outgoing transition: a new one marks the current one superseded (kept).
_SUPERSEDE = (
    update(transitions)
    .where(
        (transitions.c.run_id == bindparam("b_run_id"))
        & (transitions.c.source_task_id == bindparam("b_source"))
        & transitions.c.superseded.is_(False)
    )
    .values(superseded=True)
    .returning(transitions.c.mode)
)
# The current transitions out of a task, and a task's status (the rollups' fallbacks after a partial task).
_CURRENT_OUT = select(transitions.c.mode).where(
    (transitions.c.run_id == bindparam("b_run_id"))
    & (transitions.c.source_task_id == bindparam("b_source"))
    & transitions.c.superseded.is_(False)
)
_TASK_STATUS = select(task_states.c.validation_status).where(
    (task_states.c.run_id == bindparam("b_run_id")) & (task_states.c.task_id == bindparam("b_source"))
)
_INSERT_RUN, _INSERT_TASK, _INSERT_ATTEMPTS = insert(runs), insert(task_states), insert(attempts)
_INSERT_TRANSITION, _INSERT_EVENTS = insert(transitions), insert(events)
# Task outcomes of many runs, grouped in the database; ids go in batches below SQLite's bound-parameter limit.
_OUTCOMES = (
    select(task_states.c.run_id, task_states.c.validation_status, func.count())
    .where(task_states.c.run_id.in_(bindparam("run_ids", expanding=True)))
    .group_by(task_states.c.run_id, task_states.c.validation_status)
)
_OUTCOME_BATCH = 500
_COMMIT_ID = select(task_states.c.commit_id).where(
    (task_states.c.run_id == bindparam("run_id")) & (task_states.c.task_id == bindparam("task_id"))
)
_JSON_COLUMNS = _repair.json_columns(metadata)
_EVENT_STORED = select(events.c.id).where(
    (events.c.run_id == bindparam("run_id"))
    & (events.c.name == bindparam("name"))
    & (events.c.timestamp == bindparam("timestamp"))
)
_LAST_PROGRESS = select(func.coalesce(func.max(task_progress.c.seq), 0)).where(
    task_progress.c.run_id == bindparam("run_id")
)
_DELETE_PROGRESS = delete(task_progress).where(
    task_progress.c.run_id == bindparam("run_id"), task_progress.c.position == bindparam("b_position")
)
#: What TaskProgress keeps in the row's ``detail`` (the rest are columns).
_PROGRESS_DETAIL = ("call", "sections", "writing", "chunks", "chars", "started_at")
_RUN_FOR_UPDATE = select(runs).where(runs.c.run_id == bindparam("run_id")).with_for_update()
#: Rollup shards a store writes to (see marsrag.store._rollups): 1 is one row per counter. With 8 concurrent
#: writers (bench/store_bench.py), per-writer rows (8) wrote 0.73-1.12x as fast as one row per counter on SQLite
#: (its writers queue on one lock anyway) and 1.06-1.20x on PostgreSQL, over three runs on a busy machine, while
#: every read sums 8 times the rows: so one row per counter.
ROLLUP_SHARDS = 1


def _as_seen(row: Any, seen: RunRecord) -> bool:
    return bool(row["status"] == seen.status and row["owner"] == seen.owner)


class SqlRunStore(RunStore):
    """A :class:`RunStore` in a SQL database (SQLite file or PostgreSQL), migrated to the current schema."""

    def __init__(self, engine: Engine, *, rollup_shards: int = ROLLUP_SHARDS) -> None:
        """Use an engine made by :meth:`from_url` (it carries the SQLite connection setup); migrates it.

        ``rollup_shards``: how many rows each rollup counter is spread over (each writing thread adds to one).

        Raises:
            StoreError: the database cannot be reached or migrated.
        """
        if rollup_shards < 1:
            raise ValueError(f"rollup_shards must be >= 1, got {rollup_shards}")
        self.url = engine.url.render_as_string(hide_password=True)
        self._engine = engine
        self._transactions = Transactions(engine, self.url)
        self._writing, self._reading = self._transactions.writing, self._transactions.reading
        self._shards = rollup_shards
        dialect = engine.dialect.name
        self._upsert_rollups = _rollups.upsert(dialect)
        self._insert_new_task = _rollups.insert_new(dialect, task_states)
        self._compiled: dict[tuple[str, tuple[str, ...] | None], Prepared] = {}
        ensure_schema(engine, self.url)
        self._knowledge = SqlKnowledgeStore(engine, self._transactions)

    @classmethod
    def from_url(cls, url: str, *, rollup_shards: int = ROLLUP_SHARDS) -> SqlRunStore:
        """Open (creating and migrating when needed) the store at ``sqlite:///PATH`` or ``postgresql+psycopg://...``.

        Raises:
            StoreError: a bad URL, or a database that cannot be reached or migrated.
        """
        engine = _engine.create(_engine.parse_url(url))
        try:
            return cls(engine, rollup_shards=rollup_shards)
        except BaseException:
            engine.dispose()
            raise

    def _shard(self) -> int:
        """The rollup shard of the calling thread (0 with one shard)."""
        if self._shards == 1:
            return 0
        return hash((os.getpid(), threading.get_ident())) % self._shards

    def _tallied(self, connection: Connection, tally: Tally, cursor: Cursor | None = None) -> None:
        """Write a write's rollup changes: one statement, the transaction's last (its row locks are held briefly)."""
        rows = tally.rows(self._shard())
        if not rows:
            return
        if cursor is None:
            connection.execute(self._upsert_rollups, rows)
        else:
            cursor.many(self._prepared("rollups", self._upsert_rollups, tuple(rows[0])), rows)

    def _prepared(self, name: str, statement: Any, keys: tuple[str, ...] | None = None) -> Prepared:
        """``statement`` compiled for this engine's dialect once (see marsrag.store._prepared)."""
        found = self._compiled.get((name, keys))
        if found is None:
            found = self._compiled[(name, keys)] = Prepared(statement, self._engine.dialect, keys)
        return found

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine: for this backend's own tests and benchmarks (the read models above are the seam)."""
        return self._engine

    def create_run(self, run: RunRecord, events: Sequence[LoopEvent] = ()) -> None:
        """Insert a new run with the events that describe it, in one transaction (see RunStore).

        Raises:
            AlreadyFollowedError: another run follows ``run.followed_from`` already (nothing is stored).
        """

        def body(connection: Connection) -> bool:
            tally = Tally()
            # Counted before the insert: the session's depth as it was is what the new run moves it from.
            arm = _rollups.arm_of(run.experiment, run.arm)
            tied = _rollups.session_joined(connection, run.session_id, run.workflow, run.created_at, arm, tally)
            connection.execute(_INSERT_RUN, [_rows.run_row(run)])
            _rollups.session_tied(connection, run.session_id, tied, tally)
            # Ratings stored before their run (one index probe: none, nearly always) count from now on.
            _rollups.ratings_found(connection, run.run_id, run.workflow, arm, _rollups.day(run.created_at), tally)
            changed = self._insert_events(connection, events, tally)
            # Older completed runs of the session that route to this run's workflow are now acted on.
            changed.update(_rollups.routed_earlier(connection, run.session_id, run.workflow, run.created_at))
            _rollups.refresh_runs(connection, changed, tally, lock=True)
            if run.status == "completed":
                _rollups.refresh_runs(connection, [run.run_id], tally, lock=False)
            self._tallied(connection, tally)
            return True

        def landed(connection: Connection) -> bool | None:
            return True if connection.execute(_RUN_EXISTS, {"run_id": run.run_id}).first() is not None else None

        try:
            self._writing(f"create run {run.run_id!r}", body, landed)
        except StoreError as error:
            if run.followed_from is None or not isinstance(error.__cause__, IntegrityError):
                raise
            follower = self._follower(run.followed_from)
            if follower is None:
                raise
            raise AlreadyFollowedError(
                f"the next action of run {run.followed_from!r} was followed already, by run {follower!r}", follower
            ) from None

    def _follower(self, run_id: str) -> str | None:
        query = select(runs.c.run_id).where(runs.c.followed_from == run_id)
        return self._reading(f"read the follower of run {run_id!r}", lambda c: c.execute(query).scalar())

    def set_run_status(
        self,
        run_id: str,
        status: RunStatus,
        *,
        reason: str | None = None,
        summary: str | None = None,
        owner: str | None = None,
        seen: RunRecord | None = None,
    ) -> bool:
        """Update a run's status (and reason, summary, owner when given), as a compare-and-set with ``seen``.

        Raises:
            RunNotFoundError: no such run.
        """
        values: dict[str, Any] = {"status": status, "updated_at": _rows.as_utc(utcnow())}
        if reason is not None or status == "completed":
            values["status_reason"] = reason
        if summary is not None:
            values["summary"] = summary
        if owner is not None:
            values["owner"] = owner
        statement = update(runs).where(runs.c.run_id == run_id).values(values)
        if seen is not None:
            statement = statement.where(runs.c.status == seen.status, self._owned_by(seen.owner))

        def body(connection: Connection) -> bool:
            if connection.execute(statement).rowcount == 1:
                self._refresh(connection, run_id)
                return True
            self._require_run(connection, run_id)
            return False

        def landed(connection: Connection) -> bool | None:
            # A lost update that landed shows its values (its own compare-and-set would now refuse).
            row = connection.execute(select(runs).where(runs.c.run_id == run_id)).mappings().first()
            done = row is not None and all(row[k] == v for k, v in values.items() if k != "updated_at")
            return True if done else None

        return self._writing(f"set the status of run {run_id!r}", body, landed)

    def _refresh(self, connection: Connection, run_id: str) -> None:
        """Recount a run whose row this transaction updated (its status may have changed)."""
        tally = Tally()
        _rollups.refresh_runs(connection, [run_id], tally, lock=False)
        self._tallied(connection, tally)

    @staticmethod
    def _owned_by(owner: str | None) -> Any:
        return runs.c.owner.is_(None) if owner is None else runs.c.owner == owner

    def claim_run(self, run_id: str, owner: str, *, seen: RunRecord, trace: str | None = None) -> Claim:
        """Mark a run ``running`` under ``owner`` if still as ``seen`` and no action holds a task (see RunStore)."""
        claims = select(task_states.c.task_id, task_states.c.action_owner, task_states.c.action_started_at).where(
            task_states.c.run_id == run_id, task_states.c.action_owner.is_not(None)
        )

        def body(connection: Connection) -> Claim:
            # The run row is locked first (PostgreSQL; SQLite's write lock serializes anyway), then the claims
            # are read by a later statement: an action claiming a task locks the same row, so the two queue.
            row = connection.execute(_RUN_FOR_UPDATE, {"run_id": run_id}).mappings().first()
            if row is None:
                return Claim(False, "missing")
            if not _as_seen(row, seen):
                return Claim(False, "changed", holder=row["owner"])
            for task_id, holder, started in connection.execute(claims):
                if not holder_gone(holder, _rows.as_utc(started)):
                    return Claim(False, "busy", holder=holder, task_id=task_id)
            connection.execute(
                update(runs)
                .where(runs.c.run_id == run_id)
                .values(
                    status="running",
                    owner=owner,
                    updated_at=_rows.as_utc(utcnow()),
                    trace=func.coalesce(runs.c.trace, trace),
                )
            )
            self._refresh(connection, run_id)
            return Claim(True)

        def landed(connection: Connection) -> Claim | None:
            row = connection.execute(select(runs.c.status, runs.c.owner).where(runs.c.run_id == run_id)).first()
            return Claim(True) if row is not None and tuple(row) == ("running", owner) else None

        return self._writing(f"claim run {run_id!r}", body, landed)

    def heartbeat_runs(self, run_ids: Sequence[str], owner: str) -> set[str]:
        """Bump ``updated_at`` of the runs in ``run_ids`` running under ``owner``; the ids bumped (see RunStore)."""
        ids = list(dict.fromkeys(run_ids))
        if not ids:
            return set()

        def body(connection: Connection) -> set[str]:
            beaten: set[str] = set()
            now = _rows.as_utc(utcnow())
            # In batches below SQLite's bound-parameter limit (a process executes tens of runs at most).
            for start in range(0, len(ids), _OUTCOME_BATCH):
                batch = {"run_ids": ids[start : start + _OUTCOME_BATCH], "b_owner": owner, "b_now": now}
                beaten.update(connection.execute(_BEAT_HELD, batch).scalars())
            return beaten

        # No landed check: a heartbeat applied twice is one heartbeat.
        return self._writing(f"record the heartbeat of {len(ids)} run(s) of {owner}", body)

    def save_task(
        self,
        state: TaskState,
        events: Sequence[LoopEvent] = (),
        *,
        transition: TransitionRecord | None = None,
        transition_events: Sequence[LoopEvent] = (),
        holder: Holder | None = None,
    ) -> None:
        """Insert (or replace) one task state with its attempts and events (and its outgoing transition).

        Raises:
            RunNotFoundError: the task's run does not exist.
            HolderLostError: ``holder`` no longer holds the run or the task.
        """
        key = {"run_id": state.run_id, "task_id": state.task_id}
        # Random like a uuid4's hex, without building a UUID (a measurable part of the commit); what
        # secrets.token_hex(16) returns, without importing secrets (and random, hmac) on every command's start.
        token = os.urandom(16).hex()
        row = {**_rows.task_row(state), "commit_id": token}
        attempted = [(a.number, a.status, a.kind) for a in state.attempts]
        new = TaskFacts.of(state.validation.status, attempted, state.position, row["support_level"])

        def body(connection: Connection) -> bool:
            # The common statements run on the DBAPI cursor, compiled once (see marsrag.store._prepared).
            cursor = Cursor.of(connection)
            try:
                commit(connection, cursor)
            finally:
                cursor.close()
            return True

        def direct(cursor: Cursor) -> bool:
            # The same commit, its connection unavailable: one that needs it runs as body instead.
            commit(_direct.UNAVAILABLE, cursor)
            return True

        def commit(connection: Connection, cursor: Cursor) -> None:
            # Touching the run row locks it (two writers replacing one task queue instead of colliding on its
            # key), checks it exists, records a heartbeat for stale-run detection and reads the run's rollup
            # group, in one statement.
            run = self._heartbeat(connection, state.run_id, holder, cursor)
            if holder is not None and holder.task_claim is not None:
                self._require_claim(connection, state, holder.task_claim)
            tally = Tally()
            workflow, on = run["workflow"], _rollups.day(run["created_at"])
            arm = _rollups.arm_of(run["experiment"], run["arm"])
            old: TaskFacts | None = None
            # A new task (the common case) is one statement; a replaced one deletes its rows first, reading
            # what the rollups counted of them.
            if cursor.one(self._prepared("new task", self._insert_new_task, tuple(row)), row) is None:
                old_attempts = [tuple(a) for a in connection.execute(_DELETE_ATTEMPTS, key)]
                status, position, support = connection.execute(_DELETE_TASK, key).one()
                old = TaskFacts.of(status, old_attempts, position, support)
                connection.execute(_INSERT_TASK, [row])
            tally.task(workflow, arm, on, state.task_id, old, -1)
            tally.task(workflow, arm, on, state.task_id, new, 1)
            if state.attempts:
                tried = _rows.attempt_rows(state)
                cursor.many(self._prepared("attempts", _INSERT_ATTEMPTS, tuple(tried[0])), tried)
            was_partial, is_partial = old is not None and old.status == "partial", new.status == "partial"
            handoff = {"b_run_id": state.run_id, "b_source": state.task_id}
            # The transition's source is this task, or the committed one before it (the handoff into this task):
            # that one's verdict is what the transition is counted under, and is unchanged by this commit.
            source, source_was, source_is = state.task_id, was_partial, is_partial
            if transition is not None and transition.transition_source_task_id != state.task_id:
                source = transition.transition_source_task_id
                found = cursor.all(self._prepared("task status", _TASK_STATUS), {**handoff, "b_source": source})
                source_was = source_is = bool(found) and found[0][0] == "partial"
            if transition is not None and not transition.superseded:
                for (mode,) in cursor.all(self._prepared("supersede", _SUPERSEDE), {**handoff, "b_source": source}):
                    tally.transition(workflow, arm, on, source, mode, source_was, -1)
            if was_partial != is_partial:
                # The transitions out of the task that stay current now follow a partial task, or no longer do.
                for (mode,) in cursor.all(self._prepared("current out", _CURRENT_OUT), handoff):
                    tally.transition(workflow, arm, on, state.task_id, mode, was_partial, -1)
                    tally.transition(workflow, arm, on, state.task_id, mode, is_partial, 1)
            if transition is not None:
                handed = _rows.transition_row(transition)
                cursor.many(self._prepared("transition", _INSERT_TRANSITION, tuple(handed)), [handed])
                if not transition.superseded:
                    tally.transition(workflow, arm, on, source, transition.transition_mode, source_is, 1)
            # One executemany for the task's and the transition's events, in that order.
            stored = [*events, *(transition_events if transition is not None else ())]
            changed = self._insert_events(connection, stored, tally, cursor)
            changed.discard(state.run_id)
            _rollups.refresh_runs(connection, changed, tally, lock=True)
            if run["status"] == "completed" or run["metrics_code"] is not None:
                # A task of a counted run changed (an operator action): its facts may have.
                _rollups.refresh_runs(connection, [state.run_id], tally, lock=False)
            self._tallied(connection, tally, cursor)

        def landed(connection: Connection) -> bool | None:
            return True if connection.execute(_COMMIT_ID, key).scalar() == token else None

        self._writing(f"save task {state.task_id!r} of run {state.run_id!r}", body, landed, direct=direct)

    def _heartbeat(
        self, connection: Connection, run_id: str, holder: Holder | None, cursor: Cursor | None = None
    ) -> dict[str, Any]:
        """Bump the run's ``updated_at`` (only while ``holder`` holds it); its workflow, creation, status, code."""
        values = {"b_run_id": run_id, "b_now": _rows.as_utc(utcnow())}
        held = holder is not None and holder.run_owner is not None
        statement = _HEARTBEAT_HELD if held else _HEARTBEAT
        if held:
            values["b_owner"] = holder.run_owner  # type: ignore[union-attr]
        raw: Sequence[Any] | None
        if cursor is None:
            raw = connection.execute(statement, values).first()
        else:
            raw = cursor.one(self._prepared("heartbeat held" if held else "heartbeat", statement), values)
        found = dict(zip(_HEARTBEAT_COLUMNS, raw, strict=True)) if raw is not None else None
        if found is None:
            self._require_run(connection, run_id)
            current = connection.execute(select(runs.c.status, runs.c.owner).where(runs.c.run_id == run_id)).first()
            status, owner = tuple(current) if current is not None else ("gone", None)
            raise HolderLostError(
                f"run {run_id!r} is no longer held by {holder.run_owner if holder else None}: it is {status} "
                f"under {owner} (another process took it over)"
            )
        return found

    @staticmethod
    def _require_claim(connection: Connection, state: TaskState, claim: str) -> None:
        query = select(task_states.c.action_owner).where(
            task_states.c.run_id == state.run_id, task_states.c.task_id == state.task_id
        )
        current = connection.execute(query).scalar()
        if current != claim:
            raise HolderLostError(
                f"the operator action's claim on task {state.task_id!r} of run {state.run_id!r} was lost "
                f"(now {'held by ' + current if current else 'released'}): its result is not stored"
            )

    def save_transition(
        self, transition: TransitionRecord, events: Sequence[LoopEvent] = (), *, holder: Holder | None = None
    ) -> None:
        """Insert one transition with its events, in one transaction (superseding the source's current one).

        Raises:
            RunNotFoundError: the transition's run does not exist.
            HolderLostError: ``holder`` no longer holds the run.
        """

        def body(connection: Connection) -> bool:
            run = self._heartbeat(connection, transition.run_id, holder)
            tally = Tally()
            workflow, on, source = (
                run["workflow"],
                _rollups.day(run["created_at"]),
                transition.transition_source_task_id,
            )
            arm = _rollups.arm_of(run["experiment"], run["arm"])
            handoff = {"b_run_id": transition.run_id, "b_source": source}
            partial = connection.execute(_TASK_STATUS, handoff).scalar() == "partial"
            if not transition.superseded:
                for mode in connection.execute(_SUPERSEDE, handoff).scalars():
                    tally.transition(workflow, arm, on, source, mode, partial, -1)
                tally.transition(workflow, arm, on, source, transition.transition_mode, partial, 1)
            connection.execute(_INSERT_TRANSITION, [_rows.transition_row(transition)])
            _rollups.refresh_runs(connection, self._insert_events(connection, events, tally), tally, lock=True)
            self._tallied(connection, tally)
            return True

        def landed(connection: Connection) -> bool | None:
            query = select(func.count()).where(
                transitions.c.run_id == transition.run_id,
                transitions.c.source_task_id == transition.transition_source_task_id,
                transitions.c.target_task_id == transition.transition_target_task_id,
                transitions.c.mode == transition.transition_mode,
                transitions.c.created_at == _rows.as_utc(transition.created_at),
            )
            return True if connection.execute(query).scalar() else None

        self._writing(f"save a transition of run {transition.run_id!r}", body, landed)

    def claim_task(self, run_id: str, task_id: str, owner: str, *, statuses: Sequence[str], seen: RunRecord) -> Claim:
        """Claim a task for an operator action, atomically; whether this caller got it, else why (see RunStore)."""
        task = select(task_states.c.validation_status, task_states.c.action_owner, task_states.c.action_started_at)
        task = task.where(task_states.c.run_id == run_id, task_states.c.task_id == task_id)

        def body(connection: Connection) -> Claim:
            # Lock the run row first, as claim_run does: a resume and an action racing for one run queue.
            row = connection.execute(_RUN_FOR_UPDATE, {"run_id": run_id}).mappings().first()
            if row is None:
                return Claim(False, "missing")
            if not _as_seen(row, seen):
                return Claim(False, "changed", holder=row["owner"])
            current = connection.execute(task).first()
            if current is None:
                return Claim(False, "missing")
            status, holder, started = current
            if status not in statuses:
                return Claim(False, "status")
            if holder is not None and not holder_gone(holder, _rows.as_utc(started)):
                return Claim(False, "busy", holder=holder, task_id=task_id)
            connection.execute(
                update(task_states)
                .where(task_states.c.run_id == run_id, task_states.c.task_id == task_id)
                .values(action_owner=owner, action_started_at=_rows.as_utc(utcnow()))
            )
            return Claim(True)

        def landed(connection: Connection) -> Claim | None:
            current = connection.execute(task).first()
            return Claim(True) if current is not None and current[1] == owner else None

        return self._writing(f"claim task {task_id!r} of run {run_id!r}", body, landed)

    def release_task(self, run_id: str, task_id: str, owner: str) -> None:
        """Release ``owner``'s claim on a task (nothing when it holds none)."""
        statement = (
            update(task_states)
            .where(
                task_states.c.run_id == run_id,
                task_states.c.task_id == task_id,
                task_states.c.action_owner == owner,
            )
            .values(action_owner=None, action_started_at=None)
        )
        # Safe to apply twice: retried as it is when its connection drops.
        self._writing(f"release task {task_id!r} of run {run_id!r}", lambda connection: connection.execute(statement))

    def add_events(self, events: Sequence[LoopEvent]) -> None:
        """Insert events that describe no new state (e.g. ``loop.ui.rendered``)."""
        if not events:
            return

        def body(connection: Connection) -> None:
            tally = Tally()
            _rollups.refresh_runs(connection, self._insert_events(connection, events, tally), tally, lock=True)
            self._tallied(connection, tally)

        def landed(connection: Connection) -> None | bool:
            # Events are inserted together: the first one stored means the lost commit landed.
            first = events[0]
            found = connection.execute(
                _EVENT_STORED, {"run_id": first.run_id, "name": first.name, "timestamp": first.timestamp}
            ).first()
            return True if found is not None else None

        self._writing("add events", body, landed)

    def get_run(self, run_id: str) -> RunRecord:
        """One run.

        Raises:
            RunNotFoundError: no such run.
            IncompatibleRecordError: the run was made under another contract major version.
        """
        return self._reading(f"read run {run_id!r}", lambda connection: self._run(connection, run_id))

    def resolve_run_id(self, prefix: str) -> str:
        """The id of the one run whose id is ``prefix`` or starts with it.

        Raises:
            RunNotFoundError: no run's id starts with ``prefix``.
            AmbiguousRunIdError: several do (and none is ``prefix`` itself).
        """

        def body(connection: Connection) -> list[str]:
            exact = connection.execute(select(runs.c.run_id).where(runs.c.run_id == prefix)).scalar()
            if exact is not None or not prefix:
                return [] if exact is None else [exact]
            # LIKE (wildcards escaped) lets PostgreSQL use an index; substr keeps the match exact where SQLite's
            # LIKE ignores case.
            query = (
                select(runs.c.run_id)
                .where(runs.c.run_id.startswith(prefix, autoescape=True))
                .where(func.substr(runs.c.run_id, 1, len(prefix)) == prefix)
                .order_by(runs.c.run_id)
                .limit(3)
            )
            return list(connection.execute(query).scalars())

        found = self._reading(f"find run {prefix!r}", body)
        if not found:
            raise RunNotFoundError(f"no run {prefix!r}")
        if len(found) > 1:
            more = ", ..." if len(found) > 2 else ""
            raise AmbiguousRunIdError(
                f"run id prefix {prefix!r} is ambiguous: it starts {found[0]}, {found[1]}{more}; give more characters"
            )
        return found[0]

    def short_run_ids(self, run_ids: Sequence[str], *, min_length: int = 8) -> dict[str, str]:
        """Each of ``run_ids`` shortened to its shortest prefix of at least ``min_length`` that no other run shares."""
        heads = sorted({run_id[:min_length] for run_id in run_ids})
        if not heads:
            return {}

        def body(connection: Connection) -> list[str]:
            # One read of the runs sharing a head with one of the ids: any other run is no rival for them.
            head = func.substr(runs.c.run_id, 1, min_length)
            query = select(runs.c.run_id).where(head.in_(bindparam("heads", expanding=True)))
            return list(connection.execute(query, {"heads": heads}).scalars())

        rivals: dict[str, list[str]] = {}
        for other in self._reading("read run ids", body):
            rivals.setdefault(other[:min_length], []).append(other)
        return {run_id: _shortest(run_id, rivals.get(run_id[:min_length], []), min_length) for run_id in run_ids}

    def read_run(self, run_id: str) -> tuple[RunRecord, list[TaskState], list[TransitionRecord]]:
        """A run with its task states and transitions, read in one transaction (one consistent snapshot).

        Raises:
            RunNotFoundError: no such run.
            IncompatibleRecordError: a record was made under another contract major version.
        """

        def body(connection: Connection) -> tuple[RunRecord, list[TaskState], list[TransitionRecord]]:
            run = self._run(connection, run_id)
            return run, self._tasks(connection, run_id), self._transitions(connection, run_id)

        return self._reading(f"read run {run_id!r}", body)

    def list_runs(
        self,
        *,
        limit: int | None = None,
        session_id: str | None = None,
        offset: int = 0,
        statuses: Sequence[RunStatus] | None = None,
    ) -> list[RunRecord]:
        """Runs, newest first (optionally only one session's, only in ``statuses``), skipping the first ``offset``.

        Raises:
            ValueError: a negative limit or offset.
            IncompatibleRecordError: a listed run was made under another contract major version.
        """
        if limit is not None and limit < 0:
            raise ValueError(f"limit must be >= 0, got {limit}")
        if offset < 0:
            raise ValueError(f"offset must be >= 0, got {offset}")
        query = select(runs).order_by(runs.c.created_at.desc(), runs.c.run_id.desc()).limit(limit)
        if offset:
            query = query.offset(offset)
        if session_id is not None:
            query = query.where(runs.c.session_id == session_id)
        if statuses is not None:
            query = query.where(runs.c.status.in_(list(statuses)))
        rows = self._reading("list runs", lambda connection: connection.execute(query).mappings().all())
        return [_rows.run_from(row) for row in rows]

    def get_tasks(self, run_id: str) -> list[TaskState]:
        """A run's task states with their attempts, in workflow order (empty for an unknown run).

        Raises:
            IncompatibleRecordError: a record was made under another contract major version.
        """
        return self._reading(f"read the tasks of run {run_id!r}", lambda connection: self._tasks(connection, run_id))

    def get_transitions(self, run_id: str) -> list[TransitionRecord]:
        """A run's transitions, in order (superseded ones included, marked)."""
        return self._reading(
            f"read the transitions of run {run_id!r}", lambda connection: self._transitions(connection, run_id)
        )

    def get_events(self, run_id: str) -> list[LoopEvent]:
        """A run's events, in the order they were stored."""
        query = select(events).where(events.c.run_id == run_id).order_by(events.c.id)
        rows = self._reading(
            f"read the events of run {run_id!r}", lambda connection: connection.execute(query).mappings().all()
        )
        return [_rows.event_from(row) for row in rows]

    # -- progress (see RunStore) ---------------------------------------------------------------------------------

    def save_progress(self, progress: TaskProgress) -> int:
        """Replace the progress of a task position of a run; the write's number in the run (0: no such run)."""
        detail = progress.model_dump(mode="json", include=set(_PROGRESS_DETAIL))
        detail["started_at"] = _rows.as_utc(progress.started_at).isoformat()  # as every stored time: in UTC

        def body(connection: Connection) -> int:
            if connection.execute(_RUN_EXISTS, {"run_id": progress.run_id}).first() is None:
                return 0
            seq = int(connection.execute(_LAST_PROGRESS, {"run_id": progress.run_id}).scalar_one()) + 1
            connection.execute(_DELETE_PROGRESS, {"run_id": progress.run_id, "b_position": progress.position})
            connection.execute(
                insert(task_progress),
                {
                    "run_id": progress.run_id,
                    "position": progress.position,
                    "task_id": progress.task_id,
                    "seq": seq,
                    "detail": detail,
                    "updated_at": _rows.as_utc(progress.updated_at),
                },
            )
            return seq

        # No landed check: a progress write applied twice is the same progress under a later number.
        return self._writing(f"record the progress of run {progress.run_id!r}", body)

    def progress_since(self, run_id: str, after: int = 0) -> list[TaskProgress]:
        """The run's task progress written after number ``after``, in ``seq`` order."""
        query = (
            select(task_progress)
            .where(task_progress.c.run_id == run_id, task_progress.c.seq > after)
            .order_by(task_progress.c.seq)
        )
        rows = self._reading(
            f"read the progress of run {run_id!r}", lambda connection: connection.execute(query).mappings().all()
        )
        return [
            TaskProgress.model_validate(
                {
                    **(row["detail"] if isinstance(row["detail"], dict) else {}),
                    "run_id": row["run_id"],
                    "task_id": row["task_id"],
                    "position": row["position"],
                    "seq": row["seq"],
                    "updated_at": _rows.as_utc(row["updated_at"]),
                }
            )
            for row in rows
        ]

    # -- read models (see RunStore): from the rollups (_rollup_reads), or with from_rows from the raw rows by the
    # reference SQL (_metrics_sql, per backend where plans differ), which the rollups must always equal ------------

    def loop_counts(
        self,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        workflow: str | None = None,
        by: Sequence[GroupKey] = (),
        from_rows: bool = False,
        experiment: str | None = None,
    ) -> GroupedCounts:
        """The loop metrics' counts per group of runs (see RunStore)."""
        return self._reading(
            "read the loop metrics",
            lambda connection: (_metrics_sql.loop_counts if from_rows else _rollup_reads.loop_counts)(
                connection, Span(since, until), workflow, by, experiment=experiment
            ),
        )

    def session_depths(
        self,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        workflow: str | None = None,
        from_rows: bool = False,
        experiment: str | None = None,
    ) -> dict[int, int]:
        """Runs per session -> sessions with that many, over the window (see RunStore)."""
        return self._reading(
            "read the loop metrics",
            lambda connection: (_metrics_sql.session_depths if from_rows else _rollup_reads.session_depths)(
                connection, Span(since, until), workflow, experiment
            ),
        )

    def event_counts(self, *, from_rows: bool = False) -> dict[str, int]:
        """Stored events per event name (see RunStore)."""
        return self._reading(
            "read the loop metrics",
            lambda connection: (_metrics_sql.event_counts if from_rows else _rollup_reads.event_counts)(connection),
        )

    def metric_totals(self, *, from_rows: bool = False) -> MetricTotals:
        """All history's counts at once (see RunStore): one read, one query of the all-time rollup rows."""
        if from_rows:
            return super().metric_totals(from_rows=True)
        return self._reading("read the loop metrics", _rollup_reads.totals)

    def task_failures(
        self,
        *,
        limit: int = 20,
        since: datetime | None = None,
        until: datetime | None = None,
        workflow: str | None = None,
    ) -> list[TaskFailure]:
        """The most recent failed or partial tasks, newest first (see RunStore)."""
        return self._reading(
            "read the failed tasks",
            lambda connection: _metrics_sql.task_failures(connection, limit, Span(since, until), workflow),
        )

    def unsupported_goals(
        self,
        *,
        limit: int = 10,
        since: datetime | None = None,
        until: datetime | None = None,
        workflow: str | None = None,
    ) -> list[UnsupportedGoal]:
        """The most recent runs whose first task's support was none, newest first (see RunStore)."""
        return self._reading(
            "read the unsupported goals",
            lambda connection: _metrics_sql.unsupported_goals(connection, limit, Span(since, until), workflow),
        )

    def repair_rankings(
        self, *, since: datetime | None = None, until: datetime | None = None, from_rows: bool = False
    ) -> Rankings:
        """Executions and in-run repairs per workflow and per task (see RunStore)."""
        return self._reading(
            "read the repairs",
            lambda connection: (_metrics_sql.repair_counts if from_rows else _rollup_reads.repair_counts)(
                connection, Span(since, until)
            ),
        )

    def fallback_rankings(
        self, *, since: datetime | None = None, until: datetime | None = None, from_rows: bool = False
    ) -> Rankings:
        """Current transitions and fallbacks per workflow and per source task (see RunStore)."""
        return self._reading(
            "read the fallbacks",
            lambda connection: (_metrics_sql.fallback_counts if from_rows else _rollup_reads.fallback_counts)(
                connection, Span(since, until)
            ),
        )

    def partial_counts(
        self, *, since: datetime | None = None, until: datetime | None = None, from_rows: bool = False
    ) -> dict[str, dict[str, int]]:
        """Partial executions and fallbacks after them, per workflow (see RunStore)."""
        return self._reading(
            "read the partial tasks",
            lambda connection: (_metrics_sql.partial_counts if from_rows else _rollup_reads.partial_counts)(
                connection, Span(since, until)
            ),
        )

    def workflow_names(self) -> set[str]:
        """The workflows of the stored runs."""
        return self._reading("list the workflows", lambda connection: _rollup_reads.workflow_names(connection))

    def rebuild_rollups(self) -> int:
        """Recount the rollups from the raw rows (see RunStore); the number of rollup rows written.

        JSON values an older MarsRAG stored with an escaped lone surrogate or NUL are repaired first, in the same
        transaction (see marsrag.store._repair): PostgreSQL's JSON operators, which the recount uses, fail on them.
        """

        def body(connection: Connection) -> int:
            _repair.repair_json(connection, _JSON_COLUMNS)
            return _rollups.rebuild(connection)

        return self._writing("rebuild the metric rollups", body)

    def knowledge(self) -> KnowledgeStore:
        """The knowledge base in this database (valid until the store is closed)."""
        return self._knowledge

    # -- end of read models ------------------------------------------------------------------------------------

    def close(self) -> None:
        """Release connections (idempotent)."""
        self._engine.dispose()

    def _run(self, connection: Connection, run_id: str) -> RunRecord:
        row = connection.execute(select(runs).where(runs.c.run_id == run_id)).mappings().first()
        if row is None:
            raise RunNotFoundError(f"no run {run_id!r}")
        return _rows.run_from(row)

    @staticmethod
    def _tasks(connection: Connection, run_id: str) -> list[TaskState]:
        task_rows = connection.execute(
            select(task_states)
            .where(task_states.c.run_id == run_id)
            .order_by(task_states.c.position, task_states.c.task_id)
        ).mappings()
        tasks = list(task_rows)
        attempt_rows = connection.execute(
            select(attempts).where(attempts.c.run_id == run_id).order_by(attempts.c.task_id, attempts.c.number)
        ).mappings()
        by_task = {task_id: list(group) for task_id, group in groupby(attempt_rows, key=lambda r: r["task_id"])}
        return [_rows.task_from(row, by_task.get(row["task_id"], ())) for row in tasks]

    @staticmethod
    def _transitions(connection: Connection, run_id: str) -> list[TransitionRecord]:
        query = select(transitions).where(transitions.c.run_id == run_id).order_by(transitions.c.id)
        return [_rows.transition_from(row) for row in connection.execute(query).mappings().all()]

    def _require_run(self, connection: Connection, run_id: str) -> None:
        if connection.execute(_RUN_EXISTS, {"run_id": run_id}).first() is None:
            raise RunNotFoundError(f"no run {run_id!r}")

    def _insert_events(
        self, connection: Connection, loop_events: Sequence[LoopEvent], tally: Tally, cursor: Cursor | None = None
    ) -> set[str]:
        """Insert events and count them; the runs they say were followed (whose facts changed).

        Ratings among them are counted first (each run's latest per part), the rated runs' rows locked with the
        followed ones, in one order, before the insert (see marsrag.store._rollups.feedback_changed).
        """
        if not loop_events:
            return set()
        rows = _rows.event_rows(loop_events)
        if any(row["name"] == _metrics_sql.FEEDBACK_EVENT for row in rows):
            _rollups.lock_runs(connection, _rollups.rated_runs(rows) | _rollups.followed_runs(rows))
            _rollups.feedback_changed(connection, rows, tally)
        if cursor is None:
            connection.execute(_INSERT_EVENTS, rows)
        else:
            cursor.many(self._prepared("events", _INSERT_EVENTS, tuple(rows[0])), rows)
        tally.events(rows)
        return _rollups.followed_runs(rows)

    def task_outcomes(self, run_ids: Sequence[str]) -> dict[str, dict[str, int]]:
        """How the tasks of each run ended: per run id, the count of tasks in each validation status."""
        ids = list(dict.fromkeys(run_ids))
        outcomes: dict[str, dict[str, int]] = {run_id: dict.fromkeys(VALIDATION_STATUSES, 0) for run_id in ids}

        def body(connection: Connection) -> None:
            for start in range(0, len(ids), _OUTCOME_BATCH):
                batch = ids[start : start + _OUTCOME_BATCH]
                for run_id, status, count in connection.execute(_OUTCOMES, {"run_ids": batch}):
                    outcomes[run_id][status] = count

        self._reading("count the task outcomes of runs", body)
        return outcomes


def _shortest(run_id: str, others: Sequence[str], min_length: int) -> str:
    """The shortest prefix of ``run_id`` (at least ``min_length`` long) that starts none of ``others``."""
    length = min_length
    while length < len(run_id) and any(o != run_id and o.startswith(run_id[:length]) for o in others):
        length += 1
    return run_id[:length]
