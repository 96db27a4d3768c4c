"""The loop metrics benchmark's store: a realistic history of runs, written in bulk (``seed``).

Three workflows, sessions of 1-4 runs spread over the last 60 days, each run with three narrative task states
of 1-2 attempts (15% need the in-run repair; a few partial ones get an operator repair or a regenerate
afterwards, which supersedes the task's outgoing transition), two transitions (fallback after a partial task in
hard mode), a contract event per attempt, a planned event per transition (and fallback_used),
``loop.action.followed`` for most runs that started the next one of their session, and ``loop.ui.rendered``
(one per task) for the 30% of runs someone looked at. A run fails when a task ends failed; 6% of runs route to
another workflow, which the session's next run then usually runs; 2% ran in ``loop_mode: none`` (skipped
tasks). Records are built as the runner builds them and mapped to rows by the store's own builders
(``marsrag.store._rows``), then inserted with one executemany per table, 5,000 runs per transaction; then
statistics (see :func:`_gather_statistics`). The bulk inserts bypass the store's write path, which is what
keeps the metric rollups, so the rollups are then recounted from the raw rows (``store.rebuild_rollups()``,
what ``marsrag metrics --rebuild`` and migration 0010's backfill do; timed on its own), the rebuilt tables get
fresh statistics, and the rollup reads are checked against the raw rows' reference (:func:`_check_rollups`).
"""

from __future__ import annotations

import random
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, insert

from bench._samples import CONTENT
from bench._web_seed import RowBatch
from marsrag.contract import LOOP_CONTRACT_VERSION, ContractIssue
from marsrag.experiments.assignment import assign_arm
from marsrag.state import (
    FALLBACK_HOOK,
    AttemptRecord,
    LoopEvent,
    LoopFields,
    Retrieval,
    Routing,
    RunRecord,
    TaskState,
    TransitionRecord,
    Validation,
    utcnow,
)
from marsrag.store import GroupKey, LoopCounts, _rows, open_store
from marsrag.store.sql import SqlRunStore
from marsrag.tasks.config import ExperimentConfig

EVENTS = 1_000_000
DAYS = 60
PER_TRANSACTION = 5_000
RAW_TABLES = ("runs", "task_states", "attempts", "transitions", "events")
#: The groupings whose rollup reads are checked against the raw rows before anything is timed.
CHECKED: tuple[tuple[GroupKey, ...], ...] = ((), ("workflow", "day"), ("workflow", "arm"))

#: name, share of new sessions, loop_mode, the three tasks (task id, agent).
WORKFLOWS = (
    ("support_answer", 0.60, "hard", (("diagnose", "analyst"), ("recommend", "advisor"), ("plan", "planner"))),
    ("incident_review", 0.25, "hard", (("timeline", "historian"), ("causes", "analyst"), ("actions", "planner"))),
    ("onboarding_guide", 0.15, "soft", (("orient", "guide"), ("practice", "coach"), ("check", "reviewer"))),
)
GOAL = "Checkout latency breached its SLO in three regions right after cache nodes restarted"
SESSION_LENGTHS = ((1, 0.45), (2, 0.30), (3, 0.15), (4, 0.10))
PASSAGES = (
    {"chunk_id": 11, "source": "runbooks/cache-prewarm.md#Steps", "heading": "Steps", "score": 7.5,
     "text": "Pre-warm each cache node from the latest snapshot before it rejoins."},
    {"chunk_id": 23, "source": "incidents/2025-03-14-checkout.md#Timeline", "heading": "Timeline", "score": 6.5,
     "text": "p95 rose from 180 ms to 900 ms as twelve nodes restarted."},
)  # fmt: skip
GRIP_MISSING = [ContractIssue(field="grip", code="missing", message="grip is missing")]
REINFORCE_MISSING = [ContractIssue(field="reinforce", code="missing", message="reinforce is missing")]
LOOP_MISSING = [ContractIssue(field="loop", code="missing", message="loop is missing")]


@dataclass
class Seeded:
    """What was seeded and how long it took: migration, inserts and statistics; the rollups' rebuild apart."""

    runs: int
    events: int
    #: Rows inserted into the five raw tables (runs, task states, attempts, transitions, events).
    rows: int
    seconds: float
    rebuild_seconds: float
    rollup_rows: int

    def notes(self, name: str) -> list[str]:
        """The seeding and rebuild notes of one store."""
        return [
            f"{name}: seeded {self.events:,} events of {self.runs:,} runs in {self.seconds:.0f} s (migration, bulk "
            "inserts, statistics)",
            f"{name}: rollups rebuilt from {self.rows:,} rows in {self.rebuild_seconds:.1f} s ({self.rollup_rows:,} "
            "rollup rows; the bulk inserts bypass the write path that keeps them); their reads equal the raw rows'",
        ]


