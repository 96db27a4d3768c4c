"""``process: hierarchical`` on real CrewAI crews: the manager delegates each task, the contract binds its answer.

The replay LLM scripts every turn, the manager's included: a delegation is the ReAct action CrewAI's manager
takes (``Action: Delegate work to coworker``), the coworker's answer comes back as the tool's observation, and
the manager's ``Final Answer:`` is what the task returns and the contract judges.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from marsrag.store import RunStore
from marsrag.tasks import AgentConfig, ProjectConfig, WorkflowConfig, load_config
from tests.contract.samples import CONTENT

pytestmark = pytest.mark.crewai

DIAGNOSIS_LOOP = "Which cache tier should we pre-warm first?"
ADVICE_LOOP = "Who owns the pre-warm rollout checkpoints?"


def answer(**changes: str) -> str:
    return json.dumps({**CONTENT, **changes})


def delegate(coworker: str, task: str) -> str:
    """The manager's turn handing ``task`` to ``coworker`` with CrewAI's delegation tool."""
    arguments = {"task": task, "context": "Answer with the five sections HOOK to LOOP as JSON.", "coworker": coworker}
    return (
        f"Thought: {coworker} should do this.\nAction: Delegate work to coworker\nAction Input: {json.dumps(arguments)}"
    )


def final(text: str) -> str:
    return f"Thought: I now know the final answer.\nFinal Answer: {text}"


def hierarchical(sample: ProjectConfig, **settings: Any) -> ProjectConfig:
    """The sample project with a hierarchical workflow ``managed`` running diagnose then recommend."""
    settings = {"process": "hierarchical", **settings}
    workflow = WorkflowConfig(name="managed", loop_mode="hard", tasks=["diagnose", "recommend"], **settings)
    agents = {**sample.agents, "lead": AgentConfig(name="lead", role="Support lead", goal="Run the support team.")}
    return sample.model_copy(update={"agents": agents, "workflows": {"managed": workflow, **sample.workflows}})


def runner_for(store: RunStore, project: ProjectConfig, outputs: list[Any]) -> tuple[Any, Any]:
    from marsrag.llm.boundary import make_resilient
    from marsrag.llm.replay import ReplayLLM
    from marsrag.runtime.runner import WorkflowRunner

    # At the LLM boundary, as resolve_llm puts every run's LLM: each call is recorded for its task's attempt.
    llm = make_resilient(ReplayLLM.from_outputs(outputs))
    return WorkflowRunner(store, project, llm), llm


def prompt(call: Any) -> str:
    return json.dumps(call.messages)


def test_managed_tasks_are_validated_and_chained_in_order(store: RunStore, sample: ProjectConfig) -> None:
    """Two delegated narrative tasks: both valid in one answer each, the second's hook is the first's loop."""
    diagnosis, advice = answer(loop=DIAGNOSIS_LOOP), answer(loop=ADVICE_LOOP)
    outputs = [
        delegate("Incident analyst", "Diagnose the API latency breaches."),
        final(diagnosis),  # the analyst's answer, the tool's observation
        final(diagnosis),  # the manager's answer of the task
        delegate("Reliability advisor", "Recommend the fix."),
        final(advice),
        final(advice),
    ]
    # Each call's prompt tokens tell which attempt counted it: 1, 10, 100 for diagnose's calls, and so on.
    steps = [{"output": output, "prompt_tokens": 10**number} for number, output in enumerate(outputs)]
    runner, llm = runner_for(store, hierarchical(sample), steps)
    run = runner.run("API latency SLO breaches", workflow="managed")
    assert run.status == "completed" and llm.remaining == 0
    # The manager's calls are the tasks' own; each coworker's is for the plain task the delegation made.
    assert [call.task for call in llm.calls] == ["diagnose", None, "diagnose", "recommend", None, "recommend"]
    tasks = store.get_tasks(run.run_id)
    assert [(t.task_id, t.agent, t.validation.status) for t in tasks] == [
        ("diagnose", "analyst", "valid"),
        ("recommend", "advisor", "valid"),
    ]
    assert [[a.status for a in t.attempts] for t in tasks] == [["valid"], ["valid"]]
    # The coworker's call is part of the delegating task's attempt (its cost), not lost with the plain task.
    assert [t.attempts[0].prompt_tokens for t in tasks] == [111, 111000]
    assert [(t.hook_source, t.loop_output.hook) for t in tasks] == [
        ("goal", CONTENT["hook"]),
        ("direct", DIAGNOSIS_LOOP),
    ]
    (transition,) = store.get_transitions(run.run_id)
    assert (transition.transition_source_task_id, transition.transition_target_task_id) == ("diagnose", "recommend")
    assert (transition.transition_mode, transition.hook) == ("direct", DIAGNOSIS_LOOP)
    # The manager is told to pass the format on; the hook reached the manager of the second task; the
    # coworker got the manager's delegation, nothing of the contract it was not handed.
    assert "delegate it to the coworker with the whole task and this answer format" in prompt(llm.calls[0])
    assert DIAGNOSIS_LOOP in prompt(llm.calls[3]) and DIAGNOSIS_LOOP not in prompt(llm.calls[0])
    assert "Current Task: Diagnose the API latency breaches." in prompt(llm.calls[1])
    assert "Crew Manager" in prompt(llm.calls[0]) and "Incident analyst" in prompt(llm.calls[1])


def test_a_managers_summary_is_repaired_once_then_kept(store: RunStore, sample: ProjectConfig) -> None:
    """The manager summarizes instead of answering: one repair with the errors fed back to the manager, no
    converter call (six LLM calls in all); a second prose answer falls back and the chain goes on."""
    outputs = [
        delegate("Incident analyst", "Diagnose it."),
        final(answer(loop=DIAGNOSIS_LOOP)),
        final("The analyst traced the breaches to cold caches after restarts."),  # a summary, no sections
        final(answer(loop=DIAGNOSIS_LOOP)),  # the repair, answered by the manager
        final("The advisor recommends pre-warming."),  # recommend: the manager answers without delegating
        final("Pre-warm the caches."),  # its repair fails too: recorded, never raised
    ]
    runner, llm = runner_for(store, hierarchical(sample), outputs)
    run = runner.run("API latency SLO breaches", workflow="managed")
    assert run.status == "completed" and len(llm.calls) == 6 and llm.remaining == 0
    assert "Previous attempt failed validation" in prompt(llm.calls[3]) and llm.calls[3].task == "diagnose"
    tasks = store.get_tasks(run.run_id)
    assert [[a.status for a in t.attempts] for t in tasks] == [["failed", "valid"], ["failed", "failed"]]
    assert [t.validation.status for t in tasks] == ["valid", "failed"]
    assert [(t.hook_source, t.loop_output.hook) for t in tasks[1:]] == [("repair", DIAGNOSIS_LOOP)]
    assert [t.transition_mode for t in store.get_transitions(run.run_id)] == ["repair"]


def test_a_named_manager_agent_manages(store: RunStore, sample: ProjectConfig) -> None:
    """``manager_agent: lead``: the lead's role is the manager's prompt, the workers keep their tasks."""
    outputs = [
        delegate("Incident analyst", "Diagnose it."),
        final(answer(loop=DIAGNOSIS_LOOP)),
        final(answer(loop=DIAGNOSIS_LOOP)),
        final(answer()),  # recommend: the lead answers it directly
    ]
    runner, llm = runner_for(store, hierarchical(sample, manager_agent="lead"), outputs)
    run = runner.run("API latency SLO breaches", workflow="managed")
    assert run.status == "completed" and llm.remaining == 0
    assert "You are Support lead." in prompt(llm.calls[0]) and "Crew Manager" not in prompt(llm.calls[0])
    tasks = store.get_tasks(run.run_id)
    assert [(t.agent, t.validation.status) for t in tasks] == [("analyst", "valid"), ("advisor", "valid")]


def test_manager_llm_answers_the_managers_turns(store: RunStore, sample: ProjectConfig, tmp_path: Path) -> None:
    """``manager_llm: replay:FILE``: the manager's turns come from that script, the coworkers' from the run's LLM."""
    script = tmp_path / "manager.jsonl"
    turns = [delegate("Incident analyst", "Diagnose it."), final(answer(loop=DIAGNOSIS_LOOP)), final(answer())]
    script.write_text("".join(json.dumps({"output": turn}) + "\n" for turn in turns))
    project = hierarchical(sample, manager_llm=f"replay:{script}")
    runner, llm = runner_for(store, project, [final(answer(loop=DIAGNOSIS_LOOP))])
    run = runner.run("API latency SLO breaches", workflow="managed")
    assert run.status == "completed" and llm.remaining == 0
    assert [call.task for call in llm.calls] == [None]  # the analyst's only
    tasks = store.get_tasks(run.run_id)
    assert [t.validation.status for t in tasks] == ["valid", "valid"]
    assert tasks[1].loop_output.hook == DIAGNOSIS_LOOP


def test_hierarchical_workflow_loads_from_yaml(tmp_path: Path, sample: ProjectConfig) -> None:
    """``process`` and ``manager_agent`` are read from workflows.yaml; a manager that also works is refused."""
    from marsrag.errors import ConfigError

    source = Path(sample.source)
    for name in ("agents.yaml", "tasks.yaml"):
        (tmp_path / name).write_text((source / name).read_text())
    (tmp_path / "agents.yaml").write_text(
        (source / "agents.yaml").read_text() + "\nlead:\n  role: Support lead\n  goal: Run the support team.\n"
    )
    (tmp_path / "workflows.yaml").write_text(
        "managed:\n  process: hierarchical\n  manager_agent: lead\n  tasks: [diagnose, recommend]\n"
    )
    workflow = load_config(tmp_path).workflow("managed")
    assert (workflow.process, workflow.manager_agent, workflow.manager_llm) == ("hierarchical", "lead", None)
    (tmp_path / "workflows.yaml").write_text(
        "managed:\n  process: hierarchical\n  manager_agent: analyst\n  tasks: [diagnose, recommend]\n"
    )
    with pytest.raises(ConfigError, match="LC109 .*manager agent 'analyst' also runs task 'diagnose'"):
        load_config(tmp_path)
