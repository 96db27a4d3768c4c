"""The workflow runner on real CrewAI crews (replay LLM) and a real SQLite store."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from marsrag.events import JsonlSink, capture_events
from marsrag.state import FALLBACK_HOOK
from marsrag.store import RunStore
from marsrag.tasks import ProjectConfig, load_config, sample_config_dir
from tests.contract.samples import CONTENT
from tests.runtime.conftest import project_with

pytestmark = pytest.mark.crewai

SAMPLE = load_config(sample_config_dir())
NARRATIVE = sorted({n for w in SAMPLE.workflows.values() for n in w.tasks if SAMPLE.tasks[n].narrative})


def answer(**changes: Any) -> str:
    return json.dumps({k: v for k, v in {**CONTENT, **changes}.items() if v is not None})


def runner_for(store: RunStore, project: ProjectConfig, outputs: list[str], **options: Any) -> Any:
    from marsrag.llm.replay import ReplayLLM
    from marsrag.runtime.runner import WorkflowRunner

    llm = ReplayLLM.from_outputs(outputs)
    return WorkflowRunner(store, project, llm, **options), llm


def test_four_tasks_valid_repaired_failed_valid(store: RunStore, sample: ProjectConfig) -> None:
    """valid -> (invalid, repaired) -> (invalid, invalid) -> valid: six calls, direct/repair/fallback, exact hooks."""
    review = sample.tasks["recommend"].model_copy(update={"name": "review"})
    project = project_with(sample, ["diagnose", "recommend", "plan", "review"], review=review)
    outputs = [
        answer(loop="Which cache tier should we pre-warm first?"),
        answer(grip=None),
        answer(loop="Who owns the rollout checkpoints?"),
        "No idea.",
        answer(loop=None),
        answer(loop="Should we add an alert for cold caches?"),
    ]
    runner, llm = runner_for(store, project, outputs)
    with capture_events() as events:
        run = runner.run("API latency SLO breaches", workflow="flow")
    assert run.status == "completed" and len(llm.calls) == 6
    tasks = store.get_tasks(run.run_id)
    assert [t.task_id for t in tasks] == ["diagnose", "recommend", "plan", "review"]
    assert [[a.status for a in t.attempts] for t in tasks] == [
        ["valid"],
        ["partial", "valid"],
        ["failed", "partial"],
        ["valid"],
    ]
    assert [t.validation.status for t in tasks] == ["valid", "valid", "partial", "valid"]
    assert [t.hook_source for t in tasks] == ["goal", "direct", "repair", "fallback"]
    assert [t.loop_output.hook for t in tasks[1:]] == [
        "Which cache tier should we pre-warm first?",
        "Who owns the rollout checkpoints?",
        FALLBACK_HOOK,
    ]
    transitions = store.get_transitions(run.run_id)
    assert [(t.transition_source_task_id, t.transition_target_task_id, t.transition_mode) for t in transitions] == [
        ("diagnose", "recommend", "direct"),
        ("recommend", "plan", "repair"),
        ("plan", "review", "fallback"),
    ]
    assert all(t.transition_reason for t in transitions)
    assert transitions[2].transition_reason == "fields loop failed after repair"
    names = [e.name for e in store.get_events(run.run_id)]
    assert names.count("loop.contract.validated") == 3 and names.count("loop.contract.failed") == 3
    assert names.count("loop.transition.planned") == 3 and names.count("loop.transition.fallback_used") == 1
    assert [e.name for e in events] == names
    # the derived hook reached the next task's prompt, and survived into its repair retry
    assert "Which cache tier should we pre-warm first?" in json.dumps(llm.calls[1].messages)
    assert "Who owns the rollout checkpoints?" in json.dumps(llm.calls[4].messages)


@pytest.mark.parametrize("target", NARRATIVE)
def test_chaining_from_the_prior_loop(store: RunStore, sample: ProjectConfig, target: str) -> None:
    """Spec test 5, per narrative task type: the prior loop becomes the task's hook, in prompt and state."""
    prior = "diagnose" if target != "diagnose" else "plan"
    loop = f"What should the {target} step settle first?"
    runner, llm = runner_for(store, project_with(sample, [prior, target]), [answer(loop=loop), answer()])
    run = runner.run("Checkout conversion fell on Android", workflow="flow")
    state = store.get_tasks(run.run_id)[1]
    assert (state.loop_output.hook, state.hook_source) == (loop, "direct")
    assert loop in json.dumps(llm.calls[1].messages)


