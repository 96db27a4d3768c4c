"""A run's spans (issue 42): one trace per run, task, retrieval and LLM spans with the GenAI attributes.

Spans go through MarsRAG's tracer to OpenTelemetry's own in-memory exporter: the whole tree of every run is
checked here; ``test_phoenix.py`` checks that a real receiver gets the same over OTLP.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pytest

from marsrag.store import RunStore
from marsrag.tasks import ProjectConfig
from marsrag.tracing import provider, semconv
from tests.contract.samples import CONTENT
from tests.runtime.conftest import project_with

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

pytestmark = pytest.mark.crewai

GOAL = "Checkout latency zanzibar after cache restarts"
#: What a model is asked besides the goal: the task description's own words.
PROMPT_WORDS = "LoopOutput"


def answer(**changes: Any) -> str:
    return json.dumps({k: v for k, v in {**CONTENT, **changes}.items() if v is not None})


def step(output: str) -> dict[str, Any]:
    return {"output": output, "prompt_tokens": 120, "completion_tokens": 40, "finish_reason": "stop"}


def run(store: RunStore, project: ProjectConfig, outputs: Sequence[str | dict[str, Any]]) -> Any:
    from marsrag.llm.boundary import make_resilient
    from marsrag.llm.replay import ReplayLLM
    from marsrag.runtime.runner import WorkflowRunner

    llm = make_resilient(ReplayLLM.from_outputs(outputs))
    return WorkflowRunner(store, project, llm).run(GOAL, workflow="flow")


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def tree(spans: Sequence[ReadableSpan]) -> dict[int | None, list[ReadableSpan]]:
    """Spans by their parent's span id (None: roots)."""
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in sorted(spans, key=lambda s: s.start_time or 0):
        parent = span.parent.span_id if span.parent is not None else None
        children.setdefault(parent, []).append(span)
    return children


def test_a_run_is_one_trace_of_its_run_its_tasks_their_retrieval_and_their_llm_calls(
    memory: InMemorySpanExporter, store: RunStore, sample: ProjectConfig
) -> None:
    project = project_with(sample, ["diagnose", "recommend"])
    handed = "Which cache tier should we pre-warm first?"
    record = run(store, project, [step(answer(loop=handed)), step(answer(hook=handed))])
    assert record.status == "completed"
    spans = memory.get_finished_spans()
    assert len({span.context.trace_id for span in spans}) == 1
    ids = {span.context.span_id for span in spans}
    assert all(span.parent is None or span.parent.span_id in ids for span in spans)  # no orphan
    children = tree(spans)
    [root] = children[None]
    assert root.name == "invoke_workflow flow"
    assert attributes(root) | {
        semconv.OPERATION: "invoke_workflow",
        semconv.RUN_ID: record.run_id,
        semconv.LOOP_MODE: "hard",
        semconv.RUN_STATUS: "completed",
        f"{semconv.OUTCOME}.valid": 2,
    } == attributes(root)
    tasks = children[root.context.span_id]
    assert [attributes(t)[semconv.TASK_ID] for t in tasks] == ["diagnose", "recommend"]
    stored = store.get_tasks(record.run_id)
    for task, state in zip(tasks, stored, strict=True):
        values = attributes(task)
        assert values[semconv.OPERATION] == "invoke_agent" and values[semconv.RUN_ID] == record.run_id
        assert values[semconv.VALIDATION_STATUS] == state.validation.status == "valid"
        assert values[semconv.CONTRACT_VERSION] == state.loop_contract_version
        assert values[semconv.SUPPORT] == state.retrieval.support.level  # type: ignore[union-attr]
        # The loop events stored with the task are on its span too.
        names = [event.name for event in task.events]
        assert "loop.contract.validated" in names
        inner = children[task.context.span_id]
        assert [span.name for span in inner] == ["retrieval", "chat replay"]
        call = attributes(inner[1])
        assert (
            call
            | {
                semconv.OPERATION: "chat",
                semconv.PROVIDER: "marsrag",
                semconv.REQUEST_MODEL: "replay",
                semconv.RESPONSE_MODEL: "replay",
                semconv.INPUT_TOKENS: 120,
                semconv.OUTPUT_TOKENS: 40,
                semconv.FINISH_REASONS: ("stop",),
                semconv.ATTEMPT: 1,
            }
            == call
        )
        assert call[semconv.STRUCTURED_OUTPUT] in ("json_schema", "json_object", "grammar", "prompt")
    transition = attributes(tasks[0])
    assert transition[semconv.TRANSITION_MODE] == store.get_transitions(record.run_id)[0].transition_mode
    assert "loop.transition.planned" in [event.name for event in tasks[0].events]


