"""Resuming a LoopFlow run through the MarsRAG store (and through CrewAI's @persist): no step is redone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from marsrag.errors import RunNotFoundError
from marsrag.llm.replay import ReplayExhaustedError
from marsrag.store import RunStore
from marsrag.tasks import ProjectConfig
from tests.flows.triage import TO_ROLLOUT, PersistedTriageFlow, TriageFlow, answer

pytestmark = pytest.mark.crewai

GOAL = "API latency SLO breaches"
DIAGNOSIS = "Which cache tier should we pre-warm first?"


def replay(outputs: list[Any]) -> Any:
    from marsrag.llm.boundary import make_resilient
    from marsrag.llm.replay import ReplayLLM

    return make_resilient(ReplayLLM.from_outputs(outputs))


def test_a_run_stopped_by_a_failing_step_resumes_without_redoing_a_step(store: RunStore, sample: ProjectConfig) -> None:
    """The LLM fails in recommend: the run ends failed with diagnose committed; resuming runs only what is left."""
    first = replay([answer(loop=DIAGNOSIS)])  # recommend's call finds the script exhausted
    flow = TriageFlow(store=store, llm=first, project=sample, suppress_flow_events=True)
    with pytest.raises(ReplayExhaustedError):
        flow.kickoff(inputs={"goal": GOAL})
    assert (
        flow.run is not None
        and flow.run.status == "failed"
        and "ReplayExhaustedError" in (flow.run.status_reason or "")
    )
    run_id = flow.run.run_id
    (diagnosed,) = store.get_tasks(run_id)
    assert store.get_transitions(run_id) == []  # the handoff into recommend is stored only with recommend
    second = replay([answer(grip=None), answer(loop=TO_ROLLOUT), answer()])
    TriageFlow.resume_run(run_id, store=store, llm=second, project=sample, suppress_flow_events=True)
    # Nothing of diagnose was asked again; recommend was validated and repaired after the resume.
    assert [call.task for call in second.calls] == ["recommend", "recommend", "plan"]
    assert DIAGNOSIS in json.dumps(second.calls[0].messages)
    run = store.get_run(run_id)
    assert run.status == "completed" and run.status_reason is None
    tasks = store.get_tasks(run_id)
    assert [t.task_id for t in tasks] == ["diagnose", "recommend", "plan"]
    assert tasks[0] == diagnosed  # the committed step stands as it was stored
    assert [[a.status for a in t.attempts] for t in tasks[1:]] == [["partial", "valid"], ["valid"]]
    # The transition into recommend, planned again on the resume (the planner is pure), is stored once, with it.
    assert [(t.transition_source_task_id, t.transition_mode) for t in store.get_transitions(run_id)] == [
        ("diagnose", "direct"),
        ("recommend", "repair"),
    ]


def test_resuming_a_completed_run_runs_nothing(store: RunStore, sample: ProjectConfig) -> None:
    """A completed run walked again reuses every stored step: no LLM call, the record unchanged."""
    flow = TriageFlow(store=store, llm=replay([answer(), answer(loop=TO_ROLLOUT), answer()]), project=sample)
    flow.kickoff(inputs={"goal": GOAL})
    assert flow.run is not None
    idle = replay([])
    again = TriageFlow(store=store, llm=idle, project=sample, suppress_flow_events=True)
    again.kickoff(inputs={"run_id": flow.run.run_id})
    assert idle.calls == [] and again.run == store.get_run(flow.run.run_id)
    assert [s.name for s in again.state.steps] == ["diagnose", "recommend", "plan"]


def test_an_unknown_run_id_is_an_error_not_a_fresh_start(store: RunStore, sample: ProjectConfig) -> None:
    """Resuming a run the store does not have raises RunNotFoundError before any step runs; nothing is stored."""
    llm = replay([answer()])
    with pytest.raises(RunNotFoundError, match="no-such-run"):
        TriageFlow.resume_run("no-such-run", store=store, llm=llm, project=sample, suppress_flow_events=True)
    assert llm.calls == [] and store.list_runs() == []


def test_persisted_state_restores_the_run_and_keeps_the_contract(
    store: RunStore, sample: ProjectConfig, tmp_path: Path
) -> None:
    """Under @persist, a restored snapshot names the run: committed steps are reused, the rest still validated
    and repaired (the guardrail is rebuilt per step, never taken from the serialized state)."""
    from crewai.flow.persistence import SQLiteFlowPersistence

    snapshots = SQLiteFlowPersistence(db_path=str(tmp_path / "flow_states.db"))
    flow = PersistedTriageFlow(store=store, llm=replay([answer(loop=DIAGNOSIS)]), project=sample, persistence=snapshots)
    with pytest.raises(ReplayExhaustedError):
        flow.kickoff(inputs={"goal": GOAL})
    saved = snapshots.load_state(flow.state.id)
    assert saved is not None and saved["run_id"] == flow.run_id and saved["steps"][0]["name"] == "diagnose"
    second = replay(["Not the format.", answer(loop=TO_ROLLOUT), answer()])
    restored = PersistedTriageFlow(store=store, llm=second, project=sample, persistence=snapshots)
    restored.kickoff(inputs={"id": flow.state.id})
    assert restored.run_id == flow.run_id and [call.task for call in second.calls] == ["recommend", "recommend", "plan"]
    assert "Previous attempt failed validation" in json.dumps(second.calls[1].messages)
    tasks = store.get_tasks(flow.run_id or "")
    assert [(t.task_id, [a.status for a in t.attempts]) for t in tasks] == [
        ("diagnose", ["valid"]),
        ("recommend", ["failed", "valid"]),
        ("plan", ["valid"]),
    ]
    assert tasks[1].hook_source == "direct" and tasks[1].loop_output.hook == DIAGNOSIS


def test_an_unknown_persisted_state_id_is_an_error(store: RunStore, sample: ProjectConfig, tmp_path: Path) -> None:
    """CrewAI would start afresh under an id it has no snapshot of; a LoopFlow refuses it."""
    from crewai.flow.persistence import SQLiteFlowPersistence

    from marsrag.flows import FlowStateNotFoundError

    snapshots = SQLiteFlowPersistence(db_path=str(tmp_path / "flow_states.db"))
    flow = PersistedTriageFlow(store=store, llm=replay([]), project=sample, persistence=snapshots)
    with pytest.raises(FlowStateNotFoundError, match="unknown-state"):
        flow.kickoff(inputs={"id": "unknown-state"})
    assert store.list_runs() == []
