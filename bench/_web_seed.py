"""A store of realistic runs for the web benchmark, written in bulk, and a throwaway PostgreSQL schema.

Each run is what the sample ``support_answer`` workflow stores (diagnose -> recommend -> plan, loop mode hard):
three task states with 1-2 attempts, retrieval results, the Loop Contract fields of ``bench._samples`` citing them
two transitions the planner derives from them, one event per attempt and per transition, and, for two runs of
each three-run session, the ``loop.action.followed`` that started the next one (about 6 events per run). One
run in five has a repaired, partial or failed task, so every status badge and transition mode appears.
Records are built as the runner builds them and mapped to rows by the store's own builders
(``marsrag.store._rows``), then inserted with one executemany per table, 1,000 runs per transaction.
"""

from __future__ import annotations

import os
import random
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from sqlalchemy import Table, create_engine, insert
from sqlalchemy.exc import OperationalError

from bench._samples import CONTENT
from marsrag.chain.citations import resolve
from marsrag.chain.planner import plan_transition
from marsrag.contract import LOOP_CONTRACT_VERSION, ContractIssue
from marsrag.state import (
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
from marsrag.store import _rows, open_store
from marsrag.store.schema import attempts, events, runs, task_states, transitions
from marsrag.store.sql import SqlRunStore
from marsrag.views.summary import summarize

POSTGRES = os.environ.get("MARSRAG_TEST_POSTGRES", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
TASKS = (("diagnose", "analyst"), ("recommend", "advisor"), ("plan", "planner"))
GOALS = (
    "Checkout latency breached its SLO in three regions right after cache nodes restarted",
    "Search results went stale for an hour after the catalog reindex",
    "Payment retries doubled the load on the gateway during the provider outage",
    "The order queue backed up every night at the batch export",
)
PASSAGES = (
    ("runbooks/cache-prewarm.md", "Steps", "Pre-warm each cache node from the latest snapshot before it rejoins."),
    ("incidents/2025-03-14-checkout.md", "Timeline", "p95 rose from 180 ms to 900 ms as twelve nodes restarted."),
    ("practices/latency-percentiles.md", "Why p95", "Averages hide the slow tail that users actually feel."),
    ("architecture/cache-tier.md", "Failure modes", "A cold node serves every request from the origin for minutes."),
)


@dataclass
class Seeded:
    """The ids of the seeded runs and how long seeding took (migration, inserts and statistics)."""

    run_ids: list[str]
    seconds: float


@dataclass
class RowBatch:
    """Rows for the store's tables, gathered for one bulk insert (shared by the seeding benchmarks)."""

    runs: list[dict[str, Any]] = field(default_factory=list)
    tasks: list[dict[str, Any]] = field(default_factory=list)
    attempts: list[dict[str, Any]] = field(default_factory=list)
    transitions: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)

    def tables(self) -> list[tuple[Table, list[dict[str, Any]]]]:
        """Each table with its rows, parents before children."""
        return [
            (runs, self.runs),
            (task_states, self.tasks),
            (attempts, self.attempts),
            (transitions, self.transitions),
            (events, self.events),
        ]


def seed(url: str, count: int, *, per_transaction: int = 1000, seed: int = 7) -> Seeded:
    """Migrate the store at ``url`` (by opening it) and fill it with ``count`` runs; close it."""
    start = time.perf_counter()
    rng = random.Random(seed)
    store = open_store(url)
    try:
        assert isinstance(store, SqlRunStore)
        run_ids = []
        oldest = utcnow() - timedelta(minutes=15 * count)  # a run every 15 minutes, the newest just now
        for first in range(0, count, per_transaction):
            batch = RowBatch()
            for number in range(first, min(first + per_transaction, count)):
                run_ids.append(_add_run(batch, number, rng, oldest + timedelta(minutes=15 * number)))
            with store.engine.begin() as connection:
                for table, rows in batch.tables():
                    connection.execute(insert(table), rows)
        # The bulk inserts bypass the writes that keep the metric rollups: recount them, as a migration would.
        store.rebuild_rollups()
        if store.engine.dialect.name == "postgresql":
            # Autovacuum would analyze the fresh tables within a minute, possibly mid-measurement: do it now.
            with store.engine.begin() as connection:
                connection.exec_driver_sql("ANALYZE")
    finally:
        store.close()
    return Seeded(run_ids, time.perf_counter() - start)


def _add_run(batch: RowBatch, number: int, rng: random.Random, created: Any) -> str:
    """Add one run's rows to ``batch``; returns its id."""
    run_id = uuid.UUID(int=rng.getrandbits(128), version=4).hex
    # Every third run follows the one before it, in the same session (as `marsrag follow` does).
    session_id = uuid.UUID(int=(number // 3) + 1, version=4).hex
    variant = number % 20  # 0-13 clean, 14-16 a repaired task, 17-18 a partial recommend, 19 a failed plan
    states: list[TaskState] = []
    for position, (task_id, agent) in enumerate(TASKS):
        moment = created + timedelta(seconds=20 * (position + 1))
        repaired = variant in (14, 15, 16) and position == variant - 14
        partial = variant in (17, 18) and task_id == "recommend"
        failed = variant == 19 and task_id == "plan"
        states.append(_task(run_id, task_id, agent, position, moment, states, repaired, partial, failed))
    record = RunRecord(
        run_id=run_id,
        session_id=session_id,
        goal=f"{GOALS[number % len(GOALS)]} (case {number})",
        workflow="support_answer",
        loop_mode="hard",
        status="failed" if variant == 19 else "completed",
        status_reason="task 'plan' failed the Loop Contract after its repair" if variant == 19 else None,
        summary=summarize(states),
        created_at=created,
        updated_at=created + timedelta(seconds=70),
        owner=f"bench-host:{1000 + number % 50}",
    )
    batch.runs.append(_rows.run_row(record))
    loop_events: list[LoopEvent] = []
    for state in states:
        batch.tasks.append(_rows.task_row(state))
        batch.attempts.extend(_rows.attempt_rows(state))
        for attempt in state.attempts:
            name = "loop.contract.validated" if attempt.status == "valid" else "loop.contract.failed"
            loop_events.append(_event(name, state, attempt.created_at, validation_status=attempt.status))
        if state.position + 1 < len(TASKS):
            target = TASKS[state.position + 1][0]
            planned = plan_transition(state, target)
            at = state.created_at + timedelta(milliseconds=5)
            transition = TransitionRecord(
                run_id=run_id,
                transition_source_task_id=state.task_id,
                transition_target_task_id=target,
                transition_mode=planned.mode,
                transition_reason=planned.reason,
                hook=planned.hook,
                created_at=at,
            )
            batch.transitions.append(_rows.transition_row(transition))
            loop_events.append(_event("loop.transition.planned", state, at, target, transition_mode=planned.mode))
            if planned.mode == "fallback":
                loop_events.append(
                    _event("loop.transition.fallback_used", state, at, target, transition_mode=planned.mode)
                )
    if number % 3 != 2:  # the next run of the session was started from this one's final loop
        last = states[-1]
        mode = "direct" if last.validation.status == "valid" else "fallback"
        at = record.updated_at + timedelta(minutes=5)
        loop_events.append(
            _event("loop.action.followed", last, at, validation_status=last.validation.status, transition_mode=mode)
        )
    batch.events.extend(_rows.event_rows(loop_events))
    return run_id


def _task(
    run_id: str,
    task_id: str,
    agent: str,
    position: int,
    moment: Any,
    prior: list[TaskState],
    repaired: bool,
    partial: bool,
    failed: bool,
) -> TaskState:
    # Cited as the composer cites: the page renders markers as links and a sources panel per task.
    fields = LoopFields(
        **{
            **CONTENT,
            "grip": CONTENT["grip"].rstrip(".") + " [1].",
            "reinforce": CONTENT["reinforce"].rstrip(".") + " [2][3].",
        }
    )
    hook_source = "goal"
    if prior:
        planned = plan_transition(prior[-1])
        fields.hook, hook_source = planned.hook, planned.mode
    errors: list[ContractIssue] = []
    status = "valid"
    if partial:
        fields.reinforce, status = None, "partial"
        errors = [ContractIssue(field="reinforce", code="missing", message="reinforce is missing")]
    elif failed:
        fields.payoff, fields.loop, status = None, None, "failed"
        errors = [
            ContractIssue(field="payoff", code="missing", message="payoff is missing"),
            ContractIssue(field="loop", code="missing", message="loop is missing"),
        ]
    first_errors = [ContractIssue(field="grip", code="missing", message="grip is missing")]
    history = [(status, errors)]
    if repaired or partial or failed:
        history.insert(0, ("failed", first_errors))
    raw = "\n".join(f"{name.upper()}: {value}" for name, value in fields.model_dump().items() if value)
    results = [
        {
            "chunk_id": 11 * n + position,
            "source": f"{path}#{heading}",
            "heading": heading,
            "text": text,
            "score": round(7.5 - n, 2),
        }
        for n, (path, heading, text) in enumerate(PASSAGES[position : position + 3])
    ]
    citations, warnings = resolve(fields.model_dump(), results)
    return TaskState(
        run_id=run_id,
        task_id=task_id,
        position=position,
        agent=agent,
        loop_contract_version=LOOP_CONTRACT_VERSION,
        loop_mode="hard",
        validation=Validation(status=status, errors=errors),
        loop_output=fields,
        routing=Routing(next_agent=TASKS[(position + 1) % len(TASKS)][1]) if fields.loop else Routing(),
        attempts=[
            AttemptRecord(
                number=number,
                raw=raw if number == len(history) else "HOOK: ...",
                status=attempt_status,
                errors=attempt_errors,
                created_at=moment - timedelta(seconds=3 * (len(history) - number)),
            )
            for number, (attempt_status, attempt_errors) in enumerate(history, 1)
        ],
        hook_source=hook_source,
        retrieval=Retrieval(query=fields.hook or "", results=results),
        citations=citations,
        citation_warnings=warnings,
        rendered=fields.render(),
        created_at=moment,
    )


def _event(name: str, state: TaskState, at: Any, task_id: str | None = None, **fields: Any) -> LoopEvent:
    return LoopEvent(
        name=name,  # type: ignore[arg-type]
        run_id=state.run_id,
        task_id=task_id or state.task_id,
        loop_contract_version=LOOP_CONTRACT_VERSION,
        loop_mode="hard",
        timestamp=at,
        **fields,
    )


@contextmanager
def postgres_schema() -> Iterator[tuple[str | None, str]]:
    """``(url, "")`` of a fresh schema on the local PostgreSQL server, dropped afterwards; ``(None, why)`` if down."""
    engine = create_engine(POSTGRES, connect_args={"connect_timeout": 5})
    schema = f"marsrag_bench_{uuid.uuid4().hex[:12]}"
    try:
        with engine.begin() as connection:
            connection.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
    except OperationalError as error:
        engine.dispose()
        yield None, f"PostgreSQL at {POSTGRES} is unreachable ({str(error.orig).strip().splitlines()[0]})"
        return
    try:
        yield f"{POSTGRES}?options=-csearch_path%3D{schema}", ""
    finally:
        with engine.begin() as connection:
            connection.exec_driver_sql(f'DROP SCHEMA "{schema}" CASCADE')
        engine.dispose()
