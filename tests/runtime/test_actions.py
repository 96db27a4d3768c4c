"""Operator actions on stored tasks, on real CrewAI crews (replay LLM) and a real SQLite store."""

from __future__ import annotations

import json
from typing import Any

import pytest

from marsrag.chain.planner import plan_next_action
from marsrag.errors import ActionConflictError, RunNotFoundError, TaskNotFoundError
from marsrag.events import capture_events
from marsrag.state import FALLBACK_HOOK
from marsrag.store import RunStore
from marsrag.tasks import ProjectConfig
from tests.contract.samples import CONTENT
from tests.runtime.conftest import project_with

pytestmark = pytest.mark.crewai

FIXED_LOOP = "Which region should get the pre-warmed cache first?"


def answer(**changes: Any) -> str:
    return json.dumps({k: v for k, v in {**CONTENT, **changes}.items() if v is not None})


def runner_for(store: RunStore, project: ProjectConfig, outputs: list[str]) -> Any:
    from marsrag.llm.replay import ReplayLLM
    from marsrag.runtime.runner import WorkflowRunner

    return WorkflowRunner(store, project, ReplayLLM.from_outputs(outputs))


def failed_first(store: RunStore, sample: ProjectConfig, *action_outputs: str) -> tuple[Any, str]:
    """A run whose first task failed (twice "No idea.") and whose second is valid; the action outputs follow."""
    project = project_with(sample, ["diagnose", "recommend"])
    runner = runner_for(store, project, ["No idea.", "No idea.", answer(), *action_outputs])
    run = runner.run("API latency SLO breaches", workflow="flow")
    assert [t.validation.status for t in store.get_tasks(run.run_id)] == ["failed", "valid"]
    return runner, run.run_id


def partial_first(store: RunStore, sample: ProjectConfig, *action_outputs: str) -> tuple[Any, str]:
    """A run whose first task stayed partial (grip and payoff empty, twice); the action outputs follow."""
    broken = answer(grip="", payoff="")
    project = project_with(sample, ["diagnose", "recommend"])
    runner = runner_for(store, project, [broken, broken, answer(), *action_outputs])
    run = runner.run("API latency SLO breaches", workflow="flow")
    assert [t.validation.status for t in store.get_tasks(run.run_id)] == ["partial", "valid"]
    return runner, run.run_id


def test_repair_fixes_a_failed_task_keeps_its_attempts_and_replans_the_transition(
    store: RunStore, sample: ProjectConfig
) -> None:
    """failed -> operator repair -> valid: attempts kept, events recorded, fallback transition superseded."""
    from marsrag.runtime.actions import repair_task

    runner, run_id = failed_first(store, sample, answer(loop=FIXED_LOOP))
    assert [t.transition_mode for t in store.get_transitions(run_id)] == ["fallback"]
    with capture_events() as events:
        fixed = repair_task(runner, run_id, "diagnose")
    assert fixed.validation.status == "valid" and fixed.loop_output.loop == FIXED_LOOP
    assert store.get_tasks(run_id)[0] == fixed
    assert [(a.number, a.kind, a.status) for a in fixed.attempts] == [
        (1, "answer", "failed"),
        (2, "repair", "failed"),
        (3, "operator_repair", "valid"),
    ]
    transitions = store.get_transitions(run_id)
    assert [(t.transition_mode, t.hook, t.superseded) for t in transitions] == [
        ("fallback", FALLBACK_HOOK, True),
        ("repair", FIXED_LOOP, False),
    ]
    assert "re-planned after an operator action" in transitions[1].transition_reason
    assert [(e.name, e.task_id) for e in events] == [
        ("loop.contract.validated", "diagnose"),
        ("loop.transition.planned", "recommend"),
    ]
    assert [e.name for e in store.get_events(run_id)][-2:] == ["loop.contract.validated", "loop.transition.planned"]
    assert CONTENT["payoff"] in store.get_run(run_id).summary


