"""The flow the tests kick off: diagnose, recommend, then a router on recommend's loop to plan or escalate."""

from __future__ import annotations

import json
from typing import Any

from marsrag.flows import LoopFlow, StepRecord, listen, persist, router, start
from tests.contract.samples import CONTENT

#: What each route is for: the router matches recommend's loop against these words.
ROUTES = {
    "rollout": "plan the staged rollout of the fix with owners, checkpoints and a rollback",
    "escalate": "escalate to the incident commander and page the on-call owner",
}
TO_ROLLOUT = "Who owns each staged rollout checkpoint, and what is the rollback?"
TO_ESCALATE = "Should we page the incident commander now?"


def answer(**changes: Any) -> str:
    """A JSON answer: the sample content with ``changes`` (None drops a field)."""
    return json.dumps({k: v for k, v in {**CONTENT, **changes}.items() if v is not None})


def triage_flow(name: str) -> type[LoopFlow]:
    """A fresh TriageFlow class named ``name`` (CrewAI 1.15 reads a flow's methods from its own class only, so a
    subclass of a flow would have none: a variant, such as one under ``@persist``, is built anew)."""

    class TriageFlow(LoopFlow):
        """Three contract steps and a router: diagnose -> recommend -> (plan | page)."""

        @start()
        def diagnose(self) -> StepRecord:
            return self.contract_step("diagnose", agent="analyst", description="Diagnose the problem behind: {goal}.")

        @listen(diagnose)
        def recommend(self) -> StepRecord:
            return self.contract_step("recommend", agent="advisor", description="Recommend the fix for: {goal}.")

        @router(recommend)
        def choose(self) -> str:
            return self.route_on_loop(ROUTES, default="escalate")

        @listen("rollout")
        def plan(self) -> StepRecord:
            return self.contract_step("plan", agent="planner", description="Plan the rollout of the fix for: {goal}.")

        @listen("escalate")
        def page(self) -> StepRecord:
            return self.contract_step("escalate", agent="advisor", description="Write the escalation for: {goal}.")

    TriageFlow.__name__ = TriageFlow.__qualname__ = name
    return TriageFlow


TriageFlow = triage_flow("TriageFlow")
#: TriageFlow under CrewAI's ``@persist``: a snapshot of its state after every method.
PersistedTriageFlow = persist()(triage_flow("PersistedTriageFlow"))
