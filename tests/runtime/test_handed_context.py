"""What a contract task hands the later tasks as CrewAI's context: its sections that passed, never its raw text.

Real crews with the replay LLM (the messages each call got are recorded), real SQLite.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from marsrag.contract.template import EXPECTED_OUTPUT_TEMPLATE
from marsrag.store import RunStore
from marsrag.tasks import ProjectConfig
from tests.contract.samples import CONTENT
from tests.runtime.conftest import project_with

pytestmark = pytest.mark.crewai

#: CrewAI's heading for the context a task is given.
CONTEXT_HEADING = "This is the context you're working with:"
#: Each field set to its own template line, as Qwen2.5-Coder-0.5B answered: every field fails template_echo.
ECHOED = {line.split(": ", 1)[0].split(". ", 1)[1].lower(): line for line in EXPECTED_OUTPUT_TEMPLATE.splitlines()}


def _run(store: RunStore, sample: ProjectConfig, outputs: list[str]) -> tuple[Any, list[Any]]:
    from marsrag.llm.replay import ReplayLLM
    from marsrag.runtime.runner import WorkflowRunner

    llm = ReplayLLM.from_outputs(outputs)
    run = WorkflowRunner(store, project_with(sample, ["diagnose", "recommend"]), llm).run(
        "API latency SLO breaches", workflow="flow"
    )
    assert run.status == "completed", run.status_reason
    return run, llm.calls


def _prompt(call: Any) -> str:
    return "\n".join(str(message.get("content", "")) for message in call.messages)


def test_a_valid_task_hands_on_its_sections_labelled(store: RunStore, sample: ProjectConfig) -> None:
    """The next task's context is the five sections as labelled lines, not the JSON the model wrote."""
    raw = "Here is my answer:\n" + json.dumps(CONTENT)
    run, calls = _run(store, sample, [raw, json.dumps(CONTENT)])
    second = _prompt(calls[1])
    context = second.split(CONTEXT_HEADING, 1)[1]
    for name, value in CONTENT.items():
        assert f"{name.upper()}: {value}" in context
    assert "Here is my answer" not in context and json.dumps(CONTENT) not in second
    # What the model wrote is stored as it was: only the context changed.
    assert store.get_tasks(run.run_id)[0].attempts[0].raw == raw


def test_a_failed_section_is_not_handed_on(store: RunStore, sample: ProjectConfig) -> None:
    """A template line the model echoed (failed after the repair too) never reaches the next task's prompt."""
    echoed = json.dumps({**CONTENT, "grip": ECHOED["grip"]})
    run, calls = _run(store, sample, [echoed, echoed, json.dumps(CONTENT)])
    first = store.get_tasks(run.run_id)[0]
    assert first.validation.status == "partial" and {e.field for e in first.validation.errors} == {"grip"}
    second = _prompt(calls[2])
    context = second.split(CONTEXT_HEADING, 1)[1]
    assert f"PAYOFF: {CONTENT['payoff']}" in context
    assert ECHOED["grip"].split(": ", 1)[1] not in context and "GRIP:" not in context


def test_a_task_with_nothing_valid_hands_on_only_that_it_failed(store: RunStore, sample: ProjectConfig) -> None:
    """Every field echoed the template, twice: the next task is told so, and none of the echo reaches it."""
    from marsrag.runtime.states import NOTHING_HANDED_ON

    echoed = json.dumps(ECHOED)
    run, calls = _run(store, sample, [echoed, echoed, json.dumps(CONTENT)])
    assert store.get_tasks(run.run_id)[0].validation.status == "failed"
    second = _prompt(calls[2])
    assert second.split(CONTEXT_HEADING, 1)[1].strip().startswith(NOTHING_HANDED_ON)
    # Each echoed line is in the prompt once: the template's own line, not a copy handed on.
    assert all(second.count(line) == 1 for line in ECHOED.values())


def test_a_run_whose_every_task_failed_still_completes(store: RunStore, sample: ProjectConfig) -> None:
    """CrewAI fails a crew whose every task output is empty: what failed tasks hand on never is."""
    from marsrag.llm.replay import ReplayLLM
    from marsrag.runtime.runner import WorkflowRunner

    echoed = json.dumps(ECHOED)
    project = project_with(sample, ["diagnose", "recommend"])
    run = WorkflowRunner(store, project, ReplayLLM.from_outputs([echoed] * 4)).run("API latency", workflow="flow")
    assert run.status == "completed", run.status_reason
    assert [task.validation.status for task in store.get_tasks(run.run_id)] == ["failed", "failed"]
