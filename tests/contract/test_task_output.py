"""validate_output on real CrewAI TaskOutput objects (CrewAI installed, no crew run needed here)."""

from __future__ import annotations

import pytest

from marsrag.contract import LoopOutput, validate_output
from tests.contract.samples import CLEAN_JSON, CONTENT, labelled

pytestmark = pytest.mark.crewai


@pytest.fixture(scope="module")
def task_output_cls() -> type:
    from crewai.tasks.task_output import TaskOutput

    return TaskOutput


def test_guardrail_first_attempt_uses_raw(task_output_cls: type) -> None:
    """On a guardrail's first attempt CrewAI sets only .raw: the labelled text there is validated."""
    output = task_output_cls(description="diagnose", agent="analyst", raw=labelled("**{T}:** {v}", "\n\n"))
    assert output.pydantic is None and output.json_dict is None
    result = validate_output(output)
    assert result.status == "valid" and dict(result.loop_output) == CONTENT


def test_pydantic_output_is_used_when_present(task_output_cls: type) -> None:
    """A converted TaskOutput is validated from its pydantic model, not re-parsed from raw."""
    output = task_output_cls(description="d", agent="a", raw="not the answer", pydantic=LoopOutput(**CONTENT))
    assert validate_output(output).model == LoopOutput(**CONTENT)


def test_json_dict_output_is_used_when_present(task_output_cls: type) -> None:
    """A TaskOutput carrying json_dict is validated from it."""
    output = task_output_cls(description="d", agent="a", raw="", json_dict={"output": CONTENT})
    assert validate_output(output).status == "valid"


def test_partial_raw_output_is_partial_and_soft_completes(task_output_cls: type) -> None:
    """A raw near-miss keeps its status; the mode decides whether it completes."""
    raw = CLEAN_JSON.replace(CONTENT["payoff"], "")
    output = task_output_cls(description="d", agent="a", raw=raw)
    assert validate_output(output, mode="hard").status == "partial"
    assert not validate_output(output, mode="hard").completes
    assert validate_output(output, mode="soft").completes


def test_cut_task_output_is_judged_on_its_raw_text(task_output_cls: type) -> None:
    """After a cut, the raw text decides: a model CrewAI converted from it may have had its end filled in."""
    output = task_output_cls(description="d", agent="a", raw=CLEAN_JSON[:-1], pydantic=LoopOutput(**CONTENT))
    assert validate_output(output).status == "valid"
    result = validate_output(output, cut=True)
    assert [(issue.field, issue.code) for issue in result.errors] == [("loop", "truncated")]


def test_cut_task_output_with_only_raw_passes_cut_through(task_output_cls: type) -> None:
    """A first attempt with only .raw is validated with the provider's cut."""
    output = task_output_cls(description="d", agent="a", raw=labelled("{L}: {v}"))
    assert validate_output(output).status == "valid"
    assert validate_output(output, cut=True).failing_fields == ("loop",)
