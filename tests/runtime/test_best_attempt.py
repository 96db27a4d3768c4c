"""The best attempt is what a task ends with: in a run, and after an operator action (real crews, real SQLite)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from marsrag.state import FALLBACK_HOOK
from marsrag.store import RunStore
from marsrag.tasks import ProjectConfig
from tests.contract.samples import CONTENT
from tests.runtime.conftest import project_with

pytestmark = pytest.mark.crewai

UNPARSEABLE = "I could not work out an answer this time."


def answer(**changes: Any) -> str:
    return json.dumps({k: v for k, v in {**CONTENT, **changes}.items() if v is not None})


def runner_for(store: RunStore, project: ProjectConfig, outputs: list[str]) -> Any:
    from marsrag.llm.replay import ReplayLLM
    from marsrag.runtime.runner import WorkflowRunner

    return WorkflowRunner(store, project, ReplayLLM.from_outputs(outputs))


def test_a_failed_repair_keeps_the_partial_answer(store: RunStore, sample: ProjectConfig) -> None:
    """Hard: partial answer (grip empty), unparseable repair -> the answer's fields and verdict are the task's."""
    runner = runner_for(
        store, project_with(sample, ["diagnose", "recommend"]), [answer(grip=""), UNPARSEABLE, answer()]
    )
    run = runner.run("API latency SLO breaches", workflow="flow")
    assert run.status == "completed", run.status_reason
    first = store.get_tasks(run.run_id)[0]
    assert [(a.number, a.kind, a.status) for a in first.attempts] == [
        (1, "answer", "partial"),
        (2, "repair", "failed"),
    ]
    assert first.attempts[1].raw == UNPARSEABLE
    assert first.validation.status == "partial"
    assert [(e.field, e.code) for e in first.validation.errors] == [("grip", "empty")]
    kept = first.loop_output
    assert (kept.hook, kept.payoff, kept.reinforce, kept.loop) == tuple(
        CONTENT[name] for name in ("hook", "payoff", "reinforce", "loop")
    )
    assert CONTENT["payoff"] in first.rendered
    # Planned from the kept partial (grip failed), not from the unparseable repair (every field failed).
    transition = store.get_transitions(run.run_id)[0]
    assert (transition.transition_mode, transition.hook) == ("fallback", FALLBACK_HOOK)
    assert transition.transition_reason == "fields grip failed after repair"
    assert CONTENT["payoff"] in (store.get_run(run.run_id).summary or "")


def test_soft_mode_hands_on_the_loop_of_the_kept_answer(store: RunStore, sample: ProjectConfig) -> None:
    """Soft: a failed answer whose loop passes beats an unparseable repair; its loop is the next hook (repair)."""
    thin = answer(grip=None, payoff=None, reinforce=None, loop="Which cache tier do we pre-warm first?")
    runner = runner_for(
        store, project_with(sample, ["diagnose", "recommend"], mode="soft"), [thin, UNPARSEABLE, answer()]
    )
    run = runner.run("API latency SLO breaches", workflow="flow")
    first, second = store.get_tasks(run.run_id)
    assert [(a.kind, a.status) for a in first.attempts] == [("answer", "failed"), ("repair", "failed")]
    assert first.validation.status == "failed" and first.loop_output.loop == "Which cache tier do we pre-warm first?"
    transition = store.get_transitions(run.run_id)[0]
    assert (transition.transition_mode, transition.hook) == ("repair", "Which cache tier do we pre-warm first?")
    assert (second.loop_output.hook, second.hook_source) == ("Which cache tier do we pre-warm first?", "repair")


def test_a_repair_as_good_as_the_answer_is_kept(store: RunStore, sample: ProjectConfig) -> None:
    """Both partial with four passing fields: the later one (the repair) wins the tie."""
    runner = runner_for(
        store, project_with(sample, ["diagnose", "recommend"]), [answer(grip=""), answer(payoff=""), answer()]
    )
    run = runner.run("API latency SLO breaches", workflow="flow")
    first = store.get_tasks(run.run_id)[0]
    assert [(a.kind, a.status) for a in first.attempts] == [("answer", "partial"), ("repair", "partial")]
    assert (first.loop_output.grip, first.loop_output.payoff) == (CONTENT["grip"], "")
    assert [(e.field, e.code) for e in first.validation.errors] == [("payoff", "empty")]


def test_a_worse_repair_with_fewer_passing_fields_is_not_kept(store: RunStore, sample: ProjectConfig) -> None:
    """Both partial, the repair with one field fewer passing: the answer stays."""
    outputs = [answer(grip=""), answer(grip="", payoff=""), answer()]
    runner = runner_for(store, project_with(sample, ["diagnose", "recommend"]), outputs)
    run = runner.run("API latency SLO breaches", workflow="flow")
    first = store.get_tasks(run.run_id)[0]
    assert first.loop_output.payoff == CONTENT["payoff"]
    assert [(e.field, e.code) for e in first.validation.errors] == [("grip", "empty")]


def test_an_operator_repair_that_fails_keeps_the_stored_partial_output(store: RunStore, sample: ProjectConfig) -> None:
    """A stored partial task, an operator repair answered twice unparseably: output and verdict stay, attempts grow."""
    from marsrag.runtime.actions import repair_task

    broken = answer(grip="", payoff="")
    runner = runner_for(
        store, project_with(sample, ["diagnose", "recommend"]), [broken, broken, answer(), UNPARSEABLE, UNPARSEABLE]
    )
    run = runner.run("API latency SLO breaches", workflow="flow")
    before = store.get_tasks(run.run_id)[0]
    assert before.validation.status == "partial"
    transitions_before = store.get_transitions(run.run_id)

    after = repair_task(runner, run.run_id, "diagnose")
    assert after.validation == before.validation and after.loop_output == before.loop_output
    assert after.rendered == before.rendered and after.routing == before.routing
    assert [(a.number, a.kind, a.status) for a in after.attempts] == [
        (1, "answer", "partial"),
        (2, "repair", "partial"),
        (3, "operator_repair", "failed"),
        (4, "operator_repair", "failed"),
    ]
    assert store.get_tasks(run.run_id)[0] == after
    assert store.get_transitions(run.run_id) == transitions_before  # nothing re-planned: the task did not change
    names = [e.name for e in store.get_events(run.run_id)]
    assert names[-2:] == ["loop.contract.failed", "loop.contract.failed"]
