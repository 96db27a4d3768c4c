"""Traces a real receiver reads back (issue 42): runs exported over OTLP to Arize Phoenix, then read from its API.

Phoenix starts once per test session (``conftest.phoenix``); each test finds its run's trace by the run id on
the run span, then checks the whole trace: one root, the task spans under it, their LLM and retrieval spans
under them with the GenAI attributes, no span whose parent is missing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from marsrag.store import RunStore
from marsrag.tasks import ProjectConfig
from marsrag.tracing import provider, semconv
from marsrag.tracing.spans import SUBMIT
from tests._net import free_port
from tests.contract.samples import CONTENT
from tests.queue.conftest import Process, replay_script, serving, wait_for
from tests.runtime.conftest import project_with
from tests.tracing.phoenix import Phoenix

pytestmark = pytest.mark.crewai

GOAL = "Checkout latency after cache restarts"


def answer(n: int) -> str:
    return json.dumps({**CONTENT, "loop": f"Which cache tier comes next, {n}?"})


def run_in_process(store: RunStore, project: ProjectConfig, outputs: list[Any]) -> Any:
    from marsrag.llm.boundary import make_resilient
    from marsrag.llm.replay import ReplayLLM
    from marsrag.runtime.runner import WorkflowRunner

    record = WorkflowRunner(store, project, make_resilient(ReplayLLM.from_outputs(outputs))).run(GOAL, workflow="flow")
    assert provider.flush()  # the batch processor sends what it holds
    return record


def trace_of_run(phoenix: Phoenix, run_id: str, count: int) -> list[dict[str, Any]]:
    """The spans of the trace of run ``run_id``, once Phoenix has ``count`` of them."""
    named = phoenix.wait_for_spans(1, lambda s: s["attributes"].get(semconv.RUN_ID) == run_id, "the run")
    trace_id = named[0]["context"]["trace_id"]
    return phoenix.wait_for_spans(count, lambda s: s["context"]["trace_id"] == trace_id, f"run {run_id}'s trace")


def children(spans: list[dict[str, Any]], parent: dict[str, Any]) -> list[dict[str, Any]]:
    found = [span for span in spans if span["parent_id"] == parent["context"]["span_id"]]
    return sorted(found, key=lambda span: span["start_time"])


def check_run_tree(spans: list[dict[str, Any]], root: dict[str, Any], tasks: list[str]) -> None:
    """``root`` is the run span; under it a span per task, each with its retrieval and its LLM call."""
    assert root["name"] == "invoke_workflow flow"
    assert root["attributes"][semconv.OPERATION] == "invoke_workflow"
    assert root["attributes"][semconv.RUN_STATUS] == "completed"
    task_spans = children(spans, root)
    assert [span["attributes"][semconv.TASK_ID] for span in task_spans] == tasks
    for task in task_spans:
        assert task["attributes"][semconv.VALIDATION_STATUS] == "valid"
        assert "loop.contract.validated" in [event["name"] for event in task["events"]]
        inner = children(spans, task)
        assert [span["name"] for span in inner] == ["retrieval", "chat replay"]
        call = inner[1]["attributes"]
        assert call[semconv.OPERATION] == "chat" and call[semconv.PROVIDER] == "marsrag"
        assert call[semconv.REQUEST_MODEL] == call[semconv.RESPONSE_MODEL] == "replay"
        assert (call[semconv.INPUT_TOKENS], call[semconv.OUTPUT_TOKENS]) == (90, 30)
        assert call[semconv.FINISH_REASONS] == ["stop"]
        assert semconv.INPUT_MESSAGES not in call  # content capture is off by default


def no_orphan(spans: list[dict[str, Any]]) -> None:
    ids = {span["context"]["span_id"] for span in spans}
    assert all(span["parent_id"] is None or span["parent_id"] in ids for span in spans)
    assert len({span["context"]["trace_id"] for span in spans}) == 1


def steps(count: int) -> list[dict[str, Any]]:
    return [
        {"output": answer(n), "prompt_tokens": 90, "completion_tokens": 30, "finish_reason": "stop"}
        for n in range(count)
    ]


def test_a_run_in_process_is_one_trace_in_phoenix_over_http(
    to_phoenix: Phoenix, store: RunStore, sample: ProjectConfig
) -> None:
    record = run_in_process(store, project_with(sample, ["diagnose", "recommend"]), steps(2))
    spans = trace_of_run(to_phoenix, record.run_id, 7)
    assert len(spans) == 7  # the run, 2 tasks, 2 retrievals, 2 calls: nothing else, nothing twice
    no_orphan(spans)
    [root] = [span for span in spans if span["parent_id"] is None]
    assert root["attributes"][semconv.RUN_ID] == record.run_id
    check_run_tree(spans, root, ["diagnose", "recommend"])


def test_a_run_is_exported_over_grpc_when_the_protocol_says_so(
    to_phoenix: Phoenix, monkeypatch: pytest.MonkeyPatch, store: RunStore, sample: ProjectConfig
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", to_phoenix.grpc_endpoint)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    record = run_in_process(store, project_with(sample, ["diagnose"]), steps(1))
    spans = trace_of_run(to_phoenix, record.run_id, 4)
    no_orphan(spans)
    [root] = [span for span in spans if span["parent_id"] is None]
    check_run_tree(spans, root, ["diagnose"])


def test_a_run_through_a_celery_worker_is_one_trace_across_the_two_processes(
    to_phoenix: Phoenix, tmp_path: Path, spawn: Callable[..., Process]
) -> None:
    llm = replay_script(tmp_path / "answers.jsonl", [step["output"] for step in steps(3)])
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    port = free_port()
    server = spawn("serve", "--port", str(port), "--db", db, "--llm", llm, name="serve")
    worker = spawn("worker", "--db", db, "--llm", llm, name="worker")
    base = f"http://127.0.0.1:{port}"

    def logs() -> str:
        return "\n".join(f"--- {p.log.name}\n{p.output()[-3000:]}" for p in (server, worker))

    wait_for(serving(base), "the server", logs)
    started = httpx.post(f"{base}/api/runs", json={"goal": GOAL}, timeout=10)
    assert started.status_code == 202, started.text
    run_id = started.json()["run_id"]
    done = wait_for(
        lambda: httpx.get(f"{base}/api/runs/{run_id}", timeout=10).json()["status"] in ("completed", "failed"),
        "the run to end",
        logs,
    )
    assert done and httpx.get(f"{base}/api/runs/{run_id}", timeout=10).json()["status"] == "completed", logs()
    # The server's submit span (its process) is the root; the worker's run span (the other) continues it.
    submit, run = 1, 1
    spans = trace_of_run(to_phoenix, run_id, submit + run + 3 * 3)
    no_orphan(spans)
    [root] = [span for span in spans if span["parent_id"] is None]
    assert root["name"] == SUBMIT and root["attributes"][semconv.RUN_ID] == run_id
    [run_span] = children(spans, root)
    assert run_span["attributes"][semconv.RUN_ID] == run_id
    tasks = [span["attributes"][semconv.TASK_ID] for span in children(spans, run_span)]
    assert len(tasks) == 3
