"""Structured output negotiated at the LLM boundary, through real CrewAI crews and a real SQLite store.

The replay LLM plays the server: it accepts offers as an OpenAI-compatible server does and a script step
can refuse one with the body a real server sends (tests/llm/refusals.py).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from marsrag.store import RunStore
from marsrag.tasks import ProjectConfig
from tests.contract.samples import CONTENT
from tests.llm.refusals import REFUSALS, error_step
from tests.runtime.conftest import project_with

pytestmark = pytest.mark.crewai

VALID = json.dumps(CONTENT)
TASKS = ["diagnose", "recommend", "plan"]


def boundary_replay(script: list[Any], setting: str = "auto", retries: int = 2) -> Any:
    """A replay LLM at the LLM boundary: transport retries without backoff, structure as ``setting`` says."""
    from marsrag.llm.boundary import make_resilient
    from marsrag.llm.replay import ReplayLLM
    from marsrag.llm.resilient import CallPolicy

    policy = CallPolicy(timeout=30, retries=retries, backoff=0)
    return make_resilient(ReplayLLM.from_outputs(script), policy, structured_output=setting)


def run_with(store: RunStore, sample: ProjectConfig, llm: Any, tasks: list[str] = TASKS) -> Any:
    from marsrag.runtime.runner import WorkflowRunner

    return WorkflowRunner(store, project_with(sample, tasks), llm).run("API latency SLO breaches", workflow="flow")


def call_modes(llm: Any) -> list[str]:
    return [call.structured_output for call in llm.calls]


@pytest.mark.parametrize("family", sorted(REFUSALS))
def test_a_refusal_steps_down_within_the_call_and_is_remembered(
    store: RunStore, sample: ProjectConfig, family: str
) -> None:
    """json_schema refused -> json_object in the same call: one attempt, no retry, later tasks ask json_object."""
    llm = boundary_replay([error_step(*REFUSALS[family]), VALID, VALID, VALID], retries=2)
    run = run_with(store, sample, llm)
    assert run.status == "completed", run.status_reason
    assert llm.remaining == 0  # exactly one error step consumed: the refusal was not retried
    assert call_modes(llm) == ["json_schema", "json_object", "json_object", "json_object"]
    tasks = store.get_tasks(run.run_id)
    first = tasks[0]
    assert [(a.number, a.kind, a.status) for a in first.attempts] == [(1, "answer", "valid")]
    attempt = first.attempts[0]
    assert (attempt.structured_output, attempt.structured_output_refused) == ("json_object", ["json_schema"])
    for later in tasks[1:]:
        assert [(a.structured_output, a.structured_output_refused) for a in later.attempts] == [("json_object", [])]
    assert [t.validation.status for t in tasks] == ["valid"] * 3


def test_two_refusals_step_down_twice_to_plain_json_object(store: RunStore, sample: ProjectConfig) -> None:
    """json_schema and json_object with its schema refused: plain json_object answers, for every later task."""
    from marsrag.llm.structured import NEGOTIATOR, ladder

    refusal = error_step(*REFUSALS["vllm"])
    llm = boundary_replay([refusal, refusal, VALID, VALID, VALID])
    run = run_with(store, sample, llm)
    assert run.status == "completed", run.status_reason
    assert call_modes(llm) == ["json_schema", "json_object", "json_object", "json_object", "json_object"]
    first = store.get_tasks(run.run_id)[0].attempts
    assert [(a.number, a.structured_output, a.structured_output_refused) for a in first] == [
        (1, "json_object", ["json_schema", "json_object"])
    ]
    # The rung remembered is the plain one (the with-schema offer was refused): {"type": "json_object"}.
    plain = ladder("auto")[2]
    assert NEGOTIATOR.current(("ReplayLLM", "replay"), "auto") is plain


def test_an_in_process_llm_records_its_model_and_no_endpoint(store: RunStore, sample: ProjectConfig) -> None:
    """The replay LLM answers in-process: its attempts name the model and no host (not BaseLLM's "openai")."""
    llm = boundary_replay([VALID])
    run = run_with(store, sample, llm, ["diagnose"])
    attempt = store.get_tasks(run.run_id)[0].attempts[0]
    assert (attempt.model, attempt.endpoint, attempt.finish_reason) == ("replay", None, "stop")


def test_three_refusals_end_at_prompt(store: RunStore, sample: ProjectConfig) -> None:
    """Every structured offer refused: the call is made with the prompt alone and the run completes."""
    refusal = error_step(*REFUSALS["llama-cpp-python"])
    llm = boundary_replay([refusal, refusal, refusal, VALID, VALID, VALID])
    run = run_with(store, sample, llm)
    assert run.status == "completed", run.status_reason
    assert call_modes(llm) == ["json_schema", "json_object", "json_object", "prompt", "prompt", "prompt"]
    attempt = store.get_tasks(run.run_id)[0].attempts[0]
    assert (attempt.structured_output, attempt.structured_output_refused) == ("prompt", ["json_schema", "json_object"])


def test_explicit_json_object_refused_steps_to_prompt(store: RunStore, sample: ProjectConfig) -> None:
    """LM Studio refuses json_object (both offers): the explicit setting steps to prompt, never json_schema."""
    refusal = error_step(*REFUSALS["lm-studio"])
    llm = boundary_replay([refusal, refusal, VALID, VALID, VALID], setting="json_object")
    run = run_with(store, sample, llm)
    assert run.status == "completed", run.status_reason
    assert call_modes(llm) == ["json_object", "json_object", "prompt", "prompt", "prompt"]
    attempts = [a for t in store.get_tasks(run.run_id) for a in t.attempts]
    assert [(a.number, a.structured_output, a.structured_output_refused) for a in attempts] == [
        (1, "prompt", ["json_object"]),
        (1, "prompt", []),
        (1, "prompt", []),
    ]


def test_explicit_json_schema_refused_steps_to_prompt(store: RunStore, sample: ProjectConfig) -> None:
    """json_schema refused under the explicit setting: straight to prompt (json_object is not its ladder)."""
    llm = boundary_replay([error_step(*REFUSALS["openai"]), VALID], setting="json_schema")
    run = run_with(store, sample, llm, ["diagnose"])
    assert run.status == "completed", run.status_reason
    assert call_modes(llm) == ["json_schema", "prompt"]


def test_the_prompt_setting_sends_no_offer(store: RunStore, sample: ProjectConfig) -> None:
    """prompt: every call goes without structure, and the attempt records it."""
    llm = boundary_replay([VALID, VALID, VALID], setting="prompt")
    run = run_with(store, sample, llm)
    assert run.status == "completed", run.status_reason
    assert call_modes(llm) == ["prompt"] * 3
    attempts = [a for t in store.get_tasks(run.run_id) for a in t.attempts]
    assert [(a.structured_output, a.structured_output_refused) for a in attempts] == [("prompt", [])] * 3


def test_a_503_is_retried_by_the_transport_policy_and_the_mode_stays(store: RunStore, sample: ProjectConfig) -> None:
    """A 503 is not a refusal: the same offer is made again, nothing is recorded as refused."""
    unavailable = error_step(503, json.dumps({"error": {"message": "Service Unavailable", "type": "server_error"}}))
    llm = boundary_replay([unavailable, VALID, VALID])
    run = run_with(store, sample, llm, ["diagnose", "recommend"])
    assert run.status == "completed", run.status_reason
    assert call_modes(llm) == ["json_schema", "json_schema", "json_schema"]
    attempts = [a for t in store.get_tasks(run.run_id) for a in t.attempts]
    assert [(a.number, a.structured_output, a.structured_output_refused) for a in attempts] == [
        (1, "json_schema", []),
        (1, "json_schema", []),
    ]


def test_a_503_past_the_retries_fails_the_run_without_stepping_down(store: RunStore, sample: ProjectConfig) -> None:
    """Retries exhausted on a 503: the run fails with the transport error; no offer was given up."""
    unavailable = error_step(503, "Service Unavailable")
    llm = boundary_replay([unavailable, unavailable, VALID], retries=1)
    run = run_with(store, sample, llm, ["diagnose"])
    assert run.status == "failed" and "LLMCallError" in (run.status_reason or "")
    assert "after 2 attempt(s)" in (run.status_reason or "")
    assert call_modes(llm) == ["json_schema", "json_schema"] and llm.remaining == 1


def test_a_refusal_while_asking_for_prompt_only_is_an_error(store: RunStore, sample: ProjectConfig) -> None:
    """No offer was made, so a 400 naming response_format is the server's error: the run fails, not retried."""
    llm = boundary_replay([error_step(*REFUSALS["openai"]), VALID], setting="prompt")
    run = run_with(store, sample, llm, ["diagnose"])
    assert run.status == "failed" and "invalid_json_schema" in (run.status_reason or "")
    assert call_modes(llm) == ["prompt"] and llm.remaining == 1


def test_a_tool_using_call_gets_no_offer() -> None:
    """With tools in the call no structure is asked for (servers skip tools when a response format is set)."""
    from marsrag.integrations.crewai import LoopOutputDraft

    llm = boundary_replay(["with tools", "without tools"])
    tool = {"type": "function", "function": {"name": "runbook_search", "parameters": {"type": "object"}}}
    messages = [{"role": "user", "content": "diagnose"}]
    assert llm.call(messages, tools=[tool], response_model=LoopOutputDraft) == "with tools"
    assert llm.call(messages, response_model=LoopOutputDraft) == "without tools"
    assert call_modes(llm) == ["prompt", "json_schema"]
