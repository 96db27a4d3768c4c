"""LoopFlow on real CrewAI Flow kickoffs (replay LLM) and a real SQLite store: steps stored as a run's tasks."""

from __future__ import annotations

import json
from typing import Any

import pytest

from marsrag.events import capture_events
from marsrag.state import FALLBACK_HOOK
from marsrag.store import RunStore
from marsrag.tasks import ProjectConfig
from tests.contract.samples import CONTENT
from tests.flows.triage import TO_ESCALATE, TO_ROLLOUT, TriageFlow, answer

pytestmark = pytest.mark.crewai

GOAL = "API latency SLO breaches"


def flow_for(store: RunStore, sample: ProjectConfig, outputs: list[Any]) -> tuple[TriageFlow, Any]:
    from marsrag.llm.boundary import make_resilient
    from marsrag.llm.replay import ReplayLLM

    llm = make_resilient(ReplayLLM.from_outputs(outputs))
    return TriageFlow(store=store, llm=llm, project=sample, suppress_flow_events=True), llm


def modes(store: RunStore, run_id: str) -> list[tuple[str, str, str]]:
    return [
        (t.transition_source_task_id, t.transition_target_task_id, t.transition_mode)
        for t in store.get_transitions(run_id)
    ]


def test_direct_then_repair_then_routed_to_the_loops_choice(store: RunStore, sample: ProjectConfig) -> None:
    """diagnose valid, recommend repaired: direct then repair transitions; recommend's loop routes to plan."""
    diagnosis = "Which cache tier should we pre-warm first?"
    outputs = [answer(loop=diagnosis), answer(grip=None), answer(loop=TO_ROLLOUT), answer()]
    flow, llm = flow_for(store, sample, outputs)
    with capture_events() as events:
        flow.kickoff(inputs={"goal": GOAL})
    run = flow.run
    assert run is not None and run.status == "completed" and run.workflow == "triage_flow" and run.summary
    assert [call.task for call in llm.calls] == ["diagnose", "recommend", "recommend", "plan"]
    tasks = store.get_tasks(run.run_id)
    assert [(t.task_id, t.position, t.agent) for t in tasks] == [
        ("diagnose", 0, "analyst"),
        ("recommend", 1, "advisor"),
        ("plan", 2, "planner"),
    ]
    assert [[a.status for a in t.attempts] for t in tasks] == [["valid"], ["partial", "valid"], ["valid"]]
    assert [(t.hook_source, t.loop_output.hook) for t in tasks] == [
        ("goal", CONTENT["hook"]),
        ("direct", diagnosis),
        ("repair", TO_ROLLOUT),
    ]
    assert modes(store, run.run_id) == [("diagnose", "recommend", "direct"), ("recommend", "plan", "repair")]
    # The hook reached the next step's prompt, and its repair retry; the router chose as the loop says.
    assert diagnosis in json.dumps(llm.calls[1].messages) and diagnosis in json.dumps(llm.calls[2].messages)
    assert TO_ROLLOUT in json.dumps(llm.calls[3].messages)
    assert [(s.name, s.transition_mode, s.route) for s in flow.state.steps] == [
        ("diagnose", "direct", None),
        ("recommend", "repair", "rollout"),
        ("plan", "direct", None),
    ]
    # The same events as a workflow run, stored before the sinks saw them.
    names = [e.name for e in store.get_events(run.run_id)]
    assert names.count("loop.contract.validated") == 3 and names.count("loop.contract.failed") == 1
    assert names.count("loop.transition.planned") == 2 and "loop.transition.fallback_used" not in names
    assert [e.name for e in events] == names


def test_a_fallback_is_stored_and_the_other_route_taken(store: RunStore, sample: ProjectConfig) -> None:
    """diagnose fails its answer and its repair: the fallback question goes on; recommend's loop escalates."""
    outputs = ["No idea.", answer(loop=None), answer(loop=TO_ESCALATE), answer()]
    flow, llm = flow_for(store, sample, outputs)
    flow.kickoff(inputs={"goal": GOAL})
    assert flow.run is not None and flow.run.status == "completed"
    assert [call.task for call in llm.calls] == ["diagnose", "diagnose", "recommend", "escalate"]
    tasks = store.get_tasks(flow.run.run_id)
    assert [(t.task_id, t.validation.status, t.hook_source) for t in tasks] == [
        ("diagnose", "partial", "goal"),
        ("recommend", "valid", "fallback"),
        ("escalate", "valid", "direct"),
    ]
    assert tasks[1].loop_output.hook == FALLBACK_HOOK and FALLBACK_HOOK in json.dumps(llm.calls[2].messages)
    assert modes(store, flow.run.run_id) == [("diagnose", "recommend", "fallback"), ("recommend", "escalate", "direct")]
    names = [e.name for e in store.get_events(flow.run.run_id)]
    assert names.count("loop.transition.fallback_used") == 1
    assert flow.state.steps[1].route == "escalate" and flow.state.steps[0].next_hook == FALLBACK_HOOK


def test_a_loop_matching_no_route_takes_the_default(store: RunStore, sample: ProjectConfig) -> None:
    """A loop sharing no word with any route goes to the router's default."""
    outputs = [answer(), answer(loop="Qu'en pensez-vous ?"), answer()]
    flow, llm = flow_for(store, sample, outputs)
    flow.kickoff(inputs={"goal": GOAL})
    assert [call.task for call in llm.calls] == ["diagnose", "recommend", "escalate"]