@pytest.mark.parametrize("target", NARRATIVE)
def test_fallback_transition_path(store: RunStore, sample: ProjectConfig, target: str) -> None:
    """Spec test 6, per narrative task type: an unusable prior gives the exact fallback question."""
    prior = "diagnose" if target != "diagnose" else "plan"
    runner, llm = runner_for(store, project_with(sample, [prior, target]), ["nothing", "still nothing", answer()])
    run = runner.run("Checkout conversion fell on Android", workflow="flow")
    state = store.get_tasks(run.run_id)[1]
    assert (state.loop_output.hook, state.hook_source) == (FALLBACK_HOOK, "fallback")
    assert FALLBACK_HOOK in json.dumps(llm.calls[2].messages)
    assert [e.name for e in store.get_events(run.run_id)].count("loop.transition.fallback_used") == 1


def test_soft_mode_hands_on_a_valid_loop_of_a_partial_answer(store: RunStore, sample: ProjectConfig) -> None:
    """Soft: a partial prior with a valid loop completes without repair and hands its loop on directly."""
    project = project_with(sample, ["diagnose", "recommend"], mode="soft")
    runner, llm = runner_for(store, project, [answer(grip="", loop="Which tier first?"), answer()])
    run = runner.run("latency", workflow="flow")
    assert len(llm.calls) == 2
    tasks = store.get_tasks(run.run_id)
    assert tasks[0].validation.status == "partial" and tasks[1].loop_output.hook == "Which tier first?"
    assert store.get_transitions(run.run_id)[0].transition_mode == "direct"


def test_mode_none_tasks_are_skipped_not_validated(store: RunStore, sample: ProjectConfig) -> None:
    """loop_mode none: statuses skipped, machine output kept as rendered text, no contract events."""
    runner, llm = runner_for(store, project_with(sample, ["diagnose", "plan"], mode="none"), ["- a", "- b"])
    run = runner.run("latency", workflow="flow")
    tasks = store.get_tasks(run.run_id)
    assert [t.validation.status for t in tasks] == ["skipped", "skipped"]
    assert [t.rendered for t in tasks] == ["- a", "- b"]
    assert not [e for e in store.get_events(run.run_id) if e.name.startswith("loop.contract")]


def test_agent_auto_runs_the_agent_routed_from_the_prior_loop(store: RunStore, sample: ProjectConfig) -> None:
    """The loop is the routing hint: agent: auto executes the prior task's routed next_agent."""
    auto = sample.tasks["recommend"].model_copy(update={"name": "routed", "agent": "auto"})
    project = project_with(sample, ["diagnose", "routed"], routed=auto)
    loop = "Should we roll out in stages with a checkpoint and a rollback?"
    runner, _ = runner_for(store, project, [answer(loop=loop), answer()])
    run = runner.run("latency", workflow="flow")
    first, second = store.get_tasks(run.run_id)
    assert first.routing.next_agent == "planner" and first.routing.next_tool == "runbook_search"
    assert first.routing.next_workflow == "change_review"
    assert second.agent == "planner"


class RecordingRetriever:
    """A knowledge base stand-in at the retrieval seam: returns one passage per query and keeps the queries."""

    def __init__(self) -> None:
        self.queries: list[str] = []

    def search(self, query: str, limit: int = 5) -> list[dict[str, Any]]:
        self.queries.append(query)
        return [{"source": f"kb/doc{len(self.queries)}.md#Heading", "text": f"passage for {query[:20]}"}]


def test_hook_shapes_the_retrieval_query(store: RunStore, sample: ProjectConfig) -> None:
    """Each task's retrieval query is built from its hook and the goal; query and results are stored."""
    retriever = RecordingRetriever()
    project = project_with(sample, ["diagnose", "recommend"])
    runner, llm = runner_for(store, project, [answer(loop="Which tier first?"), answer()], retriever=retriever)
    run = runner.run("latency breaches", workflow="flow")
    assert retriever.queries == ["latency breaches", "Which tier first? latency breaches"]
    second = store.get_tasks(run.run_id)[1]
    assert second.retrieval is not None and second.retrieval.query == "Which tier first? latency breaches"
    assert second.retrieval.results[0]["source"] == "kb/doc2.md#Heading"
    assert "kb/doc2.md#Heading" in json.dumps(llm.calls[1].messages)


def test_summary_leads_with_the_payoffs(store: RunStore, sample: ProjectConfig) -> None:
    """The run summary puts the payoffs first, valid tasks before partial ones."""
    project = project_with(sample, ["diagnose", "recommend"], mode="soft")
    outputs = [answer(payoff="Pre-warm caches.", grip=""), answer(payoff="Stagger restarts.")]
    runner, _ = runner_for(store, project, outputs)
    run = runner.run("latency", workflow="flow")
    assert run.summary.splitlines()[:2] == ["- Stagger restarts. (recommend)", "- Pre-warm caches. (diagnose)"]