def seed(
    url: str,
    total_events: int = EVENTS,
    *,
    seed: int = 11,
    experiment: ExperimentConfig | None = None,
    sessions: int | None = None,
) -> Seeded:
    """Migrate the store at ``url`` (by opening it), fill it with ``total_events`` events' worth of history in
    bulk, rebuild its rollups and check their reads against the raw rows.

    With ``experiment``, the sessions that start in the first workflow are assigned its arms by the runner's
    hash (:func:`marsrag.experiments.assignment.assign_arm`); their runs in that workflow carry the experiment,
    its arm and the arm's loop mode, and one in ten gets a reader's rating of its answer. With ``sessions``,
    seeding stops once that many sessions of the experiment are stored (``total_events`` is then a cap).

    Raises:
        RuntimeError: a rollup read differs from the raw rows' reference.
    """
    start = time.perf_counter()
    rng = random.Random(seed)
    now = utcnow()
    store = open_store(url)
    try:
        assert isinstance(store, SqlRunStore)
        written = run_count = rows = 0
        batch, in_batch = RowBatch(), 0
        assigned = 0
        while written < total_events and (sessions is None or assigned < sessions):
            session_id = uuid.UUID(int=rng.getrandbits(128), version=4).hex
            length = rng.choices([n for n, _ in SESSION_LENGTHS], [w for _, w in SESSION_LENGTHS])[0]
            at = now - timedelta(seconds=rng.uniform(4 * 3600, DAYS * 86400))
            workflow = rng.choices(WORKFLOWS, [w[1] for w in WORKFLOWS])[0]
            arm: tuple[str, str, str] | None = None
            if experiment is not None and workflow is WORKFLOWS[0]:
                name = assign_arm(experiment, session_id)
                arm = (experiment.name, name, experiment.arms[name].loop_mode)
                assigned += 1
            for position in range(length):
                last = position == length - 1
                in_arm = arm if workflow is WORKFLOWS[0] else None
                run_events, routed = _add_run(batch, rng, session_id, workflow, at, followed=not last, arm=in_arm)
                room = total_events - written
                if len(run_events) > room:  # the last run: keep the total exact
                    run_events = run_events[:room]
                batch.events.extend(_rows.event_rows(run_events))
                written += len(run_events)
                run_count += 1
                in_batch += 1
                if written >= total_events:
                    break
                at += timedelta(minutes=rng.uniform(3, 40))
                if routed is not None and rng.random() < 0.7:
                    workflow = routed
            done = written >= total_events or (sessions is not None and assigned >= sessions)
            if in_batch >= PER_TRANSACTION or done:
                rows += _insert(store.engine, batch)
                batch, in_batch = RowBatch(), 0
        # The rebuild plans its recount with fresh statistics, as migration 0010's backfill does on a live store.
        _gather_statistics(store.engine, RAW_TABLES)
        seconds = time.perf_counter() - start
        rebuild_start = time.perf_counter()
        rollup_rows = store.rebuild_rollups()
        rebuild_seconds = time.perf_counter() - rebuild_start
        statistics_start = time.perf_counter()
        _gather_statistics(store.engine, ("runs", "rollups"))  # the rebuild rewrote every run's metrics_code
        seconds += time.perf_counter() - statistics_start
        _check_rollups(store)
    finally:
        store.close()
    return Seeded(run_count, written, rows, seconds, rebuild_seconds, rollup_rows)


def _check_rollups(store: SqlRunStore) -> None:
    """The rollup reads the figures time equal the raw rows' reference over all history.

    Raises:
        RuntimeError: they differ.
    """
    for by in CHECKED:
        kept, counted = (
            {key: counts for key, counts in store.loop_counts(by=by, from_rows=raw).items() if counts != LoopCounts()}
            for raw in (False, True)
        )
        if kept != counted:
            keys = sorted({key for key in kept.keys() | counted.keys() if kept.get(key) != counted.get(key)}, key=repr)
            raise RuntimeError(
                f"the rollups differ from the raw rows in loop_counts(by={by!r}) for {len(keys)} groups, first "
                f"{keys[0]!r}: rollups {kept.get(keys[0])}, raw rows {counted.get(keys[0])}"
            )
    kept_events, counted_events = store.event_counts(), store.event_counts(from_rows=True)
    if kept_events != counted_events:
        raise RuntimeError(f"the rollups count the events {kept_events!r}, the raw rows {counted_events!r}")


