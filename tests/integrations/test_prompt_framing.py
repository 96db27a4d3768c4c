"""How a contract task's prompt frames the template for small models (issue 38).

The template stays word for word; the prompt says the five lines are not the answer, shows an example from an
unrelated domain, gives the sources first and the goal last, once, right before the answer is asked for.
"""

from __future__ import annotations

import json
import re

import pytest

from marsrag.chain.briefing import ANSWER_NOW, GOAL_PREFIX, SOURCES_HEADING, SUPPORT_PREFIX, briefing
from marsrag.contract import EXPECTED_OUTPUT_TEMPLATE, INSTRUCTIONS_NOT_ANSWER, validate_output
from marsrag.contract.example import WORKED_EXAMPLE
from marsrag.contract.template import render_example
from marsrag.state import Support
from marsrag.tasks import ProjectConfig
from marsrag.tokens import words
from tests.integrations.conftest import VALID

pytestmark = pytest.mark.crewai

GOAL = "Checkout latency breached its SLO in three regions right after cache nodes restarted. What should we do?"
RESULTS = [
    {"source": "runbooks/cache.md#Warm-up", "text": "Pre-warm each node from a snapshot before it rejoins."},
    {"source": "incidents/inc-41.md#Root cause", "text": "Restarted nodes rejoined the ring empty."},
]
#: The sample workflow's first task prompt, estimated at four characters a token: 1,325 before issue 38's
#: framing, 1,447 after it. A bound, so that the framing stays lean.
MAX_FIRST_PROMPT_TOKENS = 1_500


def first_prompt(project: ProjectConfig) -> str:
    """The messages of the first LLM call of a sample run over the shipped knowledge base, as one text."""
    from marsrag.integrations.crewai_builders import build_crew
    from marsrag.llm.replay import ReplayLLM

    llm = ReplayLLM.from_outputs([VALID] * 3)
    built = build_crew(project, "support_answer", llm)
    built.tasks[0].task.description += "\n\n" + briefing(
        GOAL, None, RESULTS, asked=[GOAL], support=Support(level="strong", score=0.9), goal_line=False
    )
    built.kickoff({"goal": GOAL})
    return "\n".join(str(message["content"]) for message in llm.calls[0].messages)  # type: ignore[attr-defined]


def test_the_expected_output_frames_the_template_and_ends_with_the_goal(sample_project: ProjectConfig) -> None:
    """The example, the framing line, the template word for word, the format, then the goal and the request."""
    from marsrag.integrations.crewai_builders import build_crew
    from marsrag.llm.replay import ReplayLLM

    expected = build_crew(sample_project, "support_answer", ReplayLLM.from_outputs([])).tasks[0].task.expected_output
    assert expected.startswith(render_example())
    assert f"{INSTRUCTIONS_NOT_ANSWER}\n{EXPECTED_OUTPUT_TEMPLATE}" in expected
    assert expected.index(json.dumps(WORKED_EXAMPLE)) < expected.index(EXPECTED_OUTPUT_TEMPLATE)
    assert expected.endswith(f'{GOAL_PREFIX} "{{goal}}"\n{ANSWER_NOW}')


def test_the_prompt_gives_sources_first_and_the_goal_last_once(sample_project: ProjectConfig) -> None:
    """Sources, support line, example, template, goal: in that order; the goal line once, near the end."""
    prompt = first_prompt(sample_project)
    order = [
        prompt.index(SOURCES_HEADING),
        prompt.index(SUPPORT_PREFIX),
        prompt.index(WORKED_EXAMPLE["hook"]),
        prompt.index(EXPECTED_OUTPUT_TEMPLATE.splitlines()[0]),
        prompt.index(f'{GOAL_PREFIX} "{GOAL}"'),
    ]
    assert order == sorted(order)
    assert prompt.count(GOAL_PREFIX) == 1
    assert len(prompt) - prompt.index(f'{GOAL_PREFIX} "{GOAL}"') < 400
    assert "Already asked" not in prompt  # the goal itself is not listed as asked