def test_a_repair_answer_that_needs_its_own_repair_gets_one(store: RunStore, sample: ProjectConfig) -> None:
    """The re-run task keeps the contract guardrail: a second bad answer is repaired once more."""
    from marsrag.runtime.actions import repair_task

    runner, run_id = failed_first(store, sample, answer(grip=None), answer(loop=FIXED_LOOP))
    fixed = repair_task(runner, run_id, "diagnose")
    assert [(a.kind, a.status) for a in fixed.attempts[2:]] == [
        ("operator_repair", "partial"),
        ("operator_repair", "valid"),
    ]
    assert fixed.validation.status == "valid"


def test_regenerate_reasks_only_the_failing_sections_and_merges_them(store: RunStore, sample: ProjectConfig) -> None:
    """partial -> regenerate: the failing sections come from the answer, the passing ones stay."""
    from marsrag.llm.replay import ReplayLLM
    from marsrag.runtime.actions import regenerate_sections

    sections = "GRIP: Cold caches after restarts are the common cause.\nPAYOFF: Pre-warm every node before it rejoins."
    runner, run_id = partial_first(store, sample, sections)
    before = store.get_tasks(run_id)[0]
    fixed = regenerate_sections(runner, run_id, "diagnose")
    assert fixed.validation.status == "valid"
    assert fixed.loop_output.grip == "Cold caches after restarts are the common cause."
    assert fixed.loop_output.payoff == "Pre-warm every node before it rejoins."
    assert (fixed.loop_output.hook, fixed.loop_output.loop) == (before.loop_output.hook, before.loop_output.loop)
    assert fixed.attempts[-1].kind == "regenerate" and fixed.attempts[-1].raw == sections
    llm = runner.llm
    assert isinstance(llm, ReplayLLM)
    prompt = json.dumps(llm.calls[-1].messages)
    assert "GRIP, PAYOFF" in prompt and CONTENT["reinforce"] in prompt  # asks the failing, shows the passing
    # Partial under hard mode handed on the fallback; valid now, the same loop is handed on instead.
    assert [(t.transition_mode, t.superseded) for t in store.get_transitions(run_id)] == [
        ("fallback", True),
        ("repair", False),
    ]


def test_regenerate_keeps_what_the_answer_still_gets_wrong(store: RunStore, sample: ProjectConfig) -> None:
    """An answer fixing one of two failing sections leaves the task partial with the other's error."""
    from marsrag.runtime.actions import regenerate_sections

    runner, run_id = partial_first(store, sample, "GRIP: Cold caches after restarts are the common cause.")
    fixed = regenerate_sections(runner, run_id, "diagnose")
    assert fixed.validation.status == "partial"
    assert fixed.loop_output.grip == "Cold caches after restarts are the common cause."
    assert [issue.field for issue in fixed.validation.errors] == ["payoff"]
    # Still partial: the planned handoff (the fallback) is the same, so no transition is re-planned.
    assert [(t.transition_mode, t.superseded) for t in store.get_transitions(run_id)] == [("fallback", False)]


def test_an_llm_failure_is_recorded_and_changes_nothing_else(store: RunStore, sample: ProjectConfig) -> None:
    """The replay LLM runs dry during the repair: a failed attempt says why; output and verdict stay."""
    from marsrag.runtime.actions import repair_task

    runner, run_id = failed_first(store, sample)  # no output left for the action
    before = store.get_tasks(run_id)[0]
    after = repair_task(runner, run_id, "diagnose")
    assert after.validation == before.validation and after.loop_output == before.loop_output
    last = after.attempts[-1]
    assert (last.number, last.kind, last.status, last.errors[0].code) == (
        3,
        "operator_repair",
        "failed",
        "action_failed",
    )
    assert "ReplayExhaustedError" in last.errors[0].message
    assert store.get_tasks(run_id)[0] == after
    assert [t.superseded for t in store.get_transitions(run_id)] == [False]


def test_fixing_the_last_task_changes_the_runs_next_action(store: RunStore, sample: ProjectConfig) -> None:
    """The last task has no outgoing transition: its repair changes the next action, and follow uses it."""
    from marsrag.runtime.actions import repair_task

    project = project_with(sample, ["diagnose"])
    runner = runner_for(store, project, ["No idea.", "No idea.", answer(loop=FIXED_LOOP), *[answer()] * 4])
    run = runner.run("latency", workflow="flow")
    planned = plan_next_action(store.get_tasks(run.run_id))
    assert planned is not None and (planned[1].hook, planned[1].mode) == (FALLBACK_HOOK, "fallback")
    repair_task(runner, run.run_id, "diagnose")
    planned = plan_next_action(store.get_tasks(run.run_id))
    assert planned is not None and (planned[1].hook, planned[1].mode) == (FIXED_LOOP, "repair")
    assert store.get_transitions(run.run_id) == []
    assert runner.follow(run.run_id, workflow="flow").goal == FIXED_LOOP