def _gather_statistics(engine: Engine, tables: tuple[str, ...]) -> None:
    """Fresh planner statistics of ``tables``, as a live server keeps them.

    PostgreSQL gets ``VACUUM (ANALYZE)``: besides the statistics, the vacuum sets the visibility map that
    index-only scans rely on, which autovacuum does soon after a bulk insert (or the rebuild's rewrite of every
    run) on a live server (and would otherwise do mid-measurement). SQLite gets ``ANALYZE``.
    """
    if engine.dialect.name == "postgresql":
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.exec_driver_sql(f"VACUUM (ANALYZE) {', '.join(tables)}")
    else:
        with engine.begin() as connection:
            for table in tables:
                connection.exec_driver_sql(f"ANALYZE {table}")


def _insert(engine: Engine, batch: RowBatch) -> int:
    """Insert the batch in one transaction; the number of rows."""
    inserted = 0
    with engine.begin() as connection:
        for table, rows in batch.tables():
            if rows:
                connection.execute(insert(table), rows)
                inserted += len(rows)
    return inserted


def _add_run(
    batch: RowBatch,
    rng: random.Random,
    session_id: str,
    workflow: tuple[Any, ...],
    created: datetime,
    *,
    followed: bool,
    arm: tuple[str, str, str] | None = None,
) -> tuple[list[LoopEvent], tuple[Any, ...] | None]:
    """Add one run's rows but its events (returned), and the workflow its final task routed to, if any.

    ``arm`` is the session's (experiment, arm, loop mode), when it takes part in one.
    """
    name, _, loop_mode, tasks = workflow
    run_id = uuid.UUID(int=rng.getrandbits(128), version=4).hex
    if arm is not None:
        loop_mode = arm[2]
    elif rng.random() < 0.02:
        loop_mode = "none"  # started without the contract: every task is skipped
    contract = loop_mode != "none"
    # Now and then the final loop routes to another workflow (support escalates to an incident review...).
    routed = rng.choice([w for w in WORKFLOWS if w[0] != name]) if contract and rng.random() < 0.06 else None
    states: list[TaskState] = []
    loop_events: list[LoopEvent] = []
    failed = False
    for position, (task_id, agent) in enumerate(tasks):
        moment = created + timedelta(seconds=20 * (position + 1))
        final = position == len(tasks) - 1
        state, before_operator = _task(
            rng, run_id, task_id, agent, position, loop_mode, moment, routed if final else None
        )
        states.append(state)
        for attempt in state.attempts:
            if attempt.status != "skipped":
                event = "loop.contract.validated" if attempt.status == "valid" else "loop.contract.failed"
                loop_events.append(_event(event, state, attempt.created_at, validation_status=attempt.status))
        if state.validation.status == "failed":
            failed = True  # the contract stops the run
            break
        if final or not contract:
            continue
        target = tasks[position + 1][0]
        at = moment + timedelta(milliseconds=5)
        mode = _mode(before_operator or state.validation.status, state, loop_mode)
        planned = [(mode, before_operator is not None)]
        if before_operator is not None:  # the operator action re-planned the handoff; the old row is superseded
            planned.append(("repair", False))
        for transition_mode, superseded in planned:
            transition = TransitionRecord(
                run_id=run_id,
                transition_source_task_id=task_id,
                transition_target_task_id=target,
                transition_mode=transition_mode,  # type: ignore[arg-type]
                transition_reason=f"{task_id} ended {state.validation.status}",
                hook=state.loop_output.loop or FALLBACK_HOOK,
                superseded=superseded,
                created_at=at,
            )
            batch.transitions.append(_rows.transition_row(transition))
            loop_events.append(_event("loop.transition.planned", state, at, target, transition_mode=transition_mode))
            if transition_mode == "fallback":
                loop_events.append(
                    _event("loop.transition.fallback_used", state, at, target, transition_mode=transition_mode)
                )
    run = RunRecord(
        run_id=run_id,
        session_id=session_id,
        goal=f"{GOAL} (case {run_id[:8]})",
        workflow=name,
        loop_mode=loop_mode,
        status="failed" if failed else "completed",
        status_reason=f"task {states[-1].task_id!r} failed the Loop Contract after its repair" if failed else None,
        summary=f"{len(states)} tasks; last {states[-1].validation.status}",
        created_at=created,
        updated_at=created + timedelta(seconds=80),
        owner=f"bench-host:{1000 + rng.randrange(50)}",
        experiment=arm[0] if arm else None,
        arm=arm[1] if arm else None,
    )
    batch.runs.append(_rows.run_row(run))
    for state in states:
        batch.tasks.append(_rows.task_row(state))
        batch.attempts.extend(_rows.attempt_rows(state))
    last = states[-1]
    if followed and contract and not failed and rng.random() < 0.8:  # the session's next run came from this one
        mode = "direct" if last.validation.status == "valid" else "fallback"
        at = run.updated_at + timedelta(minutes=2)
        loop_events.append(_event("loop.action.followed", last, at, transition_mode=mode))
    if rng.random() < 0.3:  # someone opened the run page: one rendered event per task shown
        at = run.updated_at + timedelta(minutes=1)
        loop_events.extend(_event("loop.ui.rendered", state, at) for state in states)
    if arm is not None and contract and rng.random() < 0.1:  # a reader rated the answer
        at = run.updated_at + timedelta(minutes=3)
        rating = {"on": "answer", "rating": "up" if rng.random() < 0.7 else "down", "comment": None}
        loop_events.append(_event("loop.feedback.recorded", last, at, detail=rating))
    return loop_events, routed


