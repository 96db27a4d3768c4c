"""The async run executor: runs as tasks on one event loop, with the thread executor's shutdown semantics."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from marsrag.errors import QueueUnavailableError
from marsrag.store import RunStore
from marsrag.tasks import ProjectConfig
from tests.contract.samples import CONTENT
from tests.runtime.conftest import project_with

pytestmark = pytest.mark.crewai

#: Bounds for waits only: nothing asserts how long anything took.
BOUND = 120.0
ANSWER = json.dumps(CONTENT)


def no_action(*_: Any) -> Any:
    raise AssertionError("no operator action here")


def runner_for(store: RunStore, project: ProjectConfig, outputs: int, *, latency: float = 0.0) -> Any:
    from marsrag.llm.boundary import make_resilient
    from marsrag.llm.replay import ReplayLLM
    from marsrag.runtime.runner import WorkflowRunner

    return WorkflowRunner(store, project, make_resilient(ReplayLLM.from_outputs([ANSWER] * outputs, latency=latency)))


def wait_for(condition: Any) -> None:
    deadline = time.monotonic() + BOUND
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.02)


def test_submitted_runs_complete_and_a_repeated_submit_is_one_run(store: RunStore, sample: ProjectConfig) -> None:
    """Two runs submitted (one of them twice) both complete, each executed once; holds() follows them."""
    from marsrag.runtime.async_executor import AsyncRunExecutor

    runner = runner_for(store, project_with(sample, ["diagnose", "recommend"]), 4)
    executor = AsyncRunExecutor(runner.aresume, no_action, stopping=runner.stopping)
    try:
        first, second = (runner.start(f"latency {n}", workflow="flow").run_id for n in range(2))
        executor.submit(first)
        executor.submit(first)
        executor.submit(second)
        assert executor.wait(timeout=BOUND)
        assert not executor.holds(first) and not executor.holds(second)
        assert [store.get_run(run_id).status for run_id in (first, second)] == ["completed", "completed"]
        assert len(runner.llm.calls) == 4 and all(call.awaited for call in runner.llm.calls)
    finally:
        executor.shutdown()


def test_shutdown_stops_the_run_after_a_commit_leaves_the_queued_one_pending_and_both_resume(
    store: RunStore, sample: ProjectConfig
) -> None:
    """Shutdown: the executing run stops after its current task's commit, pending; the queued one never starts.

    A new executor resumes both from their committed tasks: nothing is redone.
    """
    from marsrag.runtime.async_executor import AsyncRunExecutor

    project = project_with(sample, ["diagnose", "recommend", "plan"])
    runner = runner_for(store, project, 6, latency=0.05)
    executor = AsyncRunExecutor(runner.aresume, no_action, 1, stopping=runner.stopping)
    executing, queued = (runner.start(f"latency {n}", workflow="flow").run_id for n in range(2))
    executor.submit(executing)
    executor.submit(queued)
    wait_for(lambda: len(store.get_tasks(executing)) >= 1)
    executor.shutdown(grace=BOUND)
    with pytest.raises(QueueUnavailableError):
        executor.submit(queued)
    stopped = store.get_run(executing)
    assert stopped.status == "pending" and "interrupted by a shutdown" in (stopped.status_reason or "")
    committed = len(store.get_tasks(executing))
    assert 1 <= committed < 3 and len(runner.llm.calls) == committed
    assert store.get_run(queued).status == "pending" and store.get_tasks(queued) == []

    runner.stopping.clear()
    successor = AsyncRunExecutor(runner.aresume, no_action, stopping=runner.stopping)
    try:
        successor.submit(executing)
        successor.submit(queued)
        assert successor.wait(timeout=BOUND)
    finally:
        successor.shutdown()
    assert [store.get_run(run_id).status for run_id in (executing, queued)] == ["completed", "completed"]
    for run_id in (executing, queued):
        assert [t.task_id for t in store.get_tasks(run_id)] == ["diagnose", "recommend", "plan"]
    assert len(runner.llm.calls) == 6  # nothing redone: the committed tasks' calls and the rest, once each
