"""Narrative tasks on real CrewAI crews, kicked off with the replay LLM (the only fake is the LLM)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from marsrag.contract import EXPECTED_OUTPUT_TEMPLATE, LOOP_CONTRACT_VERSION, LoopOutput
from marsrag.tasks import ProjectConfig
from tests.contract.samples import CONTENT, labelled
from tests.integrations.conftest import VALID

pytestmark = pytest.mark.crewai

MESSY_BUT_RECOVERABLE = {
    "bold labels": labelled("**{T}:** {v}", "\n\n"),
    "numbered template labels": labelled("{n}. {L}: {v}"),
    "headings": labelled("## {T}\n{v}", "\n\n"),
    "json in a fence after prose": "Here you go:\n```json\n" + json.dumps(CONTENT, indent=2) + "\n```",
    "react final answer": "Thought: I know it now.\nFinal Answer: " + VALID,
    "python dict with trailing comma": "{" + ", ".join(f"'{k}': '{v}'" for k, v in CONTENT.items()) + ",}",
    "missing closing brace": VALID[:-1],
}


def run(project: ProjectConfig, outputs: list[str], workflow: str | None = None) -> tuple[object, object]:
    from marsrag.integrations.crewai_builders import build_crew
    from marsrag.llm.replay import ReplayLLM

    llm = ReplayLLM.from_outputs(outputs)
    built = build_crew(project, workflow, llm)
    built.kickoff({"goal": "API latency SLO breaches"})
    return built, llm


def test_sample_workflow_returns_loop_outputs_in_one_call_per_task(sample_project: ProjectConfig) -> None:
    """Three valid answers: three LLM calls, three LoopOutputs, one attempt each."""
    built, llm = run(sample_project, [VALID] * 3, "support_answer")
    assert [call.task for call in llm.calls] == ["diagnose", "recommend", "plan"]  # type: ignore[attr-defined]
    for item in built.tasks:  # type: ignore[attr-defined]
        assert item.task.output.pydantic == LoopOutput(**CONTENT)
        assert [a.result.status for a in item.guardrail.attempts] == ["valid"]


@pytest.mark.parametrize("raw", MESSY_BUT_RECOVERABLE.values(), ids=MESSY_BUT_RECOVERABLE.keys())
def test_messy_forms_cost_one_call_and_never_reach_crewais_converter(
    single_task_project: Callable[..., ProjectConfig], raw: str
) -> None:
    """A recoverable form is parsed locally: exactly one LLM call, and the output is the LoopOutput."""
    built, llm = run(single_task_project("diagnose"), [raw])
    assert len(llm.calls) == 1  # type: ignore[attr-defined]
    assert built.tasks[0].task.output.pydantic == LoopOutput(**CONTENT)  # type: ignore[attr-defined]


def test_near_miss_is_repaired_once_with_the_errors_fed_back(single_task_project: Callable[..., ProjectConfig]) -> None:
    """An invalid first answer gets one repair call that names what failed; the repair is kept."""
    missing_grip = json.dumps({k: v for k, v in CONTENT.items() if k != "grip"})
    built, llm = run(single_task_project("diagnose"), [missing_grip, VALID])
    calls = llm.calls  # type: ignore[attr-defined]
    assert len(calls) == 2
    repair_prompt = json.dumps(calls[1].messages)
    assert "grip is missing" in repair_prompt and "Previous attempt failed validation" in repair_prompt
    item = built.tasks[0]  # type: ignore[attr-defined]
    assert [(a.number, a.result.status) for a in item.guardrail.attempts] == [(1, "partial"), (2, "valid")]
    assert item.task.output.pydantic == LoopOutput(**CONTENT)


def test_hard_mode_records_failure_after_one_repair_instead_of_raising(
    single_task_project: Callable[..., ProjectConfig],
) -> None:
    """Invalid twice under hard: exactly two calls, no exception, no LoopOutput, both attempts kept."""
    built, llm = run(single_task_project("diagnose"), ["I cannot answer that.", '{"hook": "Only a hook."}'])
    item = built.tasks[0]  # type: ignore[attr-defined]
    assert len(llm.calls) == 2  # type: ignore[attr-defined]
    assert item.task.output.pydantic is None
    assert [a.result.status for a in item.guardrail.attempts] == ["failed", "failed"]
    assert item.guardrail.final.raw == '{"hook": "Only a hook."}'


def test_soft_mode_completes_partial_without_repair_and_repairs_failed(
    single_task_project: Callable[..., ProjectConfig],
) -> None:
    """Soft: a partial answer completes in one call; a failed one is repaired once."""
    partial = json.dumps({**CONTENT, "reinforce": ""})
    built, llm = run(single_task_project("diagnose", "soft"), [partial])
    assert len(llm.calls) == 1  # type: ignore[attr-defined]
    assert [a.result.status for a in built.tasks[0].guardrail.attempts] == ["partial"]  # type: ignore[attr-defined]
    built, llm = run(single_task_project("diagnose", "soft"), ["no sections here", VALID])
    assert len(llm.calls) == 2  # type: ignore[attr-defined]
    assert [a.result.status for a in built.tasks[0].guardrail.attempts] == ["failed", "valid"]  # type: ignore[attr-defined]


def test_mode_none_builds_machine_first_tasks_without_the_contract(
    single_task_project: Callable[..., ProjectConfig], sample_project: ProjectConfig
) -> None:
    """loop_mode none: no template, no LoopOutput, no guardrail, one call even for prose."""
    built, llm = run(single_task_project("diagnose", "none"), ["plain machine output"])
    item = built.tasks[0]  # type: ignore[attr-defined]
    assert item.guardrail is None and item.task.output_pydantic is None
    assert EXPECTED_OUTPUT_TEMPLATE not in item.task.expected_output
    assert item.task.output.raw == "plain machine output"
    assert llm.calls[0].response_model is None  # type: ignore[attr-defined]
    built, llm = run(sample_project, ["- fact one\n- fact two"], "fact_extraction")
    assert built.loop_mode == "none" and built.tasks[0].guardrail is None  # type: ignore[attr-defined]


def test_n_tasks_cost_n_calls_plus_one_per_repair(sample_project: ProjectConfig) -> None:
    """valid, repaired, failed-twice across three tasks: 3 + 2 = 5 calls, never more."""
    outputs = [VALID, "nothing useful", VALID, "still nothing", "nothing again"]
    built, llm = run(sample_project, outputs, "support_answer")
    assert len(llm.calls) == 5 and llm.remaining == 0  # type: ignore[attr-defined]
    statuses = [[a.result.status for a in item.guardrail.attempts] for item in built.tasks]  # type: ignore[attr-defined]
    assert statuses == [["valid"], ["failed", "valid"], ["failed", "failed"]]


def test_contract_version_and_mode_survive_crew_copy(sample_project: ProjectConfig) -> None:
    """loop_contract_version, loop_mode and the config name are declared fields: Crew.copy() keeps them.

    The sample tasks declare 1.0.0, an older minor than the running contract: each keeps its own version.
    """
    from marsrag.integrations.crewai_builders import build_crew
    from marsrag.llm.replay import ReplayLLM

    built = build_crew(sample_project, "support_answer", ReplayLLM.from_outputs([]))
    copied = built.crew.copy()
    assert [(t.loop_contract_version, t.loop_mode, t.marsrag_task) for t in copied.tasks] == [
        (sample_project.tasks[name].loop_contract_version, "hard", name) for name in ("diagnose", "recommend", "plan")
    ]
    assert {t.loop_contract_version for t in copied.tasks} == {"1.0.0"} != {LOOP_CONTRACT_VERSION}
    assert all(t.output_pydantic is LoopOutput for t in copied.tasks)


def test_each_task_gets_the_prior_task_as_context(sample_project: ProjectConfig) -> None:
    """Tasks after the first have context=[prior task]: the prior answer reaches the next prompt."""
    marker = json.dumps({**CONTENT, "loop": "Which snapshot age is acceptable for pre-warming?"})
    built, llm = run(sample_project, [marker, VALID, VALID], "support_answer")
    tasks = [item.task for item in built.tasks]  # type: ignore[attr-defined]
    assert tasks[1].context == [tasks[0]] and tasks[2].context == [tasks[1]]
    assert "Which snapshot age is acceptable" in json.dumps(llm.calls[1].messages)  # type: ignore[attr-defined]


def test_replay_llm_running_out_is_a_clear_error(single_task_project: Callable[..., ProjectConfig]) -> None:
    """More calls than scripted outputs raise ReplayExhaustedError naming the count."""
    from marsrag.llm.replay import ReplayExhaustedError

    with pytest.raises(ReplayExhaustedError, match="ran out of outputs after 1 call"):
        run(single_task_project("diagnose"), ["not an answer"])


def test_the_guardrail_source_crewai_reads_before_each_attempt_is_three_lines(sample_project: ProjectConfig) -> None:
    """CrewAI's guardrail event tokenizes the guardrail's source on every attempt: it gets the short check entry."""
    from crewai.events.types.llm_guardrail_events import LLMGuardrailStartedEvent

    from marsrag.integrations.crewai_builders import build_crew
    from marsrag.llm.replay import ReplayLLM

    task = build_crew(sample_project, "support_answer", ReplayLLM.from_outputs([])).tasks[0].task
    event = LLMGuardrailStartedEvent(guardrail=task.guardrail, retry_count=0)
    assert event.guardrail_name == "check"
    assert str(event.guardrail).startswith("def check(") and len(str(event.guardrail).splitlines()) == 3
