"""Streamed answers become task progress in the store, and never change what is validated and stored (issue 41)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from marsrag.errors import StoreError
from marsrag.runtime.progress import TaskProgressListener
from marsrag.state import TaskProgress
from marsrag.store import RunStore
from marsrag.tasks import ProjectConfig
from tests.contract.samples import CONTENT
from tests.runtime.conftest import project_with

pytestmark = pytest.mark.crewai


def answer(**changes: Any) -> str:
    return json.dumps({k: v for k, v in {**CONTENT, **changes}.items() if v is not None})


def _run(store: RunStore, project: ProjectConfig, outputs: list[str], **replay: Any) -> tuple[Any, Any]:
    from marsrag.llm.boundary import make_resilient
    from marsrag.llm.replay import ReplayLLM
    from marsrag.runtime.runner import WorkflowRunner

    # At the LLM boundary, as every LLM a run resolves is: the boundary hands the chunks on.
    llm = make_resilient(ReplayLLM.from_outputs(outputs, **replay))
    return WorkflowRunner(store, project, llm).run("Checkout latency after cache restarts", workflow="flow"), llm


def _stored(store: RunStore, run_id: str) -> list[tuple[str, str, dict[str, Any], list[str]]]:
    return [
        (t.task_id, t.validation.status, t.loop_output.model_dump(), [a.raw for a in t.attempts])
        for t in store.get_tasks(run_id)
    ]


def test_a_streamed_run_leaves_each_tasks_sections_as_progress_and_stores_what_a_plain_run_does(
    store: RunStore, sample: ProjectConfig
) -> None:
    project = project_with(sample, ["diagnose", "recommend"])
    handed = "Which cache tier should we pre-warm first?"
    outputs = [answer(loop=handed), answer(hook=handed)]  # the second task's hook is the one handed to it
    plain, _ = _run(store, project, outputs)
    streamed, llm = _run(store, project, outputs, stream=True)
    assert streamed.status == plain.status == "completed" and len(llm.calls) == 2
    assert store.progress_since(plain.run_id) == []  # an LLM that does not stream leaves no progress
    progress = store.progress_since(streamed.run_id)
    assert [(p.position, p.task_id) for p in progress] == [(0, "diagnose"), (1, "recommend")]
    tasks = store.get_tasks(streamed.run_id)
    # The last progress of each task is its whole answer, read by the contract's grammar: the stored sections.
    assert [p.sections for p in progress] == [t.loop_output.model_dump() for t in tasks]
    assert all(p.writing == "loop" and p.call == 1 and p.chunks > 5 for p in progress)
    assert _stored(store, streamed.run_id) == _stored(store, plain.run_id)


def test_a_repair_starts_the_tasks_text_again(store: RunStore, sample: ProjectConfig) -> None:
    project = project_with(sample, ["diagnose"])
    run, _ = _run(store, project, [answer(grip=None), answer()], stream=True)
    [progress] = store.progress_since(run.run_id)
    assert progress.call == 2 and progress.sections == dict(CONTENT)
    assert [a.status for a in store.get_tasks(run.run_id)[0].attempts] == ["partial", "valid"]


def _listener(published: list[TaskProgress], every: float = 60.0) -> TaskProgressListener:
    return TaskProgressListener(published.append, run_id="r", task_id="t", position=0, every=every)


def test_between_publishes_only_a_new_section_forces_one() -> None:
    """The first chunk publishes; text within a section waits for the interval; a new section's label does not."""
    published: list[TaskProgress] = []
    listener = _listener(published)
    listener.call_started()
    for piece in ['{"hook": "Checkout', " is", " slow", " since", ' restarts.",', ' "grip": "Cold', " caches"]:
        listener.chunk(piece)
    assert [p.sections for p in published] == [
        {"hook": "Checkout"},
        {"hook": "Checkout is slow since restarts.", "grip": "Cold"},
    ]
    assert published[-1].writing == "grip" and published[-1].chunks == 6


def test_without_a_wait_every_chunk_publishes_and_a_new_call_starts_over() -> None:
    published: list[TaskProgress] = []
    listener = _listener(published, every=0.0)
    listener.call_started()
    listener.chunk("HOOK: Checkout is slow.\nGRIP: Cold")
    listener.call_started()
    listener.chunk("HOOK: Again")
    assert [(p.call, p.sections) for p in published] == [
        (1, {"hook": "Checkout is slow.", "grip": "Cold"}),
        (2, {"hook": "Again"}),
    ]


def test_a_store_that_cannot_take_progress_loses_a_frame_not_the_run() -> None:
    def broken(_progress: TaskProgress) -> None:
        raise StoreError("database is locked")

    listener = TaskProgressListener(broken, run_id="r", task_id="t", position=0)
    listener.chunk("HOOK: still fine")  # no exception: a viewer misses this frame
    assert listener.heard