def test_a_repaired_task_shows_both_attempts(
    memory: InMemorySpanExporter, store: RunStore, sample: ProjectConfig
) -> None:
    project = project_with(sample, ["diagnose"])
    record = run(store, project, [step("I think the cache is cold."), step(answer())])
    assert record.status == "completed"
    spans = memory.get_finished_spans()
    [task] = [span for span in spans if span.name.startswith("invoke_agent")]
    calls = [span for span in tree(spans)[task.context.span_id] if span.name.startswith("chat")]
    assert [attributes(call)[semconv.ATTEMPT] for call in calls] == [1, 2]
    judged = [dict(e.attributes or {}) for e in task.events if e.name == semconv.ATTEMPT_EVENT]
    assert [(j[semconv.ATTEMPT], j[semconv.VALIDATION_STATUS]) for j in judged] == [(1, "failed"), (2, "valid")]
    assert attributes(task)[semconv.ATTEMPTS] == 2
    assert [e.name for e in task.events].count("loop.contract.failed") == 1


def _texts(spans: Sequence[ReadableSpan]) -> str:
    """Every attribute value of every span and span event, as text."""
    values: list[str] = []
    for span in spans:
        values += [str(value) for value in (span.attributes or {}).values()]
        for event in span.events:
            values += [str(value) for value in (event.attributes or {}).values()]
    return "\n".join(values)


def test_without_content_capture_no_prompt_or_answer_is_on_any_span(
    memory: InMemorySpanExporter, store: RunStore, sample: ProjectConfig
) -> None:
    project = project_with(sample, ["diagnose"])
    run(store, project, [step(answer())])
    texts = _texts(memory.get_finished_spans())
    assert "zanzibar" not in texts and PROMPT_WORDS not in texts and CONTENT["payoff"] not in texts