def test_the_first_prompt_stays_lean(sample_project: ProjectConfig) -> None:
    """Four characters a token: the framing adds about a hundred tokens, not more."""
    assert len(first_prompt(sample_project)) // 4 <= MAX_FIRST_PROMPT_TOKENS


def test_the_briefing_states_the_goal_last_unless_the_task_does() -> None:
    """Without an expected output that asks for it, the briefing ends with the goal; with one, it leaves it out."""
    text = briefing(GOAL, "Which snapshot?", RESULTS, asked=["Earlier goal"], support=Support(level="weak", score=0.3))
    assert text.index(SOURCES_HEADING) < text.index(SUPPORT_PREFIX) < text.index("Earlier goal")
    assert text.index("open your HOOK with it") < text.index(GOAL_PREFIX)
    assert text.endswith(f'{GOAL_PREFIX} "{GOAL}"')
    assert GOAL_PREFIX not in briefing(GOAL, None, RESULTS, goal_line=False)


@pytest.mark.parametrize(
    "goal",
    [GOAL, "Payments started failing with TLS handshake errors this morning", "How do we roll out a config change?"],
)
def test_composed_answers_never_copy_the_example(goal: str) -> None:
    """Answers from the full prompt (example included) are valid and share no example-only word."""
    from marsrag.contract import render_example
    from marsrag.llm.composition import compose

    prompt = f'{briefing(goal, None, RESULTS, goal_line=False)}\n\n{render_example()}\n\n{GOAL_PREFIX} "{goal}"'
    answer = compose(prompt, "diagnose")
    assert validate_output(answer).ok
    example_only = set(words(" ".join(WORKED_EXAMPLE.values()))) - set(words(f"{goal} {json.dumps(RESULTS)}"))
    used = set(words(" ".join(answer.values())))
    assert not (used & {word for word in example_only if re.fullmatch(r"[a-z]{5,}", word)})


def test_a_structured_request_through_a_crew_shows_the_draft_and_quotes_only_what_passed(
    sample_project: ProjectConfig,
) -> None:
    """A real crew at the LLM boundary (auto: json_schema): the first call shows the draft of its own sources right
    before the goal, without the example; the repair quotes the failed answer without its echoed line."""
    from marsrag.integrations.crewai_builders import build_crew
    from marsrag.llm.boundary import make_resilient
    from marsrag.llm.framing import DRAFT_HEADING
    from marsrag.llm.replay import ReplayLLM
    from marsrag.llm.resilient import CallPolicy
    from tests.contract.samples import CONTENT

    echo = EXPECTED_OUTPUT_TEMPLATE.splitlines()[0].split(": ", 1)[1]
    llm = make_resilient(
        ReplayLLM.from_outputs([json.dumps({**CONTENT, "hook": echo}), VALID, VALID, VALID]),
        CallPolicy(timeout=30, retries=0, backoff=0),
    )
    built = build_crew(sample_project, "support_answer", llm)
    built.tasks[0].task.description += "\n\n" + briefing(
        GOAL, None, RESULTS, support=Support(level="strong", score=0.9), goal_line=False
    )
    built.kickoff({"goal": GOAL})
    first, repair = ("\n".join(str(m["content"]) for m in call.messages) for call in llm.calls[:2])
    assert llm.calls[0].structured_output == "json_schema"
    assert first.index(DRAFT_HEADING) < first.index(f'{GOAL_PREFIX} "{GOAL}"') < first.index(ANSWER_NOW)
    drafted = json.loads(first.split(DRAFT_HEADING + "\n", 1)[1].split("\n", 1)[0])
    assert validate_output(drafted).status == "valid" and "[1]" in json.dumps(drafted)
    assert json.dumps(WORKED_EXAMPLE) not in first and EXPECTED_OUTPUT_TEMPLATE in first
    assert "### Previous result:" in repair and repair.count(echo) == 1  # the template's line, not the copy
    assert f"PAYOFF: {CONTENT['payoff']}" in repair