def test_llm_error_fails_the_run_with_its_reason(store: RunStore, sample: ProjectConfig) -> None:
    """Running out of replayed answers ends the run failed, reason stored; what was stored stays."""
    runner, _ = runner_for(store, project_with(sample, ["diagnose", "recommend"]), [answer()])
    run = runner.run("latency", workflow="flow")
    assert run.status == "failed" and "ReplayExhaustedError" in (run.status_reason or "")
    assert [t.task_id for t in store.get_tasks(run.run_id)] == ["diagnose"]


def test_failing_sink_never_fails_the_run_and_jsonl_sink_writes(
    store: RunStore, sample: ProjectConfig, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A sink that raises is reported once per run, in one line, and skipped; the JSON Lines sink gets every event.

    Three tasks commit three times, each dispatch failing: one warning for the run (it used to be three
    tracebacks), and one more for the next run.
    """

    def broken(events: object) -> None:
        raise RuntimeError("sink down")

    path = tmp_path / "events.jsonl"
    runner, _ = runner_for(
        store,
        project_with(sample, ["diagnose", "recommend", "plan"]),
        [answer()] * 6,
        sinks=[broken, JsonlSink(path)],
    )
    with caplog.at_level(logging.WARNING, logger="marsrag.events"):
        run = runner.run("latency", workflow="flow")
        other = runner.run("latency again", workflow="flow")
    assert run.status == other.status == "completed"
    reports = [record for record in caplog.records if record.name == "marsrag.events"]
    assert [run.run_id in r.getMessage() for r in reports] == [True, False]
    assert other.run_id in reports[1].getMessage()
    for report in reports:
        message = report.getMessage()
        assert report.levelno == logging.WARNING and report.exc_info is None and "\n" not in message
        assert message.startswith("event sink broken failed for run ") and "RuntimeError: sink down" in message
    run_events = [e.name for e in store.get_events(run.run_id)]
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["name"] for line in lines][: len(run_events)] == run_events
    assert set(lines[0]) == {
        "name",
        "run_id",
        "task_id",
        "loop_contract_version",
        "loop_mode",
        "validation_status",
        "transition_mode",
        "timestamp",
    }


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_goal_with_a_nul_character_is_refused_before_anything_is_stored(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path, sample: ProjectConfig
) -> None:
    """PostgreSQL stores no NUL in text: both backends refuse it up front, with the same error, storing nothing."""
    from marsrag.errors import InputError
    from marsrag.llm.replay import ReplayLLM
    from marsrag.runtime.runner import WorkflowRunner
    from marsrag.store import open_store

    url = f"sqlite:///{tmp_path / 'runs.db'}" if backend == "sqlite" else request.getfixturevalue("postgres_url")
    with open_store(url) as opened:
        runner = WorkflowRunner(opened, sample, ReplayLLM.from_outputs([]))
        with pytest.raises(InputError, match="NUL"):
            runner.start("latency\x00 in three regions")
        with pytest.raises(InputError, match="session id"):
            runner.start("latency", session_id="s\x00")
        assert opened.list_runs() == []


def test_events_carry_the_contract_version_of_the_task_they_describe(store: RunStore, sample: ProjectConfig) -> None:
    """A task declaring contract 1.0.5 (older than the running 1.5.0) stores and emits its events under 1.0.5."""
    diagnose = sample.tasks["diagnose"].model_copy(update={"loop_contract_version": "1.0.5"})
    project = project_with(sample, ["diagnose", "recommend"], diagnose=diagnose)
    runner, _ = runner_for(store, project, [answer(), answer()])
    with capture_events() as events:
        run = runner.run("API latency SLO breaches", workflow="flow")
    versions = {task.task_id: task.loop_contract_version for task in store.get_tasks(run.run_id)}
    assert versions == {"diagnose": "1.0.5", "recommend": "1.0.0"}
    validated = {e.task_id: e.loop_contract_version for e in events if e.name == "loop.contract.validated"}
    assert validated == {"diagnose": "1.0.5", "recommend": "1.0.0"}
    # The handoff out of diagnose is described under the version of the task it leaves.
    (planned,) = [e for e in events if e.name == "loop.transition.planned"]
    assert planned.task_id == "recommend" and planned.loop_contract_version == "1.0.5"
    assert [e.to_dict() for e in store.get_events(run.run_id)] == [e.to_dict() for e in events]