def _task(
    rng: random.Random,
    run_id: str,
    task_id: str,
    agent: str,
    position: int,
    loop_mode: str,
    moment: datetime,
    routed: tuple[Any, ...] | None,
) -> tuple[TaskState, str | None]:
    """A task state with its attempts, and its status before an operator action (None without one)."""
    fields = LoopFields(**CONTENT)
    if loop_mode == "none":
        history = [("skipped", "answer", [])]
        fields = LoopFields()
    else:
        first = rng.choices(("valid", "partial", "failed"), (0.85, 0.07, 0.08))[0]
        history = [(first, "answer", _errors(first))]
        if first != "valid":
            repaired = rng.choices(("valid", "partial", "failed"), (0.75, 0.15, 0.10))[0]
            history.append((repaired, "repair", _errors(repaired)))
    before_operator = None
    if history[-1][0] == "partial" and rng.random() < 0.3:  # an operator fixed it afterwards
        before_operator = "partial"
        history.append(("valid", rng.choice(("operator_repair", "operator_repair", "regenerate")), []))
    status, _, errors = history[-1]
    if status == "partial":
        fields.reinforce = None
    elif status == "failed":
        fields.loop = None
    raw = "\n".join(f"{key.upper()}: {value}" for key, value in fields.model_dump().items() if value)
    return (
        TaskState(
            run_id=run_id,
            task_id=task_id,
            position=position,
            agent=agent,
            loop_contract_version=LOOP_CONTRACT_VERSION,
            loop_mode=loop_mode,
            validation=Validation(status=status, errors=errors),  # type: ignore[arg-type]
            loop_output=fields,
            routing=Routing(next_workflow=routed[0]) if routed else Routing(next_agent=agent),
            attempts=[
                AttemptRecord(
                    number=number,
                    raw=raw if number == len(history) else "HOOK: ...",
                    status=attempt_status,  # type: ignore[arg-type]
                    errors=attempt_errors,
                    kind=kind,  # type: ignore[arg-type]
                    created_at=moment - timedelta(seconds=3 * (len(history) - number)),
                )
                for number, (attempt_status, kind, attempt_errors) in enumerate(history, 1)
            ],
            hook_source="goal" if position == 0 else "direct",
            retrieval=Retrieval(query=fields.hook or "", results=list(PASSAGES)) if loop_mode != "none" else None,
            rendered=fields.render(),
            created_at=moment,
        ),
        before_operator,
    )


def _errors(status: str) -> list[ContractIssue]:
    return {"valid": [], "partial": REINFORCE_MISSING, "failed": GRIP_MISSING + LOOP_MISSING}[status]


def _mode(status: str, state: TaskState, loop_mode: str) -> str:
    """The transition mode after a task that ended ``status``: the planner's rule, in short."""
    if status == "valid":
        return "direct" if len(state.attempts) == 1 else "repair"
    return "direct" if loop_mode == "soft" and state.loop_output.loop else "fallback"


def _event(name: str, state: TaskState, at: datetime, task_id: str | None = None, **fields: Any) -> LoopEvent:
    return LoopEvent(
        name=name,  # type: ignore[arg-type]
        run_id=state.run_id,
        task_id=task_id or state.task_id,
        loop_contract_version=LOOP_CONTRACT_VERSION,
        loop_mode=state.loop_mode,
        timestamp=at,
        **fields,
    )
