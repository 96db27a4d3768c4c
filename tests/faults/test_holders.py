"""Holders respect each other: an operator action and a resume of the same run never overwrite each other's
writes, and a run's end is written only by the process holding it (issue: lost update between an operator
action and resume). Real CrewAI crews, fault LLMs at the boundary, real stores on both backends."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from marsrag.errors import ActionConflictError, HolderLostError
from marsrag.liveness import owner_id
from marsrag.store import RunStore
from marsrag.store.queries import Holder
from marsrag.tasks import ProjectConfig
from tests.faults.conftest import runner
from tests.faults.fault_llm import HANG, FaultLLM, always

pytestmark = pytest.mark.crewai


def stopped_after_a_failed_first_task(store: RunStore, project: ProjectConfig) -> str:
    """A run whose first task failed its contract (twice) and whose LLM then went down: ``failed``, with a reason."""
    broken = runner(store, project, FaultLLM.scripted(["No idea.", "No idea.", always()]))
    run = broken.run("Checkout latency breached its SLO", workflow="flow")
    assert run.status == "failed" and run.status_reason
    assert [t.validation.status for t in store.get_tasks(run.run_id)] == ["failed"]
    return run.run_id


def test_resume_waits_for_an_operator_action_and_then_clears_the_stale_reason(
    any_store: RunStore, project: ProjectConfig, released: list[FaultLLM]
) -> None:
    """A repair waiting on a slow LLM holds its task: resume is refused meanwhile instead of completing the run
    under it (whose stale status the repair would then write back). Once the repair lands, resume completes
    the run and its old failure reason is gone."""
    from marsrag.runtime.actions import repair_task

    run_id = stopped_after_a_failed_first_task(any_store, project)
    slow = FaultLLM.scripted([HANG])
    released.append(slow)
    results: list[Any] = []
    action = threading.Thread(
        target=lambda: results.append(repair_task(runner(any_store, project, slow), run_id, "diagnose"))
    )
    action.start()
    try:
        assert slow.wait_entered(), "the repair never reached its LLM call"
        with pytest.raises(ActionConflictError, match="operator action is running on task 'diagnose'"):
            runner(any_store, project, FaultLLM.scripted([])).resume(run_id)
        assert any_store.get_run(run_id).status == "failed"  # nothing was written by the refused resume
    finally:
        slow.release()
        action.join(60)
    assert results and results[0].validation.status == "valid"
    finished = runner(any_store, project, FaultLLM.scripted([])).resume(run_id)
    assert (finished.status, finished.status_reason) == ("completed", None)
    tasks = any_store.get_tasks(run_id)
    assert [(t.task_id, t.validation.status) for t in tasks] == [("diagnose", "valid"), ("recommend", "valid")]
    assert [a.kind for a in tasks[0].attempts] == ["answer", "repair", "operator_repair"]


def test_an_action_refuses_a_run_resumed_since_it_was_read(any_store: RunStore, project: ProjectConfig) -> None:
    """The claim on the task is conditional on the run as the action read it: a resume in between wins."""
    run_id = stopped_after_a_failed_first_task(any_store, project)
    read_by_action = any_store.get_run(run_id)
    assert any_store.claim_run(run_id, owner_id(), seen=read_by_action)  # a resume takes the run
    claim = any_store.claim_task(run_id, "diagnose", f"{owner_id()}:x", statuses=("failed",), seen=read_by_action)
    assert (claim.ok, claim.refusal) == (False, "changed")


def test_a_run_taken_over_is_not_finished_by_its_old_executor(any_store: RunStore, project: ProjectConfig) -> None:
    """An executor found stale (and replaced) cannot commit another task nor write the run's end."""
    run_id = stopped_after_a_failed_first_task(any_store, project)
    any_store.claim_run(run_id, "elsewhere:1", seen=any_store.get_run(run_id))
    old = any_store.get_run(run_id)
    any_store.claim_run(run_id, "elsewhere:2", seen=old)  # found stale by another host, taken over
    state = any_store.get_tasks(run_id)[0]
    with pytest.raises(HolderLostError, match="elsewhere:2"):
        any_store.save_task(state, holder=Holder(run_owner="elsewhere:1"))
    assert not any_store.set_run_status(run_id, "failed", reason="late", seen=old)
    assert (any_store.get_run(run_id).owner, any_store.get_run(run_id).status_reason) == (
        "elsewhere:2",
        old.status_reason,
    )
