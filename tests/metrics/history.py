"""A scripted history whose six metrics are worked out by hand below, written through the store API.

Two days, two workflows, four sessions, five runs:

- r1, session s1, support, day D1, completed: t1 valid; t2 failed, repaired to partial; t1->t2 direct;
  its next action was followed.
- r2, session s1, support, D1, completed: t1 failed, repaired to valid (routes to review); t2 valid;
  t1->t2 repair; r4 later runs the routed workflow in the same session.
- r3, session s2, support, D2, failed: t1 valid; t1->t2 fallback.
- r4, session s1, review, D2, completed: t1 skipped (loop_mode none).
- r5, session s4, support, D2, completed: t1 failed, repair failed, then an operator repair made it valid;
  t2 valid; its fallback transition was superseded by a repair one.

First tasks' support (retrieval): r1 none, r2 strong, r3 weak, r4 not assessed (as before migration 0015), r5
strong, then none after its operator repair retrieved again; r1's t2 (not a first task) none. So unsupported_rate
is 2 of the 4 assessed runs (r4 left out), D2's 1 of 2 (r3, r5).

All history: executions 7 (r4's skipped task excluded), first valid 4, repaired 3; transitions 4 current,
1 fallback; completed 4, offering a next action 3 (r4 has no contract task), followed 1; downstream 3 (r1
followed, r2's routed workflow ran later in its session, r5 had an operator repair); sessions s1=3, s2=1,
s4=1.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from marsrag.contract import ContractIssue
from marsrag.state import (
    AttemptRecord,
    LoopEvent,
    LoopFields,
    Retrieval,
    Routing,
    RunRecord,
    Support,
    TaskState,
    TransitionRecord,
    Validation,
)
from marsrag.store import RunStore
from tests.contract.samples import CONTENT

D1 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
D2 = datetime(2026, 11, 3, 9, 0, tzinfo=UTC)

EXPECTED_ALL: dict[str, dict[str, Any]] = {
    "loop_schema_pass_rate": {"value": 4 / 7, "numerator": 4, "denominator": 7},
    "loop_follow_rate": {"value": 1 / 3, "numerator": 1, "denominator": 3},
    "downstream_action_rate": {"value": 3 / 4, "numerator": 3, "denominator": 4},
    "session_depth": {"value": 5 / 3, "p50": 1.0, "max": 3, "sessions": 3},
    "repair_rate": {"value": 3 / 7, "numerator": 3, "denominator": 7},
    "fallback_rate": {"value": 1 / 4, "numerator": 1, "denominator": 4},
    "unsupported_rate": {"value": 2 / 4, "numerator": 2, "denominator": 4},
}
EXPECTED_SUPPORT: dict[str, dict[str, Any]] = {
    "loop_schema_pass_rate": {"value": 4 / 7, "numerator": 4, "denominator": 7},
    "loop_follow_rate": {"value": 1 / 3, "numerator": 1, "denominator": 3},
    "downstream_action_rate": {"value": 1.0, "numerator": 3, "denominator": 3},
    "session_depth": {"value": 4 / 3, "p50": 1.0, "max": 2, "sessions": 3},
    "repair_rate": {"value": 3 / 7, "numerator": 3, "denominator": 7},
    "fallback_rate": {"value": 1 / 4, "numerator": 1, "denominator": 4},
    "unsupported_rate": {"value": 2 / 4, "numerator": 2, "denominator": 4},
}
#: review has one completed run without a contract task: every rate but downstream has no denominator.
EXPECTED_REVIEW: dict[str, dict[str, Any]] = {
    "loop_schema_pass_rate": {"value": None, "numerator": 0, "denominator": 0},
    "loop_follow_rate": {"value": None, "numerator": 0, "denominator": 0},
    "downstream_action_rate": {"value": 0.0, "numerator": 0, "denominator": 1},
    "session_depth": {"value": 1.0, "p50": 1.0, "max": 1, "sessions": 1},
    "repair_rate": {"value": None, "numerator": 0, "denominator": 0},
    "fallback_rate": {"value": None, "numerator": 0, "denominator": 0},
    "unsupported_rate": {"value": None, "numerator": 0, "denominator": 0},
}
#: Day D2 alone (r3, r4, r5): executions 3 (r3 t1 valid, r5 t1 failed first, r5 t2 valid). Sessions are those
#: that started on D2 (s2, s4: one run each); s1, whose third run r4 is on D2, belongs to D1, its first run's day.
EXPECTED_D2: dict[str, dict[str, Any]] = {
    "loop_schema_pass_rate": {"value": 2 / 3, "numerator": 2, "denominator": 3},
    "loop_follow_rate": {"value": 0.0, "numerator": 0, "denominator": 1},
    "downstream_action_rate": {"value": 1 / 2, "numerator": 1, "denominator": 2},
    "session_depth": {"value": 1.0, "p50": 1.0, "max": 1, "sessions": 2},
    "repair_rate": {"value": 1 / 3, "numerator": 1, "denominator": 3},
    "fallback_rate": {"value": 1 / 2, "numerator": 1, "denominator": 2},
    "unsupported_rate": {"value": 1 / 2, "numerator": 1, "denominator": 2},
}
EMPTY: dict[str, dict[str, Any]] = {
    **{name: {"value": None, "numerator": 0, "denominator": 0} for name in EXPECTED_ALL if name != "session_depth"},
    "session_depth": {"value": None, "p50": None, "max": None, "sessions": 0},
}


def approx(expected: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Expected metrics with float values compared approximately (pytest.approx does not nest).

    The history has no edited follow and no rating: every follow is ``suggested`` and helpful_rate is empty,
    unless ``expected`` says otherwise; so is unsupported_rate where ``expected`` leaves it out.
    """
    full = dict(expected)
    follows = full["loop_follow_rate"]
    if "by_kind" not in follows:
        suggested, edited = _rate(follows["numerator"], follows["denominator"]), _rate(0, follows["denominator"])
        full["loop_follow_rate"] = {**follows, "by_kind": {"suggested": suggested, "edited": edited}}
    full.setdefault("helpful_rate", {**_rate(0, 0), "by_target": {"answer": _rate(0, 0), "next_action": _rate(0, 0)}})
    full.setdefault("unsupported_rate", _rate(0, 0))
    return {name: _approx(record) for name, record in full.items()}


