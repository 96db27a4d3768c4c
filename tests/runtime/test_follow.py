"""Sessions: following a run's next action starts the next run of the session with its final loop as goal."""

from __future__ import annotations

import json

import pytest

from marsrag.errors import InputError
from marsrag.store import RunStore
from marsrag.tasks import ProjectConfig
from tests.contract.samples import CONTENT
from tests.runtime.conftest import project_with

pytestmark = pytest.mark.crewai


def runner_for(store: RunStore, project: ProjectConfig, outputs: list[str]) -> object:
    from marsrag.llm.replay import ReplayLLM
    from marsrag.runtime.runner import WorkflowRunner

    return WorkflowRunner(store, project, ReplayLLM.from_outputs(outputs))


def test_follow_uses_the_final_loop_and_the_routed_workflow(store: RunStore, sample: ProjectConfig) -> None:
    """The next run: same session, goal = final loop, workflow = the routed next_workflow; event recorded."""
    loop = "Should we roll out in stages with a checkpoint and a rollback?"
    outputs = [json.dumps(CONTENT), json.dumps({**CONTENT, "loop": loop})] + [json.dumps(CONTENT)] * 2
    runner = runner_for(store, project_with(sample, ["diagnose", "recommend"]), outputs)
    first = runner.run("latency", workflow="flow")  # type: ignore[attr-defined]
    second = runner.follow(first.run_id)  # type: ignore[attr-defined]
    assert (second.session_id, second.goal, second.workflow) == (first.session_id, loop, "change_review")
    assert second.status == "completed"
    followed = [e for e in store.get_events(first.run_id) if e.name == "loop.action.followed"]
    assert [(e.task_id, e.validation_status) for e in followed] == [("recommend", "valid")]
    assert [run.run_id for run in store.list_runs(session_id=first.session_id)] == [second.run_id, first.run_id]


def test_an_explicit_workflow_wins(store: RunStore, sample: ProjectConfig) -> None:
    """--workflow overrides the routed one."""
    runner = runner_for(store, project_with(sample, ["diagnose"]), [json.dumps(CONTENT)] * 4)
    first = runner.run("latency", workflow="flow")  # type: ignore[attr-defined]
    assert runner.follow(first.run_id, workflow="flow").workflow == "flow"  # type: ignore[attr-defined]


def test_a_run_without_a_loop_cannot_be_followed(store: RunStore, sample: ProjectConfig) -> None:
    """A machine-first run has no next action: a clear InputError."""
    runner = runner_for(store, project_with(sample, ["diagnose"], mode="none"), ["- a fact"])
    first = runner.run("latency", workflow="flow")  # type: ignore[attr-defined]
    with pytest.raises(InputError, match="no next action to follow"):
        runner.follow(first.run_id)  # type: ignore[attr-defined]


def followed_events(store: RunStore, run_id: str) -> list[dict[str, object] | None]:
    return [e.detail for e in store.get_events(run_id) if e.name == "loop.action.followed"]


def test_a_follow_as_offered_is_suggested(store: RunStore, sample: ProjectConfig) -> None:
    """Without a goal, or with the next action itself (spaces around it), the follow is suggested."""
    runner = runner_for(store, project_with(sample, ["diagnose"]), [json.dumps(CONTENT)] * 2)
    plain = runner.run("latency", workflow="flow")  # type: ignore[attr-defined]
    assert runner.start_follow(plain.run_id).goal == CONTENT["loop"]  # type: ignore[attr-defined]
    assert followed_events(store, plain.run_id) == [{"follow_kind": "suggested"}]
    same = runner.run("latency", workflow="flow")  # type: ignore[attr-defined]
    again = runner.start_follow(same.run_id, goal=f"  {CONTENT['loop']}\r\n")  # type: ignore[attr-defined]
    assert again.goal == CONTENT["loop"]
    assert followed_events(store, same.run_id) == [{"follow_kind": "suggested"}]


def test_a_follow_with_the_users_own_goal_is_edited(store: RunStore, sample: ProjectConfig) -> None:
    """A goal that differs from the next action: the new run asks it, and the event says edited."""
    runner = runner_for(store, project_with(sample, ["diagnose"]), [json.dumps(CONTENT)] * 2)
    first = runner.run("latency", workflow="flow")  # type: ignore[attr-defined]
    mine = "Which caches should be pre-warmed first?"
    second = runner.follow(first.run_id, goal=f" {mine} ")  # type: ignore[attr-defined]
    assert (second.goal, second.followed_from, second.status) == (mine, first.run_id, "completed")
    assert followed_events(store, first.run_id) == [{"follow_kind": "edited"}]


def test_a_blank_edited_goal_is_refused_and_nothing_is_followed(store: RunStore, sample: ProjectConfig) -> None:
    """The goal rules apply to the edit: blank is an InputError, no event and no run are stored."""
    runner = runner_for(store, project_with(sample, ["diagnose"]), [json.dumps(CONTENT)])
    first = runner.run("latency", workflow="flow")  # type: ignore[attr-defined]
    with pytest.raises(InputError, match="blank"):
        runner.start_follow(first.run_id, goal=" \n ")  # type: ignore[attr-defined]
    assert followed_events(store, first.run_id) == []
    assert len(store.list_runs(session_id=first.session_id)) == 1
