"""A server that accepts ``json_schema`` but returns what the model wrote: near-misses reach the contract.

Through CrewAI alone (a ``response_model`` on the call) the provider parses the reply itself and a fenced
answer, labelled sections, a missing or null field raise a pydantic ``ValidationError`` that fails the run
before the guardrail sees it. At the LLM boundary the structure is asked for in the request and the reply
comes back as text: each near-miss is the task's first attempt, judged and repaired once.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from marsrag.tasks import ProjectConfig
from tests._net import serving
from tests.contract.samples import CONTENT
from tests.integrations.test_structured_output import StrictChatServer

pytestmark = pytest.mark.crewai

VALID = json.dumps(CONTENT)
NEAR_MISSES = {
    "fenced JSON": f"Here is the answer:\n```json\n{json.dumps({**CONTENT, 'loop': ''})}\n```",
    "labelled sections": "\n".join(f"{name.upper()}: {value}" for name, value in CONTENT.items() if name != "loop"),
    "JSON missing loop": json.dumps({name: value for name, value in CONTENT.items() if name != "loop"}),
    "loop null": json.dumps({**CONTENT, "loop": None}),
    "cut short": VALID[: len(VALID) // 2],
}


class AcceptingChatServer(StrictChatServer):
    """Accepts every response format and returns the scripted reply as it is (no constrained decoding)."""

    def _decide(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any], str | None]:
        return super()._decide(path, {key: value for key, value in body.items() if key != "response_format"})


@pytest.fixture
def server() -> Iterator[AcceptingChatServer]:
    with serving(AcceptingChatServer(), "accepting-chat-server") as httpd:
        yield httpd


@pytest.mark.parametrize("near_miss", list(NEAR_MISSES), ids=list(NEAR_MISSES))
def test_a_near_miss_under_json_schema_is_an_attempt_the_guardrail_repairs(
    single_task_project: Callable[..., ProjectConfig], server: AcceptingChatServer, near_miss: str
) -> None:
    """The request carries the contract's json_schema; the near-miss is attempt 1 (not valid), the repair valid."""
    import crewai

    from marsrag.integrations.crewai_builders import build_crew
    from marsrag.llm.boundary import make_resilient
    from marsrag.llm.resilient import CallPolicy

    policy = CallPolicy(timeout=30, retries=0, backoff=0)
    llm = make_resilient(crewai.LLM(model="openai/test-model", base_url=server.base_url, api_key="k"), policy)
    server.script[:] = [NEAR_MISSES[near_miss], VALID]
    built = build_crew(single_task_project("diagnose"), None, llm)
    built.kickoff({"goal": "API latency SLO breaches"})

    item = built.tasks[0]
    assert item.guardrail is not None
    assert [attempt.result.status != "valid" for attempt in item.guardrail.attempts] == [True, False]
    assert item.guardrail.attempts[0].raw == NEAR_MISSES[near_miss]
    assert [x.status for x in server.exchanges] == [200, 200]
    for exchange in server.exchanges:
        assert "x-stainless-helper-method" not in exchange.headers  # not the SDK's parse helper
        response_format = exchange.body["response_format"]
        assert response_format["type"] == "json_schema" and response_format["json_schema"]["name"] == "LoopOutput"
        hook = response_format["json_schema"]["schema"]["properties"]["hook"]
        assert (hook["minLength"], hook["maxLength"]) == (1, 800)
    calls = item.guardrail.attempts[0].calls
    assert (calls.structured_output, calls.finish_reason, calls.prompt_tokens) == ("json_schema", "stop", 10)


@pytest.mark.parametrize(
    ("setting", "example_sent"),
    [("json_schema", False), ("json_object", False), ("grammar", False), ("prompt", True)],
)
def test_the_worked_example_is_sent_only_when_the_request_does_not_enforce_the_form(
    single_task_project: Callable[..., ProjectConfig], server: AcceptingChatServer, setting: str, example_sent: bool
) -> None:
    """Under the contract's schema or grammar the decoder writes the form the example shows, and small models copy
    its sentences: the request leaves it out. The template and the goal are sent either way."""
    import crewai

    from marsrag.contract import EXPECTED_OUTPUT_TEMPLATE, render_example
    from marsrag.integrations.crewai_builders import build_crew
    from marsrag.llm.boundary import make_resilient
    from marsrag.llm.resilient import CallPolicy

    policy = CallPolicy(timeout=30, retries=0, backoff=0)
    model = crewai.LLM(model="openai/test-model", base_url=server.base_url, api_key="k")
    llm = make_resilient(model, policy, structured_output=setting)
    server.script[:] = [VALID]
    built = build_crew(single_task_project("diagnose"), None, llm)
    built.kickoff({"goal": "API latency SLO breaches"})

    assert built.tasks[0].task.expected_output.startswith(render_example())  # the task itself keeps it
    [exchange] = server.exchanges
    sent = "\n".join(str(message["content"]) for message in exchange.body["messages"])
    assert (render_example() in sent) is example_sent
    assert EXPECTED_OUTPUT_TEMPLATE in sent and 'The user\'s goal: "API latency SLO breaches"' in sent
    assert ("response_format" in exchange.body or "grammar" in exchange.body) is not example_sent