def _rate(numerator: int, denominator: int) -> dict[str, Any]:
    return {
        "value": numerator / denominator if denominator else None,
        "numerator": numerator,
        "denominator": denominator,
    }


def _approx(record: dict[str, Any]) -> dict[str, Any]:
    return {
        key: pytest.approx(value) if isinstance(value, float) else _approx(value) if isinstance(value, dict) else value
        for key, value in record.items()
    }


def _attempt(number: int, status: str, kind: str, at: datetime) -> AttemptRecord:
    errors = [] if status == "valid" else [ContractIssue(field="grip", code="missing_field", message="grip is missing")]
    return AttemptRecord(number=number, raw="raw", status=status, errors=errors, kind=kind, created_at=at)  # type: ignore[arg-type]


def retrieved(level: str | None) -> Retrieval:
    """A task's retrieval whose support is ``level`` (None: stored before support was assessed)."""
    support = None if level is None else Support(level=level, score=0.0)  # type: ignore[arg-type]
    return Retrieval(query="q", results=[], support=support)


def _task(
    run_id: str, task_id: str, position: int, at: datetime, attempts: list[tuple[str, str]], **extra: Any
) -> TaskState:
    final = attempts[-1][0]
    return TaskState(
        run_id=run_id,
        task_id=task_id,
        position=position,
        agent="analyst",
        loop_mode=extra.pop("loop_mode", "hard"),
        validation=Validation(status=final),  # type: ignore[arg-type]
        loop_output=LoopFields(**CONTENT) if final != "skipped" else LoopFields(),
        attempts=[_attempt(n + 1, status, kind, at) for n, (status, kind) in enumerate(attempts)],
        created_at=at,
        **extra,
    )


def _transition(run_id: str, mode: str, at: datetime, superseded: bool = False) -> TransitionRecord:
    return TransitionRecord(
        run_id=run_id,
        transition_source_task_id="t1",
        transition_target_task_id="t2",
        transition_mode=mode,  # type: ignore[arg-type]
        transition_reason=mode,
        hook=CONTENT["loop"],
        superseded=superseded,
        created_at=at,
    )


def write_history(store: RunStore) -> None:
    """Store the five runs of the table above."""

    def run(run_id: str, session: str, workflow: str, at: datetime, status: str) -> None:
        store.create_run(
            RunRecord(
                run_id=run_id,
                session_id=session,
                goal=f"goal of {run_id}",
                workflow=workflow,
                loop_mode="none" if workflow == "review" else "hard",
                status=status,  # type: ignore[arg-type]
                created_at=at,
                updated_at=at,
            )
        )

    run("r1", "s1", "support", D1, "completed")
    store.save_task(
        _task("r1", "t1", 0, D1, [("valid", "answer")], retrieval=retrieved("none")),
        transition=_transition("r1", "direct", D1),
    )
    store.save_task(
        _task("r1", "t2", 1, D1, [("failed", "answer"), ("partial", "repair")], retrieval=retrieved("none"))
    )
    store.add_events([LoopEvent(name="loop.action.followed", run_id="r1", task_id="t2")])

    later = D1 + timedelta(hours=1)
    run("r2", "s1", "support", later, "completed")
    routed = Routing(next_workflow="review")
    store.save_task(
        _task(
            "r2",
            "t1",
            0,
            later,
            [("failed", "answer"), ("valid", "repair")],
            routing=routed,
            retrieval=retrieved("strong"),
        ),
        transition=_transition("r2", "repair", later),
    )
    store.save_task(_task("r2", "t2", 1, later, [("valid", "answer")]))

    run("r3", "s2", "support", D2, "failed")
    store.save_task(
        _task("r3", "t1", 0, D2, [("valid", "answer")], retrieval=retrieved("weak")),
        transition=_transition("r3", "fallback", D2),
    )

    run("r4", "s1", "review", D2 + timedelta(hours=1), "completed")
    store.save_task(_task("r4", "t1", 0, D2, [("skipped", "answer")], loop_mode="none", retrieval=retrieved(None)))

    at5 = D2 + timedelta(hours=2)
    run("r5", "s4", "support", at5, "completed")
    store.save_task(
        _task("r5", "t1", 0, at5, [("failed", "answer"), ("failed", "repair")], retrieval=retrieved("strong")),
        transition=_transition("r5", "fallback", at5),
    )
    store.save_task(_task("r5", "t2", 1, at5, [("valid", "answer")]))
    # The operator repair: t1 becomes valid, its transition is re-planned (the fallback row is superseded).
    store.save_task(
        _task(
            "r5",
            "t1",
            0,
            at5,
            [("failed", "answer"), ("failed", "repair"), ("valid", "operator_repair")],
            retrieval=retrieved("none"),
        ),
        transition=_transition("r5", "repair", at5),
    )
