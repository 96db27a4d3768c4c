"""How a structured request frames a contract task's prompt: the draft before the goal line, no worked example."""

from __future__ import annotations

import json

import pytest

from marsrag.chain.briefing import ANSWER_REQUEST, GOAL_PREFIX, briefing
from marsrag.contract import EXPECTED_OUTPUT_TEMPLATE, INSTRUCTIONS_NOT_ANSWER, render_example, validate_output
from marsrag.llm.composition import compose
from marsrag.llm.framing import DRAFT_HEADING, NOTHING_PASSED, draft, framed, passing_only
from marsrag.llm.structured import ladder
from marsrag.state import Support

GOAL = "The nightly backup job to the archive bucket failed twice this week. What should we do?"
RESULTS = [
    {
        "ref": 1,
        "source": "runbooks/backups.md#When a backup fails",
        "text": "Rerun the failed backup by hand with the same snapshot id. Check that the archive bucket "
        "accepts writes from the backup role before the rerun.",
    },
    {
        "ref": 2,
        "source": "incidents/inc-7.md#Root cause",
        "text": "The backup role lost write access to the archive bucket after a policy change.",
    },
]


def messages(support: str = "strong", *, sources: bool = True, goal: str = GOAL) -> list[dict[str, str]]:
    """A contract task's messages as CrewAI sends them: the briefing, then the framed template and the goal."""
    brief = briefing(goal, None, RESULTS if sources else [], support=Support(level=support, score=0.5),  # type: ignore[arg-type]
                     goal_line=False)  # fmt: skip
    expected = "\n\n".join(
        [render_example(), f"{INSTRUCTIONS_NOT_ANSWER}\n{EXPECTED_OUTPUT_TEMPLATE}", ANSWER_REQUEST.format(goal=goal)]
    )
    user = f"Current Task: Diagnose this.\n\n{brief}\n\nThis is the expected criteria for your final answer: {expected}"
    return [{"role": "system", "content": "You are an analyst."}, {"role": "user", "content": user}]


def shown_draft(text: str) -> dict[str, str]:
    """The draft a prompt shows, parsed."""
    after = text.split(DRAFT_HEADING + "\n", 1)[1]
    return json.loads(after.split("\n", 1)[0])  # type: ignore[no-any-return]


@pytest.mark.parametrize("mode", ["json_schema", "json_object", "grammar"])
def test_a_structured_request_shows_the_draft_right_before_the_goal_without_the_example(mode: str) -> None:
    """The draft is what composing the same prompt gives; it sits before the goal line; the template stays."""
    original = messages()
    offer = next(offer for offer in ladder(mode) if offer.mode == mode)
    sent = framed(original, offer)
    user = sent[1]["content"]
    assert user.index(DRAFT_HEADING) < user.index(f'{GOAL_PREFIX} "{GOAL}"')
    assert user.endswith(ANSWER_REQUEST.format(goal=GOAL))
    assert EXPECTED_OUTPUT_TEMPLATE in user and render_example() not in user
    prompt = "\n".join(message["content"] for message in original)
    assert shown_draft(user) == compose(prompt, "current")
    assert original[1]["content"] != user and sent[0] is original[0]  # a copy; the input list is left as it was


def test_the_draft_is_a_valid_grounded_answer_at_each_support_level() -> None:
    """Strong and weak: cited sentences of the sources; none: says the knowledge base does not cover it."""
    schema = ladder("json_schema")[0]
    for support in ("strong", "weak", "none"):
        answer = shown_draft(framed(messages(support), schema)[1]["content"])
        assert validate_output(answer).status == "valid", (support, answer)
        if support == "none":
            assert "does not cover" in answer["grip"] + answer["payoff"] and "[" not in answer["payoff"]
        else:
            assert "[1]" in json.dumps(answer) or "[2]" in json.dumps(answer)


def test_plain_json_mode_shows_the_draft_too_and_drops_the_example() -> None:
    """OpenAI's JSON mode does not enforce the form; the draft shows it, about this goal, so the example goes."""
    plain = [offer for offer in ladder("auto") if offer.mode == "json_object" and not offer.enforces_form][0]
    user = framed(messages(), plain)[1]["content"]
    assert DRAFT_HEADING in user and render_example() not in user


def test_nothing_to_draft_from_leaves_the_prompt_as_it_was_unless_the_decoder_enforces_the_form() -> None:
    """No sources (an agent searching with its own tools): no draft; the example goes only under an enforcing offer."""
    original = messages(sources=False)
    schema, _, plain, prompt = ladder("auto")
    assert draft("\n".join(m["content"] for m in original)) is None
    assert framed(original, plain) is original and framed(original, prompt) is original
    assert framed(original, None) is original
    user = framed(original, schema)[1]["content"]
    assert DRAFT_HEADING not in user and render_example() not in user


def test_framed_messages_drop_the_example_only_under_an_enforcing_offer_and_copy_the_list() -> None:
    """The example goes with the blank line after it; other messages, other content and the input list stay."""
    user = f"Task.\n\nThis is the expected criteria for your final answer: {render_example()}\n\nThe five lines..."
    original = [{"role": "system", "content": "You are an analyst."}, {"role": "user", "content": user}]
    schema, _, plain, prompt = ladder("auto")
    sent = framed(original, schema)
    assert sent[0] is original[0] and sent[1]["role"] == "user"
    assert sent[1]["content"] == "Task.\n\nThis is the expected criteria for your final answer: The five lines..."
    assert original[1]["content"] == user  # unchanged in place
    assert framed(original, plain) is original and framed(original, prompt) is original
    assert framed("a prompt as one string", schema) == "a prompt as one string"
    parts = [{"role": "user", "content": [{"type": "text", "text": user}]}]  # content parts: left as they are
    assert framed(parts, schema) == parts


def repair_request(previous: str) -> list[dict[str, str]]:
    """A repair request as CrewAI words it (its own validation_error text), quoting ``previous``."""
    from crewai.utilities.i18n import I18N_DEFAULT

    retry = I18N_DEFAULT.errors("validation_error").format(guardrail_result_error="grip failed", task_output=previous)
    original = messages()
    return [original[0], {"role": "user", "content": f"{original[1]['content']}\n\nThis is the context: {retry}"}]


@pytest.mark.crewai
def test_a_repair_request_quotes_only_the_sections_of_the_failed_answer_that_passed() -> None:
    """An echoed template line is not quoted back to be copied again; the sections that passed are, labelled."""
    from tests.contract.samples import CONTENT

    echo = EXPECTED_OUTPUT_TEMPLATE.splitlines()[1].split(": ", 1)[1]
    user = framed(repair_request(json.dumps({**CONTENT, "grip": echo})), ladder("json_schema")[0])[1]["content"]
    quoted = user.split("### Previous result:\n", 1)[1].split("\n\n\nTry again", 1)[0]
    assert quoted == "\n".join(f"{name.upper()}: {CONTENT[name]}" for name in CONTENT if name != "grip")
    assert user.count(echo) == 1  # the template's own line only
    nothing = framed(repair_request(json.dumps({"hook": echo})), ladder("json_schema")[0])[1]["content"]
    assert f"### Previous result:\n{NOTHING_PASSED}\n\n\nTry again" in nothing
    assert passing_only("no repair block here") == "no repair block here"
