"""Spec section 6 regression tests 1-4 for every narrative task type of the shipped workflows.

Each task config is a narrative task type: each is kicked off on a real crew with the replay LLM.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from marsrag.contract import LoopOutput
from marsrag.tasks import ProjectConfig, load_config, sample_config_dir
from tests.contract.samples import CONTENT

pytestmark = pytest.mark.crewai

_SHIPPED = load_config(sample_config_dir())
NARRATIVE_TASKS = sorted(
    {name for workflow in _SHIPPED.workflows.values() for name in workflow.tasks if _SHIPPED.tasks[name].narrative}
)

BROKEN = {
    "missing field": ({k: v for k, v in CONTENT.items() if k != "payoff"}, "missing"),
    "empty string": ({**CONTENT, "payoff": "   "}, "empty"),
    "over-length field": ({**CONTENT, "payoff": "x" * 801}, "too_long"),
}


def kickoff(project: ProjectConfig, outputs: list[str]) -> object:
    from marsrag.integrations.crewai_builders import build_crew
    from marsrag.llm.replay import ReplayLLM

    built = build_crew(project, None, ReplayLLM.from_outputs(outputs))
    built.kickoff({"goal": "checkout conversion fell on Android"})
    return built.tasks[0]


def test_shipped_workflows_have_narrative_tasks() -> None:
    """The parametrization below is not empty."""
    assert NARRATIVE_TASKS == ["diagnose", "plan", "recommend"]


@pytest.mark.parametrize("task", NARRATIVE_TASKS)
def test_schema_conformance_success(single_task_project: Callable[..., ProjectConfig], task: str) -> None:
    """Spec test 1: a conforming answer completes as a LoopOutput on the first attempt."""
    item = kickoff(single_task_project(task), [json.dumps(CONTENT)])
    assert item.task.output.pydantic == LoopOutput(**CONTENT)  # type: ignore[attr-defined]


@pytest.mark.parametrize("task", NARRATIVE_TASKS)
@pytest.mark.parametrize("case", BROKEN, ids=list(BROKEN))
def test_field_failures_are_recorded_after_one_repair(
    single_task_project: Callable[..., ProjectConfig], task: str, case: str
) -> None:
    """Spec tests 2-4: missing, empty and over-length fields fail validation on both attempts."""
    payload, code = BROKEN[case]
    item = kickoff(single_task_project(task), [json.dumps(payload)] * 2)
    attempts = item.guardrail.attempts  # type: ignore[attr-defined]
    assert [a.result.status for a in attempts] == ["partial", "partial"]
    assert [(issue.field, issue.code) for issue in attempts[-1].result.errors] == [("payoff", code)]
    assert item.task.output.pydantic is None  # type: ignore[attr-defined]
