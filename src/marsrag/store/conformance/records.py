"""Record builders for the conformance kit (and the store tests): every field set to a distinctive value.

A test overrides what it is about: ``task(task_id="t2", position=1)``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from marsrag.contract import ContractIssue
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
)

#: A non-UTC offset: values written in it must read back as the same instant, in UTC.
PLUS_TWO = timezone(timedelta(hours=2))
T0 = datetime(2025, 3, 4, 5, 6, 7, 123456, tzinfo=PLUS_TWO)


def run(run_id: str = "run-1", **changes: Any) -> RunRecord:
    """A run with every field set."""
    values: dict[str, Any] = {
        "run_id": run_id,
        "session_id": "session-a",
        "goal": "Find out why the habitat's oxygen scrubber\nfaults at night — ünïcödé",
        "workflow": "diagnose",
        "loop_mode": "strict",
        "status": "running",
        "status_reason": None,
        "summary": "",
        "created_at": T0,
        "updated_at": T0,
    }
    return RunRecord(**{**values, **changes})


#: An attempt's LLM call, every field set to a distinctive value (``attempt(1, **CALL)``).
CALL: dict[str, Any] = {
    "model": "smollm2",
    "endpoint": "127.0.0.1:8088",
    "structured_output": "json_object",
    "structured_output_refused": ["json_schema", "grammar"],
    "latency_ms": 2950,
    "prompt_tokens": 412,
    "completion_tokens": 96,
    "finish_reason": "stop",
}


def attempt(number: int, *, status: str = "valid", minutes: int = 0, **changes: Any) -> AttemptRecord:
    """An attempt with raw text and (unless valid) an error; no LLM call metadata unless given (see ``CALL``)."""
    errors = [] if status == "valid" else [ContractIssue(field="grip", code="missing_field", message="grip is missing")]
    values: dict[str, Any] = {
        "number": number,
        "raw": f"attempt {number} raw text\nHOOK: ...",
        "status": status,
        "errors": errors,
        "created_at": T0 + timedelta(minutes=minutes),
    }
    return AttemptRecord(**{**values, **changes})


def task(run_id: str = "run-1", task_id: str = "t1", position: int = 0, **changes: Any) -> TaskState:
    """A task state with every field set: five loop fields, rendered text, two attempts, routing, retrieval."""
    fields = LoopFields(
        hook="What fails at night?",
        grip="The scrubber's heater cycles off",
        payoff="Stable O2 overnight",
        reinforce="Check the log at 02:00",
        loop="Which sensor drifted first?",
    )
    values: dict[str, Any] = {
        "run_id": run_id,
        "task_id": task_id,
        "position": position,
        "agent": "engineer",
        "loop_contract_version": "1.0.0",
        "loop_mode": "strict",
        "validation": Validation(
            status="partial", errors=[ContractIssue(field=None, code="too_long", message="answer exceeds the limit")]
        ),
        "loop_output": fields,
        "routing": Routing(next_agent="analyst", next_tool="log_search", next_workflow="repair"),
        "attempts": [attempt(1, status="failed"), attempt(2, minutes=1)],
        "hook_source": "repair",
        "retrieval": Retrieval(query="scrubber heater night", results=[{"id": "doc-1", "score": 0.5, "tags": ["a"]}]),
        "rendered": "The heater cycles off at night; check the 02:00 log.",
        "created_at": T0 + timedelta(minutes=2),
    }
    return TaskState(**{**values, **changes})


def bare_task(run_id: str = "run-1") -> TaskState:
    """A task with as little as a task can have: only a hook, no routing, retrieval, attempts or agent."""
    return task(
        run_id,
        agent=None,
        loop_output=LoopFields(hook="Only a hook"),
        routing=Routing(),
        retrieval=None,
        attempts=[],
        validation=Validation(status="failed"),
        rendered="",
        hook_source="goal",
    )


def transition(run_id: str = "run-1", source: str = "t1", target: str = "t2", **changes: Any) -> TransitionRecord:
    """A transition between two tasks."""
    values: dict[str, Any] = {
        "run_id": run_id,
        "transition_source_task_id": source,
        "transition_target_task_id": target,
        "transition_mode": "direct",
        "transition_reason": "loop valid",
        "hook": "Which sensor drifted first?",
        "created_at": T0 + timedelta(minutes=3),
    }
    return TransitionRecord(**{**values, **changes})


def event(name: str = "loop.contract.validated", run_id: str = "run-1", **changes: Any) -> LoopEvent:
    """An event with every field set."""
    values: dict[str, Any] = {
        "name": name,
        "run_id": run_id,
        "task_id": "t1",
        "loop_contract_version": "1.0.0",
        "loop_mode": "strict",
        "validation_status": "valid",
        "transition_mode": "direct",
        "timestamp": T0 + timedelta(seconds=30),
    }
    return LoopEvent(**{**values, **changes})


def aware_utc(moment: datetime) -> bool:
    """Whether a datetime is timezone-aware with a zero offset."""
    return moment.tzinfo is not None and moment.utcoffset() == timedelta(0) and moment.tzinfo == UTC
