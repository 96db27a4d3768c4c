"""The runner's async path (``arun``, ``aexecute``, ``aresume``) on real CrewAI crews via ``Crew.akickoff``."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from marsrag.events import capture_events
from marsrag.state import FALLBACK_HOOK
from marsrag.store import RunStore
from marsrag.tasks import ProjectConfig
from tests.contract.samples import CONTENT
from tests.runtime.conftest import project_with

pytestmark = pytest.mark.crewai


def answer(**changes: Any) -> str:
    return json.dumps({k: v for k, v in {**CONTENT, **changes}.items() if v is not None})


#: valid -> (invalid, repaired) -> (invalid, invalid) -> valid: direct, repair and fallback transitions.
FOUR = [
    answer(loop="Which cache tier should we pre-warm first?"),
    answer(grip=None),
    answer(loop="Who owns the rollout checkpoints?"),
    "No idea.",
    answer(loop=None),
    answer(loop="Should we add an alert for cold caches?"),
]


def four_tasks(sample: ProjectConfig) -> ProjectConfig:
    review = sample.tasks["recommend"].model_copy(update={"name": "review"})
    return project_with(sample, ["diagnose", "recommend", "plan", "review"], review=review)


def runner_for(store: RunStore, project: ProjectConfig, outputs: list[str], *, latency: float = 0.0) -> Any:
    from marsrag.llm.boundary import make_resilient
    from marsrag.llm.replay import ReplayLLM
    from marsrag.runtime.runner import WorkflowRunner

    # At the LLM boundary, as every LLM the CLI and serve open: its acall is the policy's.
    llm = make_resilient(ReplayLLM.from_outputs(outputs, latency=latency))
    return WorkflowRunner(store, project, llm), llm


def stored(store: RunStore, run_id: str) -> dict[str, Any]:
    """What the store holds of a run, without ids and times: comparable across runs."""
    tasks = store.get_tasks(run_id)
    return {
        "tasks": [
            (t.task_id, t.validation.status, t.hook_source, t.loop_output.hook, [a.status for a in t.attempts])
            for t in tasks
        ],
        "transitions": [
            (t.transition_source_task_id, t.transition_target_task_id, t.transition_mode, t.transition_reason)
            for t in store.get_transitions(run_id)
        ],
        "events": [e.name for e in store.get_events(run_id)],
    }


def test_arun_stores_direct_repair_and_fallback_as_run_does(store: RunStore, sample: ProjectConfig) -> None:
    """arun awaits every LLM call (six, none by a converter) and stores exactly what run stores for the same answers."""
    project = four_tasks(sample)
    runner, llm = runner_for(store, project, FOUR)
    with capture_events() as events:
        run = asyncio.run(runner.arun("API latency SLO breaches", workflow="flow"))
    assert run.status == "completed", run.status_reason
    assert len(llm.calls) == 6 and all(call.awaited for call in llm.calls)
    tasks = store.get_tasks(run.run_id)
    assert [[a.status for a in t.attempts] for t in tasks] == [
        ["valid"],
        ["partial", "valid"],
        ["failed", "partial"],
        ["valid"],
    ]
    assert [t.hook_source for t in tasks] == ["goal", "direct", "repair", "fallback"]
    assert tasks[3].loop_output.hook == FALLBACK_HOOK
    # the derived hook reached the next task's prompt, and survived into its repair retry
    assert "Who owns the rollout checkpoints?" in json.dumps(llm.calls[4].messages)
    assert [e.name for e in events] == [e.name for e in store.get_events(run.run_id)]

    sync_runner, sync_llm = runner_for(store, project, FOUR)
    reference = sync_runner.run("API latency SLO breaches", workflow="flow")
    assert not any(call.awaited for call in sync_llm.calls)
    assert stored(store, run.run_id) == stored(store, reference.run_id)
    assert [t.transition_mode for t in store.get_transitions(run.run_id)] == ["direct", "repair", "fallback"]


def test_concurrent_aruns_overlap_their_llm_calls_on_one_loop(store: RunStore, sample: ProjectConfig) -> None:
    """Three runs gathered on one event loop have their three first LLM calls in flight at once."""
    runner, llm = runner_for(store, project_with(sample, ["diagnose", "recommend"]), [answer()] * 6, latency=0.2)

    async def three() -> list[Any]:
        return list(await asyncio.gather(*(runner.arun(f"latency {n}", workflow="flow") for n in range(3))))

    runs = asyncio.run(three())
    assert [run.status for run in runs] == ["completed"] * 3
    assert all(len(store.get_tasks(run.run_id)) == 2 for run in runs)
    calls = llm.calls
    # In flight at once: the latest start of the first three calls is before the earliest of their ends.
    first = sorted(calls, key=lambda call: call.started)[:3]
    assert max(call.started for call in first) < min(call.ended for call in first)


def test_a_stopping_runner_hands_the_run_back_and_aresume_finishes_it(store: RunStore, sample: ProjectConfig) -> None:
    """Stopping: the async run stops after its first commit, pending; aresume runs only the remaining tasks."""
    runner, llm = runner_for(store, project_with(sample, ["diagnose", "recommend", "plan"]), [answer()] * 3)
    runner.stopping.set()
    run = asyncio.run(runner.arun("latency", workflow="flow"))
    assert run.status == "pending" and "interrupted by a shutdown" in (run.status_reason or "")
    assert [t.task_id for t in store.get_tasks(run.run_id)] == ["diagnose"] and len(llm.calls) == 1
    runner.stopping.clear()
    resumed = asyncio.run(runner.aresume(run.run_id))
    assert resumed.status == "completed"
    assert [t.task_id for t in store.get_tasks(run.run_id)] == ["diagnose", "recommend", "plan"]
    assert len(llm.calls) == 3  # nothing redone
    assert asyncio.run(runner.aresume(run.run_id)).status == "completed"  # a completed run is left as it is


def test_an_llm_error_fails_the_async_run_with_its_reason(store: RunStore, sample: ProjectConfig) -> None:
    """Running out of replayed answers on the async path ends the run failed, reason stored, what was stored kept."""
    runner, _ = runner_for(store, project_with(sample, ["diagnose", "recommend"]), [answer()])
    run = asyncio.run(runner.arun("latency", workflow="flow"))
    assert run.status == "failed" and "ReplayExhaustedError" in (run.status_reason or "")
    assert [t.task_id for t in store.get_tasks(run.run_id)] == ["diagnose"]


def test_an_llm_without_acall_runs_on_the_sync_path_from_arun(store: RunStore, sample: ProjectConfig) -> None:
    """A BaseLLM with call only (CrewAI's acall raises NotImplementedError): arun completes it on a thread."""
    from marsrag.llm.boundary import make_resilient, supports_async
    from marsrag.runtime.runner import WorkflowRunner
    from tests.faults.fault_llm import FaultLLM

    llm = make_resilient(FaultLLM.scripted([answer()] * 2))
    assert not supports_async(llm)
    runner = WorkflowRunner(store, project_with(sample, ["diagnose", "recommend"]), llm)
    run = asyncio.run(runner.arun("latency", workflow="flow"))
    assert run.status == "completed", run.status_reason
    assert llm.calls == 2 and [t.validation.status for t in store.get_tasks(run.run_id)] == ["valid", "valid"]


def test_supports_async_names_the_llms_that_answer_acall_themselves() -> None:
    """The composer, the replay LLM and CrewAI's LLM answer acall; the boundary's own acall does not count."""
    from marsrag.integrations.crewai import crewai_llm
    from marsrag.llm.boundary import make_resilient, supports_async
    from marsrag.llm.composer import OfflineComposer
    from marsrag.llm.replay import ReplayLLM
    from tests.faults.fault_llm import FaultLLM

    assert supports_async(make_resilient(OfflineComposer(model="offline-composer")))
    assert supports_async(make_resilient(ReplayLLM.from_outputs([])))
    assert supports_async(crewai_llm("openai/local", base_url="http://127.0.0.1:9/v1"))
    assert not supports_async(FaultLLM.scripted([])) and not supports_async(make_resilient(FaultLLM.scripted([])))
