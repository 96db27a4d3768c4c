"""latest_failures: failed and partial tasks, newest first, with their run and first error, on both backends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from marsrag.contract import ContractIssue
from marsrag.metrics import Window
from marsrag.metrics.failures import Failure, latest_failures
from marsrag.state import AttemptRecord, LoopFields, RunRecord, TaskState, Validation
from marsrag.store import RunStore
from tests.contract.samples import CONTENT
from tests.metrics.history import D1, D2, write_history


def add_run(
    store: RunStore,
    run_id: str,
    at: datetime,
    tasks: list[tuple[str, str, str | None]],
    *,
    workflow: str = "support",
    goal: str | None = None,
    session: str | None = None,
    status: str = "completed",
) -> None:
    """A run with tasks ``(task_id, final status, message of its stored validation error or None)``.

    A task that is not valid gets one answer attempt with the same status and error; ``partial`` and ``failed``
    tasks after a repair are written by the history module, not here.
    """
    store.create_run(
        RunRecord(
            run_id=run_id,
            session_id=session or f"session-{run_id}",
            goal=goal or f"goal of {run_id}",
            workflow=workflow,
            loop_mode="hard",
            status=status,  # type: ignore[arg-type]
            created_at=at,
            updated_at=at,
        )
    )
    for position, (task_id, final, message) in enumerate(tasks):
        issues = [] if message is None else [ContractIssue(field="payoff", code="empty", message=message)]
        store.save_task(
            TaskState(
                run_id=run_id,
                task_id=task_id,
                position=position,
                agent="analyst",
                loop_mode="hard",
                validation=Validation(status=final, errors=issues),  # type: ignore[arg-type]
                loop_output=LoopFields(**CONTENT),
                attempts=[
                    AttemptRecord(number=1, raw="raw", status=final, errors=issues, kind="answer", created_at=at)  # type: ignore[arg-type]
                ],
                created_at=at + timedelta(minutes=position),
            )
        )


def keys(failures: list[Failure]) -> list[tuple[str, str]]:
    return [(f.run_id, f.task_id) for f in failures]


def test_the_history_has_one_failure_with_its_attempt_error(store: RunStore) -> None:
    """r1's t2 ended partial; r5's t1 was failed until an operator repair made it valid, so it is not listed.

    Its stored validation has no error list, so the message is the latest attempt's first error.
    """
    write_history(store)
    (failure,) = latest_failures(store)
    assert failure == Failure(
        run_id="r1",
        task_id="t2",
        position=1,
        status="partial",
        workflow="support",
        goal="goal of r1",
        run_status="completed",
        created_at=D1,
        message="grip is missing",
    )
    assert failure.link == "/runs/r1#task-t2"
    assert failure.to_dict()["link"] == "/runs/r1#task-t2"
    assert failure.to_dict()["created_at"] == "2026-11-02T09:00:00+00:00"


def test_newest_first_with_the_stored_error_and_a_limit(store: RunStore) -> None:
    """Newest task first, tasks of one run by position; the stored validation error wins; ``limit`` cuts."""
    write_history(store)
    add_run(store, "x1", D2 + timedelta(days=1), [("t1", "failed", "payoff is empty"), ("t2", "valid", None)])
    add_run(store, "x2", D2 + timedelta(days=2), [("t1", "partial", "payoff too long"), ("t2", "failed", "no json")])
    failures = latest_failures(store)
    assert keys(failures) == [("x2", "t2"), ("x2", "t1"), ("x1", "t1"), ("r1", "t2")]
    assert [f.message for f in failures] == ["no json", "payoff too long", "payoff is empty", "grip is missing"]
    assert [f.status for f in failures] == ["failed", "partial", "failed", "partial"]
    assert keys(latest_failures(store, limit=2)) == [("x2", "t2"), ("x2", "t1")]
    assert latest_failures(store, limit=0) == []


def test_window_and_workflow_filters_are_the_metrics_ones(store: RunStore) -> None:
    """Runs created in the window (until exclusive), of the workflow."""
    write_history(store)
    add_run(store, "x1", D2 + timedelta(days=1), [("t1", "failed", "payoff is empty")], workflow="triage")
    day1 = Window(since=D1 - timedelta(hours=9), until=D1 + timedelta(hours=15))
    assert keys(latest_failures(store, window=day1)) == [("r1", "t2")]
    assert keys(latest_failures(store, window=Window(since=D2))) == [("x1", "t1")]
    assert keys(latest_failures(store, window=Window(until=D1))) == []
    assert keys(latest_failures(store, workflow="triage")) == [("x1", "t1")]
    assert keys(latest_failures(store, workflow="support")) == [("r1", "t2")]
    assert keys(latest_failures(store, workflow="review")) == []


def test_goals_are_returned_as_stored_and_links_are_encoded(store: RunStore) -> None:
    """The goal is data (escaping is the page's job); ids with URL specials are percent-encoded in the link."""
    goal = "<script>alert('x')</script> & more"
    add_run(store, "run 1#?", datetime(2026, 11, 5, tzinfo=UTC), [("task/1", "failed", None)], goal=goal)
    (failure,) = latest_failures(store)
    assert failure.goal == goal
    assert failure.link == "/runs/run%201%23%3F#task-task%2F1"
    assert failure.message is None  # neither the validation nor the attempt recorded an error
