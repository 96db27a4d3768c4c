"""A support flow on CrewAI Flows under the Loop Contract: diagnose, recommend, then plan or escalate.

Three contract steps and a router on the recommendation's loop, stored as one MarsRAG run (its steps are the
run's tasks: ``marsrag runs show RUN_ID`` shows them). Runs offline with the offline composer by default::

    python examples/flows/support_flow.py "API latency SLO breaches" --db sqlite:///runs.db
    python examples/flows/support_flow.py "..." --llm replay:examples/flows/replay.jsonl
    python examples/flows/support_flow.py --resume RUN_ID --db sqlite:///runs.db

The run id is the last line of stdout.
"""

from __future__ import annotations

import argparse
import sys

from marsrag.flows import LoopFlow, StepRecord, listen, router, start
from marsrag.llm.select import resolve_llm
from marsrag.store import open_store
from marsrag.tasks import load_config, sample_config_dir

#: Where recommend's loop can lead: the router matches the loop's words against these.
ROUTES = {
    "rollout": "plan the staged rollout of the fix with owners, checkpoints and a rollback",
    "escalate": "escalate to the incident commander and page the on-call owner",
}


class SupportFlow(LoopFlow):
    """Diagnose -> recommend -> (plan the rollout | escalate), each step a Loop Contract task."""

    @start()
    def diagnose(self) -> StepRecord:
        return self.contract_step(
            "diagnose", agent="analyst", description="Diagnose the problem behind this goal: {goal}."
        )

    @listen(diagnose)
    def recommend(self) -> StepRecord:
        return self.contract_step("recommend", agent="advisor", description="Recommend the fix for: {goal}.")

    @router(recommend)
    def next_move(self) -> str:
        return self.route_on_loop(ROUTES, default="rollout")

    @listen("rollout")
    def plan(self) -> StepRecord:
        return self.contract_step(
            "plan", agent="planner", description="Plan the rollout of the fix for: {goal}, with a rollback."
        )

    @listen("escalate")
    def page(self) -> StepRecord:
        return self.contract_step(
            "escalate", agent="advisor", description="Write the escalation to the incident commander for: {goal}."
        )


def main(argv: list[str] | None = None) -> int:
    """Run (or resume) the flow; print each step's verdict, then the run id on the last line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("goal", nargs="?", help="what the user asks")
    parser.add_argument("--db", default=None, help="run store URL (default: MarsRAG's default store)")
    parser.add_argument("--llm", default=None, help="LLM spec as `marsrag run --llm` takes (default: composer)")
    parser.add_argument("--resume", metavar="RUN_ID", default=None, help="continue a stopped run of this flow")
    args = parser.parse_args(argv)
    if not args.goal and not args.resume:
        parser.error("give a GOAL, or --resume RUN_ID")
    with open_store(args.db) as store:
        flow = SupportFlow(
            store=store, llm=resolve_llm(args.llm), project=load_config(sample_config_dir()), suppress_flow_events=True
        )
        try:
            flow.kickoff(inputs={"run_id": args.resume} if args.resume else {"goal": args.goal})
        finally:
            for step in flow.state.steps:
                print(f"{step.task_id}: {step.validation_status} ({step.hook_source}) -> {step.route or '-'}")
            if flow.run_id:
                print(flow.run_id)
    return 0


if __name__ == "__main__":
    sys.exit(main())
