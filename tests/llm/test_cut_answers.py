"""Answers the provider cut at its token limit (finish_reason "length"), through real crews with the replay LLM."""

from __future__ import annotations

import json

import pytest

from marsrag.state import FALLBACK_HOOK
from marsrag.store import RunStore
from marsrag.tasks import ProjectConfig
from tests.contract.samples import CONTENT, labelled
from tests.llm.test_negotiation import VALID, boundary_replay, run_with
from tests.runtime.conftest import project_with

pytestmark = pytest.mark.crewai

#: The JSON form cut in the middle of the loop, as a model stopped at max_tokens writes it.
CUT_JSON = VALID[: VALID.index(CONTENT["loop"]) + 25]


def cut(output: str) -> dict[str, object]:
    return {"output": output, "finish_reason": "length", "prompt_tokens": 310, "completion_tokens": 128}


def test_a_json_answer_cut_mid_loop_never_validates_and_never_becomes_the_hook(
    store: RunStore, sample: ProjectConfig
) -> None:
    """Answer and repair both cut: loop fails `truncated`, the next task gets the fallback, not the cut loop."""
    assert CUT_JSON.endswith(CONTENT["loop"][:25]) and not CUT_JSON.endswith("}")
    llm = boundary_replay([cut(CUT_JSON), cut(CUT_JSON), VALID])
    run = run_with(store, sample, llm, ["diagnose", "recommend"])
    assert run.status == "completed", run.status_reason
    first, second = store.get_tasks(run.run_id)
    assert [a.kind for a in first.attempts] == ["answer", "repair"]
    for attempt in first.attempts:
        assert attempt.finish_reason == "length" and attempt.status != "valid"
        assert (attempt.prompt_tokens, attempt.completion_tokens) == (310, 128)
        assert [(e.field, e.code) for e in attempt.errors] == [("loop", "truncated")]
    assert first.validation.status != "valid"
    transition = store.get_transitions(run.run_id)[0]
    assert (transition.transition_mode, transition.hook) == ("fallback", FALLBACK_HOOK)
    assert (second.loop_output.hook, second.hook_source) == (FALLBACK_HOOK, "fallback")
    assert FALLBACK_HOOK in json.dumps(llm.calls[-1].messages)  # the next task was briefed with the fallback


def test_soft_mode_hands_on_no_cut_loop_either(store: RunStore, sample: ProjectConfig) -> None:
    """Soft mode completes a partial answer without repair, but a cut loop is not usable: fallback."""
    from marsrag.runtime.runner import WorkflowRunner

    llm = boundary_replay([cut(CUT_JSON), VALID])
    runner = WorkflowRunner(store, project_with(sample, ["diagnose", "recommend"], mode="soft"), llm)
    run = runner.run("API latency SLO breaches", workflow="flow")
    assert run.status == "completed", run.status_reason
    first, second = store.get_tasks(run.run_id)
    assert [(a.status, a.finish_reason) for a in first.attempts] == [("partial", "length")]
    assert [(e.field, e.code) for e in first.validation.errors] == [("loop", "truncated")]
    assert (second.loop_output.hook, second.hook_source) == (FALLBACK_HOOK, "fallback")


def test_a_closed_json_object_is_complete_even_when_the_finish_reason_is_length(
    store: RunStore, sample: ProjectConfig
) -> None:
    """The object closed before the limit: nothing was cut; finish_reason "length" is recorded all the same."""
    llm = boundary_replay([cut(VALID), VALID])
    run = run_with(store, sample, llm, ["diagnose", "recommend"])
    first, second = store.get_tasks(run.run_id)
    assert [(a.status, a.finish_reason) for a in first.attempts] == [("valid", "length")]
    assert (second.loop_output.hook, second.hook_source) == (CONTENT["loop"], "direct")


def test_labelled_sections_cut_at_the_limit_fail_their_last_section(store: RunStore, sample: ProjectConfig) -> None:
    """Sections have no closing mark: after a cut the last one (loop) is `truncated`, in answer and repair."""
    sections = labelled("{L}: {v}")
    llm = boundary_replay([cut(sections), cut(sections), VALID])
    run = run_with(store, sample, llm, ["diagnose", "recommend"])
    first, second = store.get_tasks(run.run_id)
    assert [(a.kind, a.status, a.finish_reason) for a in first.attempts] == [
        ("answer", "partial", "length"),
        ("repair", "partial", "length"),
    ]
    assert all([(e.field, e.code) for e in a.errors] == [("loop", "truncated")] for a in first.attempts)
    assert (second.loop_output.hook, second.hook_source) == (FALLBACK_HOOK, "fallback")


def test_the_same_sections_ending_normally_are_valid(store: RunStore, sample: ProjectConfig) -> None:
    """Control: finish_reason "stop" on the same sections validates and hands the loop on."""
    llm = boundary_replay([{"output": labelled("{L}: {v}"), "finish_reason": "stop"}, VALID])
    run = run_with(store, sample, llm, ["diagnose", "recommend"])
    first, second = store.get_tasks(run.run_id)
    assert [(a.status, a.finish_reason) for a in first.attempts] == [("valid", "stop")]
    assert second.loop_output.hook == CONTENT["loop"]
