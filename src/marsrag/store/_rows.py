"""Records to rows and back: the one place that knows how the pydantic records map onto the tables.

Reading checks the contract major version before building a record, so a record written under another
major version surfaces as :class:`IncompatibleRecordError`, never as a validation crash.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from pydantic import ValidationError

from marsrag.contract import LOOP_CONTRACT_VERSION, ContractIssue, parse_version
from marsrag.errors import ContractVersionError, IncompatibleRecordError, StoreError
from marsrag.state import (
    LoopEvent,
    LoopFields,
    Retrieval,
    Routing,
    RunRecord,
    TaskState,
    TransitionRecord,
)

Row = Mapping[Any, Any]

Record = TypeVar("Record", RunRecord, TaskState, TransitionRecord, LoopEvent)

_RUN_COLUMNS = tuple(RunRecord.model_fields)
_EVENT_COLUMNS = tuple(LoopEvent.model_fields)
_RUNNING_MAJOR = parse_version(LOOP_CONTRACT_VERSION).major

#: The attempt's LLM call fields (migration 0006): one column each, of the same name.
ATTEMPT_CALL_FIELDS = (
    "model",
    "endpoint",
    "structured_output",
    "structured_output_refused",
    "latency_ms",
    "prompt_tokens",
    "completion_tokens",
    "finish_reason",
)


def as_utc(moment: datetime) -> datetime:
    """``moment`` timezone-aware in UTC; naive means UTC.

    Both directions use it: a datetime is stored in UTC (SQLite keeps no offset, so every value must share
    one), and a stored one comes back naive from SQLite.
    """
    zone = moment.tzinfo
    if zone is UTC:  # most moments (utcnow's): already as wanted, and a datetime is immutable
        return moment
    return moment.replace(tzinfo=UTC) if zone is None else moment.astimezone(UTC)


def check_major(version: str, what: str) -> None:
    """Refuse a record made under another contract major version than the running one.

    Raises:
        IncompatibleRecordError: another major version, or not a version at all.
    """
    try:
        major = parse_version(version).major
    except ContractVersionError:
        raise IncompatibleRecordError(
            f"{what} has loop_contract_version {version!r}, which is not a semantic version; this MarsRAG "
            f"reads records of contract {LOOP_CONTRACT_VERSION} (major {_RUNNING_MAJOR})"
        ) from None
    if major != _RUNNING_MAJOR:
        raise IncompatibleRecordError(
            f"{what} was stored under loop contract {version} (major {major}); this MarsRAG implements contract "
            f"{LOOP_CONTRACT_VERSION} and reads major {_RUNNING_MAJOR} records only: open it with a MarsRAG "
            f"that implements contract {major}.x"
        )


def _issues(errors: Iterable[ContractIssue]) -> list[dict[str, Any]]:
    return [issue.to_dict() for issue in errors]


def run_row(run: RunRecord) -> dict[str, Any]:
    """The ``runs`` row of a run."""
    row = {name: getattr(run, name) for name in _RUN_COLUMNS}
    row["created_at"], row["updated_at"] = as_utc(run.created_at), as_utc(run.updated_at)
    return row


def task_row(state: TaskState) -> dict[str, Any]:
    """The ``task_states`` row of a task state (its attempts go to :func:`attempt_rows`)."""
    fields, routing, retrieval = state.loop_output, state.routing, state.retrieval
    return {
        "run_id": state.run_id,
        "task_id": state.task_id,
        "position": state.position,
        "agent": state.agent,
        "loop_contract_version": state.loop_contract_version,
        "loop_mode": state.loop_mode,
        "validation_status": state.validation.status,
        "validation_errors": _issues(state.validation.errors),
        "hook": fields.hook,
        "grip": fields.grip,
        "payoff": fields.payoff,
        "reinforce": fields.reinforce,
        "loop": fields.loop,
        "rendered": state.rendered,
        "hook_source": state.hook_source,
        "routing_next_agent": routing.next_agent,
        "routing_next_tool": routing.next_tool,
        "routing_next_workflow": routing.next_workflow,
        "retrieval_query": retrieval.query if retrieval else None,
        "retrieval_results": retrieval.results if retrieval else None,
        "support_level": retrieval.support.level if retrieval and retrieval.support else None,
        "support": retrieval.support.model_dump(mode="json") if retrieval and retrieval.support else None,
        "retrievers": list(retrieval.retrievers) if retrieval else None,
        "retrieval_skipped": retrieval.skipped if retrieval else None,
        "citations": [citation.model_dump(mode="json") for citation in state.citations],
        "citation_warnings": list(state.citation_warnings),
        "created_at": as_utc(state.created_at),
    }


def attempt_rows(state: TaskState) -> list[dict[str, Any]]:
    """The ``attempts`` rows of a task state."""
    return [
        {
            "run_id": state.run_id,
            "task_id": state.task_id,
            "number": attempt.number,
            "raw": attempt.raw,
            "status": attempt.status,
            "errors": _issues(attempt.errors),
            "kind": attempt.kind,
            "created_at": as_utc(attempt.created_at),
            **{name: getattr(attempt, name) for name in ATTEMPT_CALL_FIELDS},
        }
        for attempt in state.attempts
    ]


def transition_row(transition: TransitionRecord) -> dict[str, Any]:
    """The ``transitions`` row of a transition."""
    return {
        "run_id": transition.run_id,
        "source_task_id": transition.transition_source_task_id,
        "target_task_id": transition.transition_target_task_id,
        "mode": transition.transition_mode,
        "reason": transition.transition_reason,
        "hook": transition.hook,
        "superseded": transition.superseded,
        "created_at": as_utc(transition.created_at),
    }


def event_rows(events: Sequence[LoopEvent]) -> list[dict[str, Any]]:
    """The ``events`` rows of events, in order."""
    rows = []
    for loop_event in events:
        # Attributes, not model_dump: faster, and it stores what the event holds without re-serializing it.
        row = {name: getattr(loop_event, name) for name in _EVENT_COLUMNS}
        row["timestamp"] = as_utc(loop_event.timestamp)
        rows.append(row)
    return rows


def run_from(row: Row) -> RunRecord:
    """A run from its row.

    Raises:
        IncompatibleRecordError: another contract major version.
        StoreError: the row does not make a valid run.
    """
    check_major(row["loop_contract_version"], f"run {row['run_id']!r}")
    values = {name: row[name] for name in _RUN_COLUMNS}
    values["created_at"], values["updated_at"] = as_utc(row["created_at"]), as_utc(row["updated_at"])
    return _build(RunRecord, values, f"run {row['run_id']!r}")


def task_from(row: Row, attempts: Iterable[Row]) -> TaskState:
    """A task state from its row and its attempts' rows (in order).

    Raises:
        IncompatibleRecordError: another contract major version.
        StoreError: the rows do not make a valid task state.
    """
    what = f"task {row['task_id']!r} of run {row['run_id']!r}"
    check_major(row["loop_contract_version"], what)
    retrieval = None
    if row["retrieval_query"] is not None:
        # NULL support: a task stored before migration 0015, not assessed.
        retrieval = Retrieval(
            query=row["retrieval_query"],
            results=row["retrieval_results"] or [],
            support=row["support"],
            # NULL before migration 0019 (keyword search only, nothing skipped).
            retrievers=row["retrievers"] or [],
            skipped=row["retrieval_skipped"],
        )
    values = {
        "run_id": row["run_id"],
        "task_id": row["task_id"],
        "position": row["position"],
        "agent": row["agent"],
        "loop_contract_version": row["loop_contract_version"],
        "loop_mode": row["loop_mode"],
        "validation": {"status": row["validation_status"], "errors": row["validation_errors"]},
        "loop_output": {name: row[name] for name in LoopFields.model_fields},
        "routing": {name: row[f"routing_{name}"] for name in Routing.model_fields},
        "attempts": [
            {
                "number": attempt["number"],
                "raw": attempt["raw"],
                "status": attempt["status"],
                "errors": attempt["errors"],
                "kind": attempt["kind"],
                "created_at": as_utc(attempt["created_at"]),
                **{name: attempt[name] for name in ATTEMPT_CALL_FIELDS},
                # NULL (an attempt stored before migration 0006) is "none refused".
                "structured_output_refused": attempt["structured_output_refused"] or [],
            }
            for attempt in attempts
        ],
        "hook_source": row["hook_source"],
        "retrieval": retrieval,
        # NULL: a task stored before migration 0009, which knew no citations.
        "citations": row["citations"] or [],
        "citation_warnings": row["citation_warnings"] or [],
        "rendered": row["rendered"],
        "created_at": as_utc(row["created_at"]),
    }
    return _build(TaskState, values, what)


def transition_from(row: Row) -> TransitionRecord:
    """A transition from its row.

    Raises:
        StoreError: the row does not make a valid transition.
    """
    values = {
        "run_id": row["run_id"],
        "transition_source_task_id": row["source_task_id"],
        "transition_target_task_id": row["target_task_id"],
        "transition_mode": row["mode"],
        "transition_reason": row["reason"],
        "hook": row["hook"],
        "superseded": row["superseded"],
        "created_at": as_utc(row["created_at"]),
    }
    return _build(TransitionRecord, values, f"transition {row['id']} of run {row['run_id']!r}")


def event_from(row: Row) -> LoopEvent:
    """An event from its row.

    Raises:
        StoreError: the row does not make a valid event (e.g. a name this MarsRAG does not know).
    """
    values = {name: row[name] for name in _EVENT_COLUMNS}
    values["timestamp"] = as_utc(row["timestamp"])
    return _build(LoopEvent, values, f"event {row['id']} of run {row['run_id']!r}")


def _build(model: type[Record], values: dict[str, Any], what: str) -> Record:
    try:
        return model.model_validate(values)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
        raise StoreError(f"stored {what} is not a valid record: {problems}") from None