def test_with_content_capture_the_messages_and_the_answer_are_on_the_llm_spans(
    memory: InMemorySpanExporter, store: RunStore, sample: ProjectConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MARSRAG_TRACE_CONTENT", "true")
    project = project_with(sample, ["diagnose"])
    run(store, project, [step(answer())])
    [call] = [span for span in memory.get_finished_spans() if span.name.startswith("chat")]
    messages = json.loads(attributes(call)[semconv.INPUT_MESSAGES])
    assert any("zanzibar" in part["content"] for message in messages for part in message["parts"])
    [output] = json.loads(attributes(call)[semconv.OUTPUT_MESSAGES])
    assert output["role"] == "assistant" and CONTENT["payoff"] in output["parts"][0]["content"]


def test_a_resumed_run_starts_a_new_trace_linked_to_its_first(
    memory: InMemorySpanExporter, store: RunStore, sample: ProjectConfig
) -> None:
    from marsrag.llm.boundary import make_resilient
    from marsrag.llm.replay import ReplayLLM
    from marsrag.runtime.runner import WorkflowRunner

    project = project_with(sample, ["diagnose", "recommend"])
    # The script ends after the first task: the second task's call fails, and so does the run.
    first = run(store, project, [step(answer())])
    assert first.status == "failed"
    [first_root] = [span for span in memory.get_finished_spans() if span.parent is None]
    assert attributes(first_root)[semconv.RUN_STATUS] == "failed"
    assert not first_root.status.is_ok
    stored = store.get_run(first.run_id)
    assert stored.trace is not None and f"{first_root.context.span_id:016x}" in stored.trace
    memory.clear()
    llm = make_resilient(ReplayLLM.from_outputs([step(answer())]))
    resumed = WorkflowRunner(store, project, llm).resume(first.run_id)
    assert resumed.status == "completed"
    spans = memory.get_finished_spans()
    [root] = [span for span in spans if span.parent is None]
    assert root.context.trace_id != first_root.context.trace_id
    assert [link.context.span_id for link in root.links] == [first_root.context.span_id]
    assert attributes(root)[semconv.RESUMED] is True
    assert [attributes(s)[semconv.TASK_ID] for s in spans if s.name.startswith("invoke_agent")] == ["recommend"]
    assert store.get_run(first.run_id).trace == stored.trace  # the run keeps its first trace


def test_a_run_whose_first_retrieval_fails_ends_its_task_span_failed_and_keeps_none(
    memory: InMemorySpanExporter, tmp_path: Any, sample: ProjectConfig
) -> None:
    """The knowledge base breaks before the first task has an execution to end its span: nothing stays open."""
    import sqlite3

    from marsrag.store import open_store
    from marsrag.tracing.spans import TASKS

    path = tmp_path / "broken.db"
    with open_store(f"sqlite:///{path}"):
        pass
    with sqlite3.connect(path) as connection:
        connection.execute("DROP TABLE chunks_fts")  # the knowledge search now fails in the first task's briefing
    from marsrag.llm.boundary import make_resilient
    from marsrag.llm.replay import ReplayLLM
    from marsrag.rag.knowledge import KnowledgeBase
    from marsrag.runtime.runner import WorkflowRunner

    with open_store(f"sqlite:///{path}") as broken:
        llm = make_resilient(ReplayLLM.from_outputs([step(answer())]))
        runner = WorkflowRunner(broken, project_with(sample, ["diagnose"]), llm, retriever=KnowledgeBase(broken))
        record = runner.run(GOAL, workflow="flow")
    assert record.status == "failed" and "knowledge base" in (record.status_reason or "")
    spans = memory.get_finished_spans()
    [task] = [span for span in spans if span.name.startswith("invoke_agent")]
    [root] = [span for span in spans if span.parent is None]
    assert task.parent is not None and task.parent.span_id == root.context.span_id
    assert task.status.status_code.name == "ERROR" and root.status.status_code.name == "ERROR"
    assert len(TASKS) == 0


def test_unconfigured_nothing_is_traced(untraced: None, store: RunStore, sample: ProjectConfig) -> None:
    project = project_with(sample, ["diagnose"])
    record = run(store, project, [step(answer())])
    assert record.status == "completed" and provider.tracer() is None
    assert store.get_run(record.run_id).trace is None


#: Every span a run makes, made with no OpenTelemetry configured, then what it imported.
_UNCONFIGURED = """
import json, sys
from marsrag.state import RunRecord
from marsrag.tracing import spans
run = RunRecord(run_id="r", session_id="s", goal="g", workflow="w", loop_mode="hard")
with spans.submitting():
    root = spans.start_run(run, resumed=False)
    task = spans.start_task(root, run, "t", 0, None)
    spans.TASKS.open(object(), task)
    call = spans.start_call(task, model="m", provider="p", endpoint="h:1", local=False, messages=[])
    spans.end_call(call, model="m", mode=None, refused=(), input_tokens=1, output_tokens=1, finish_reason="stop")
    spans.start_retrieval(task, "q", limit=5).end()
    spans.end_run(root, run, {"valid": 1})
print(json.dumps([spans.current_traceparent(), bool(root), sorted(m for m in sys.modules if "opentelemetry" in m)]))
"""


def test_unconfigured_tracing_imports_nothing_of_opentelemetry(untraced: None) -> None:
    """Off, every span function is a no-op that loads nothing: a run pays for tracing only when it is on."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run([sys.executable, "-c", _UNCONFIGURED], capture_output=True, text=True, env=env, check=True)
    assert json.loads(done.stdout) == [None, False, []]


def test_a_flow_is_one_trace_with_a_span_per_step_and_its_calls_under_it(
    memory: InMemorySpanExporter, store: RunStore, sample: ProjectConfig
) -> None:
    from marsrag.llm.boundary import make_resilient
    from marsrag.llm.replay import ReplayLLM
    from tests.flows.triage import TO_ROLLOUT, TriageFlow
    from tests.flows.triage import answer as flow_answer

    outputs = [flow_answer(), flow_answer(grip=None), flow_answer(loop=TO_ROLLOUT), flow_answer()]
    flow = TriageFlow(
        store=store, llm=make_resilient(ReplayLLM.from_outputs(outputs)), project=sample, suppress_flow_events=True
    )
    flow.kickoff(inputs={"goal": GOAL})
    assert flow.run is not None and flow.run.status == "completed"
    spans = memory.get_finished_spans()
    assert len({span.context.trace_id for span in spans}) == 1
    children = tree(spans)
    [root] = children[None]
    assert root.name == "invoke_workflow triage_flow" and attributes(root)[semconv.RUN_ID] == flow.run.run_id
    steps = children[root.context.span_id]
    assert [attributes(s)[semconv.TASK_ID] for s in steps] == ["diagnose", "recommend", "plan"]
    assert [attributes(s)[semconv.ATTEMPTS] for s in steps] == [1, 2, 1]
    for step_span in steps:
        inner = children[step_span.context.span_id]
        assert inner[0].name == "retrieval"
        calls = [attributes(span) for span in inner if span.name.startswith("chat")]
        assert [call[semconv.ATTEMPT] for call in calls] == list(range(1, attributes(step_span)[semconv.ATTEMPTS] + 1))
        assert "loop.contract.validated" in [event.name for event in step_span.events]
    assert store.get_run(flow.run.run_id).trace is not None


def test_a_refused_structured_output_and_a_failed_call_are_on_the_call_span(
    memory: InMemorySpanExporter, store: RunStore, sample: ProjectConfig
) -> None:
    project = project_with(sample, ["diagnose", "recommend"])
    refusal = {"error": {"status": 400, "body": "response_format json_schema is not supported"}}
    # The first call is refused its schema and answered in the next mode; the second task's call fails outright.
    record = run(store, project, [refusal, step(answer()), {"error": {"status": 400, "body": "bad request"}}])
    assert record.status == "failed"
    calls = [span for span in memory.get_finished_spans() if span.name.startswith("chat")]
    assert len(calls) == 2
    refused = attributes(calls[0])
    assert refused[semconv.STRUCTURED_OUTPUT_REFUSED] == ("json_schema",)
    assert refused[semconv.STRUCTURED_OUTPUT] != "json_schema" and calls[0].status.is_ok
    assert not calls[1].status.is_ok and semconv.ERROR_TYPE in attributes(calls[1])
    [root] = [span for span in memory.get_finished_spans() if span.parent is None]
    failed = [span for span in memory.get_finished_spans() if span.name.startswith("invoke_agent")]
    assert not root.status.is_ok and not failed[-1].status.is_ok


def test_an_operator_repair_is_a_trace_of_its_own_linked_to_the_runs(
    memory: InMemorySpanExporter, store: RunStore, sample: ProjectConfig
) -> None:
    from marsrag.llm.boundary import make_resilient
    from marsrag.llm.replay import ReplayLLM
    from marsrag.runtime.actions import repair_task
    from marsrag.runtime.runner import WorkflowRunner

    project = project_with(sample, ["diagnose"])
    llm = make_resilient(ReplayLLM.from_outputs(["No idea.", "No idea.", answer()]))
    runner = WorkflowRunner(store, project, llm)
    record = runner.run(GOAL, workflow="flow")
    [first] = [span for span in memory.get_finished_spans() if span.parent is None]
    memory.clear()
    assert repair_task(runner, record.run_id, "diagnose").validation.status == "valid"
    spans = memory.get_finished_spans()
    [root] = [span for span in spans if span.parent is None]
    assert root.name == "repair diagnose" and attributes(root)[semconv.ACTION] == "repair"
    assert root.context.trace_id != first.context.trace_id
    assert [link.context.span_id for link in root.links] == [first.context.span_id]
    [call] = [span for span in spans if span.name.startswith("chat")]
    assert call.parent is not None and call.parent.span_id == root.context.span_id
    assert attributes(call)[semconv.ATTEMPT] == 1
