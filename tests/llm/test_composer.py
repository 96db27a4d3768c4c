"""The offline composer: deterministic, grounded in the passages it is given, always a valid LoopOutput."""

from __future__ import annotations

import re

import pytest

from marsrag.contract import validate_output

pytestmark = pytest.mark.crewai

PROMPT = """Current Task: Recommend the fix.
The user's goal: "Checkout latency breached the SLO after cache restarts"

The previous step handed over this question or action; open your HOOK with it: "Which cache tier should we pre-warm first?"

Sources retrieved for this step:
[kb/runbooks/prewarm.md#Steps] Pre-warm each cache node from the latest snapshot before it rejoins the pool. A pre-warmed node reaches a 95% hit rate in about two minutes.
[kb/incidents/cold-cache.md#Root cause] Every breach started within ten minutes of a cache node restart. Cold caches sent all reads to the database.
[kb/practices/slo.md#Error budgets] The checkout SLO is 99.9% of requests under 300 ms at p95 in each region.
"""  # noqa: E501


def compose(prompt: str, task: str = "recommend") -> dict[str, str]:
    from marsrag.llm.composer import compose as compose_answer

    return compose_answer(prompt, task)


def test_answer_is_a_valid_loop_output_grounded_in_the_passages() -> None:
    """All five sections are valid; every citation names a passage that was given."""
    answer = compose(PROMPT)
    assert validate_output(answer).status == "valid"
    cited = set(re.findall(r"\[([^\]]+)\]", answer["reinforce"] + answer["loop"]))
    assert cited and cited <= {
        "kb/runbooks/prewarm.md#Steps",
        "kb/incidents/cold-cache.md#Root cause",
        "kb/practices/slo.md#Error budgets",
    }


def test_handed_over_hook_is_used_verbatim() -> None:
    """The hook the previous step handed over opens the answer (next.hook = prior.loop)."""
    assert compose(PROMPT)["hook"] == "Which cache tier should we pre-warm first?"


def test_payoff_is_an_action_and_the_loop_points_at_unused_evidence() -> None:
    """The payoff recommends an action from the evidence; the loop asks about a passage not used yet."""
    answer = compose(PROMPT)
    assert "Pre-warm each cache node" in answer["payoff"]
    assert "Error budgets" in answer["loop"]


def test_deterministic_and_different_per_task() -> None:
    """The same prompt gives the same answer; another task gives another loop."""
    assert compose(PROMPT) == compose(PROMPT)
    assert compose(PROMPT, "plan")["payoff"] != compose(PROMPT, "recommend")["payoff"]


def test_without_evidence_it_still_answers_validly_and_says_so() -> None:
    """No passages: a valid answer that says no sources were found, with a loop per task."""
    prompt = 'The user\'s goal: "Checkout is slow"'
    first, second = compose(prompt, "diagnose"), compose(prompt, "plan")
    assert validate_output(first).status == "valid"
    assert "No sources" in first["grip"] and "No sources" in first["reinforce"]
    assert first["loop"] != second["loop"]


def test_composer_is_a_crewai_llm_answering_json() -> None:
    """As a crewai.BaseLLM it answers JSON that validates, without any network."""
    from marsrag.llm.composer import OfflineComposer

    llm = OfflineComposer(model="offline-composer")
    assert validate_output(llm.call([{"role": "user", "content": PROMPT}])).status == "valid"
    assert llm.supports_function_calling() is False
