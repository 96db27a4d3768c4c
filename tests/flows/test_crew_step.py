"""A whole crew as one Flow step (``crew_step``): the crew's tasks chained inside it, the step stored as one task."""

from __future__ import annotations

import json

import pytest

from marsrag.flows import LoopFlow, StepRecord, listen, start
from marsrag.store import RunStore
from marsrag.tasks import ProjectConfig
from tests.flows.triage import answer

pytestmark = pytest.mark.crewai

INNER_LOOP = "Which staged rollout checkpoint should we gate on first?"
STEP_LOOP = "Who signs off the rollback plan before Friday?"


class ReviewFlow(LoopFlow):
    """The sample config's change_review workflow (recommend, plan) as one step, then a contract step."""

    @start()
    def review(self) -> StepRecord:
        return self.crew_step("review", workflow="change_review")

    @listen(review)
    def summarize(self) -> StepRecord:
        return self.contract_step("summarize", agent="advisor", description="Summarize the review of: {goal}.")


def test_a_crew_step_chains_its_tasks_inside_and_is_stored_as_one_step(store: RunStore, sample: ProjectConfig) -> None:
    """recommend's loop opens plan inside the crew; the step (plan's answer) is one stored task, chained onward."""
    from marsrag.llm.boundary import make_resilient
    from marsrag.llm.replay import ReplayLLM

    llm = make_resilient(ReplayLLM.from_outputs([answer(loop=INNER_LOOP), answer(loop=STEP_LOOP), answer()]))
    flow = ReviewFlow(store=store, llm=llm, project=sample, suppress_flow_events=True)
    flow.kickoff(inputs={"goal": "Roll out the cache pre-warming fix"})
    run = flow.run
    assert run is not None and run.status == "completed"
    assert [call.task for call in llm.calls] == ["recommend", "plan", "summarize"]
    # Inside the crew the chain rule holds: plan was briefed with recommend's loop as its hook.
    assert INNER_LOOP in json.dumps(llm.calls[1].messages)
    tasks = store.get_tasks(run.run_id)
    assert [(t.task_id, t.validation.status) for t in tasks] == [("review", "valid"), ("summarize", "valid")]
    assert tasks[0].loop_output.loop == STEP_LOOP  # the step's answer is the crew's last contract task's
    [transition] = store.get_transitions(run.run_id)
    assert (transition.transition_mode, transition.hook) == ("direct", STEP_LOOP)
    assert tasks[1].loop_output.hook == STEP_LOOP