def test_a_failed_run_is_followed_with_the_fallback_question(store: RunStore, sample: ProjectConfig) -> None:
    """Following a run whose last task failed asks the fallback question (the chain's own rule)."""
    project = project_with(sample, ["diagnose"])
    runner = runner_for(store, project, ["No idea.", "No idea.", *[answer()] * 2])
    run = runner.run("latency", workflow="flow")
    assert runner.follow(run.run_id, workflow="flow").goal == FALLBACK_HOOK
    followed = [e for e in store.get_events(run.run_id) if e.name == "loop.action.followed"]
    assert [(e.validation_status, e.transition_mode) for e in followed] == [("failed", "fallback")]


@pytest.mark.parametrize("action", ["repair", "regenerate"])
def test_actions_refuse_what_they_cannot_fix(store: RunStore, sample: ProjectConfig, action: str) -> None:
    """Unknown run or task, a valid task, a machine-first task: clear errors, nothing stored."""
    from marsrag.runtime.actions import apply_action

    runner, run_id = failed_first(store, sample)
    events = store.get_events(run_id)
    with pytest.raises(RunNotFoundError):
        apply_action(runner, action, "nope", "diagnose")  # type: ignore[arg-type]
    with pytest.raises(TaskNotFoundError, match="no task 'nope'"):
        apply_action(runner, action, run_id, "nope")  # type: ignore[arg-type]
    with pytest.raises(ActionConflictError, match="already valid"):
        apply_action(runner, action, run_id, "recommend")  # type: ignore[arg-type]
    machine = runner_for(store, project_with(sample, ["diagnose"], mode="none"), ["- a fact"])
    machine_run = machine.run("latency", workflow="flow")
    with pytest.raises(ActionConflictError, match="without the contract"):
        apply_action(machine, action, machine_run.run_id, "diagnose")  # type: ignore[arg-type]
    assert store.get_events(run_id) == events


def test_actions_wait_for_a_running_run(store: RunStore, sample: ProjectConfig) -> None:
    """A run still executing (owned by a live process) is not acted on."""
    from marsrag.liveness import owner_id
    from marsrag.runtime.actions import repair_task

    runner, run_id = failed_first(store, sample)
    store.set_run_status(run_id, "running", owner=owner_id())
    with pytest.raises(ActionConflictError, match="still running"):
        repair_task(runner, run_id, "diagnose")


def test_two_racing_repairs_run_exactly_one(store: RunStore, sample: ProjectConfig) -> None:
    """Two repairs of one task at once: one repairs (one LLM call), the other is refused with a conflict."""
    import threading

    from marsrag.llm.replay import ReplayLLM
    from marsrag.runtime.actions import repair_task
    from marsrag.runtime.runner import WorkflowRunner

    project = project_with(sample, ["diagnose", "recommend"])
    outputs = ["No idea.", "No idea.", answer(), answer(loop=FIXED_LOOP), answer(loop="A second repair?")]
    llm = ReplayLLM.from_outputs(outputs)
    runner = WorkflowRunner(store, project, llm)
    run = runner.run("latency", workflow="flow")
    llm.latency = 0.5  # the winner's LLM call outlasts the loser's attempt to start
    barrier, results, errors = threading.Barrier(2), [], []

    def repair() -> None:
        barrier.wait()
        try:
            results.append(repair_task(runner, run.run_id, "diagnose"))
        except ActionConflictError as error:
            errors.append(str(error))

    threads = [threading.Thread(target=repair) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 1 and len(errors) == 1
    assert "already running" in errors[0] or "already valid" in errors[0]
    stored = store.get_tasks(run.run_id)[0]
    assert [a.kind for a in stored.attempts] == ["answer", "repair", "operator_repair"]
    assert llm.remaining == 1  # exactly one repair call was made
