"""Routing on the loop: deterministic lexical ranking of agents, tools and workflows."""

from __future__ import annotations

import pytest

from marsrag.runtime.routing import Candidate, LexicalRouter, project_candidates
from marsrag.tasks import load_config, sample_config_dir

PROJECT = load_config(sample_config_dir())
CANDIDATES = project_candidates(PROJECT)


def test_sample_project_registers_three_candidates_of_each_kind() -> None:
    """Agents, tools and workflows of the sample config are all candidates."""
    kinds = [candidate.kind for candidate in CANDIDATES]
    assert kinds.count("agent") >= 3 and kinds.count("tool") >= 3 and kinds.count("workflow") >= 3


@pytest.mark.parametrize(
    ("loop", "agent", "tool", "workflow"),
    [
        (
            "Which evidence best explains the root cause of the latency errors per region?",
            "analyst",
            "latency_dashboard",
            None,
        ),
        (
            "Should we roll out in stages with a checkpoint and a rollback?",
            "planner",
            "runbook_search",
            "change_review",
        ),
        ("Which fix removes the cause at the lowest risk and cost?", "advisor", None, "support_answer"),
        (
            "Were there recent deployments or configuration changes before the restart?",
            "advisor",
            "deploy_history",
            "change_review",
        ),
        ("Can we extract the plain facts for internal indexing?", None, None, "fact_extraction"),
    ],
)
def test_different_loops_route_to_different_targets(
    loop: str, agent: str | None, tool: str | None, workflow: str | None
) -> None:
    """Each loop routes to the agent, tool and workflow whose words it shares most."""
    routing = LexicalRouter().route(loop, CANDIDATES)
    assert (routing.next_agent, routing.next_tool, routing.next_workflow) == (agent, tool, workflow)


def test_routing_is_deterministic_and_ties_go_to_the_first_registered() -> None:
    """Equal scores pick the candidate registered first; no shared word means no route."""
    candidates = [Candidate("agent", "first", "cache expert"), Candidate("agent", "second", "cache expert")]
    router = LexicalRouter()
    assert router.route("the cache", candidates).next_agent == "first"
    assert router.route("completely unrelated words", candidates).next_agent is None
