"""A user's ``@CrewBase`` crew, as written for CrewAI, bound to the contract and run through the WorkflowRunner."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from marsrag.errors import ConfigError
from marsrag.store import RunStore
from tests.contract.samples import CONTENT

pytestmark = pytest.mark.crewai

AGENTS = """\
researcher:
  role: Senior {topic} researcher
  goal: Find what is known about the user's problem.
  backstory: You read incident reports for a living.
writer:
  role: Technical writer
  goal: Turn findings into advice an on-call engineer can follow.
  backstory: You write runbooks.
"""
TASKS = """\
research_task:
  description: Research the problem behind {goal} for the {topic} team.
  expected_output: The three most likely causes, with evidence.
  agent: researcher
advice_task:
  description: Advise on the fix.
  expected_output: One recommended fix and why.
  agent: writer
index_task:
  description: List the keywords of the advice for the search index.
  expected_output: Keywords, comma separated.
  agent: writer
  narrative: false
"""
RESEARCH_LOOP = "Which cache tier should we pre-warm first?"


def answer(**changes: str) -> str:
    return json.dumps({**CONTENT, **changes})


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    """A real SQLite store in a fresh file."""
    from marsrag.store import open_store

    with open_store(f"sqlite:///{tmp_path / 'runs.db'}") as opened:
        yield opened


@pytest.fixture
def crew_class(tmp_path: Path) -> Any:
    """A @CrewBase class exactly as a CrewAI project writes one, its YAML in tmp_path."""
    from crewai import Agent, Crew, Process, Task
    from crewai.project import CrewBase, agent, task
    from crewai.project import crew as crew_method  # "crew" is the method's own name in the class body

    (tmp_path / "agents.yaml").write_text(AGENTS)
    (tmp_path / "tasks.yaml").write_text(TASKS)

    @CrewBase
    class SupportCrew:
        agents_config = str(tmp_path / "agents.yaml")
        tasks_config = str(tmp_path / "tasks.yaml")
        agents: list[Any]
        tasks: list[Any]

        @agent
        def researcher(self) -> Agent:
            return Agent(config=self.agents_config["researcher"], llm="openai/gpt-4o-mini")  # type: ignore[index]

        @agent
        def writer(self) -> Agent:
            return Agent(config=self.agents_config["writer"], llm="openai/gpt-4o-mini")  # type: ignore[index]

        @task
        def research_task(self) -> Task:
            return Task(config=self.tasks_config["research_task"])  # type: ignore[index]

        @task
        def advice_task(self) -> Task:
            return Task(config=self.tasks_config["advice_task"])  # type: ignore[index]

        @task
        def index_task(self) -> Task:
            return Task(config=self.tasks_config["index_task"])  # type: ignore[index]

        @crew_method
        def crew(self) -> Crew:
            return Crew(agents=self.agents, tasks=self.tasks, process=Process.sequential)

    return SupportCrew


def run_bound(store: RunStore, bound: Any, outputs: list[str], goal: str = "API latency SLO breaches") -> Any:
    from marsrag.llm.replay import ReplayLLM
    from marsrag.runtime.runner import WorkflowRunner

    llm = ReplayLLM.from_outputs(outputs)
    runner = WorkflowRunner(store, bound.project, llm, crews=bound)
    return runner.run(goal), llm


def test_a_crewbase_crew_is_bound_validated_chained_and_stored(store: RunStore, crew_class: Any) -> None:
    """Its two narrative tasks return LoopOutputs (one repaired), the second opens with the first's loop, the
    machine-first task keeps its own expected output; all stored as a run of workflow ``support_crew``."""
    from marsrag.integrations.crewbase import bind_contract

    bound = bind_contract(crew_class, inputs={"topic": "payments"})
    assert bound.project.workflow().name == "support_crew"
    assert [(t.name, t.agent, t.narrative) for t in bound.project.tasks.values()] == [
        ("research_task", "researcher", True),
        ("advice_task", "writer", True),
        ("index_task", "writer", False),
    ]
    outputs = [answer(loop=RESEARCH_LOOP), "No sections at all.", answer(), "cache, pre-warm, snapshot"]
    run, llm = run_bound(store, bound, outputs)
    assert run.status == "completed" and run.workflow == "support_crew" and llm.remaining == 0
    tasks = store.get_tasks(run.run_id)
    assert [(t.task_id, t.agent, t.validation.status) for t in tasks] == [
        ("research_task", "researcher", "valid"),
        ("advice_task", "writer", "valid"),
        ("index_task", "writer", "skipped"),
    ]
    assert [[a.status for a in t.attempts] for t in tasks] == [["valid"], ["failed", "valid"], ["skipped"]]
    assert (tasks[1].hook_source, tasks[1].loop_output.hook) == ("direct", RESEARCH_LOOP)
    assert tasks[2].rendered == "cache, pre-warm, snapshot"
    assert [t.transition_mode for t in store.get_transitions(run.run_id)] == ["direct", "repair"]
    prompts = [json.dumps(call.messages) for call in llm.calls]
    # The crew's own placeholders and agents; the contract's template; the hook; the crew's expected output kept.
    assert "Senior payments researcher" in prompts[0] and "for the payments team" in prompts[0]
    assert "HOOK:" in prompts[0] and "What the answer covers: The three most likely causes" in prompts[0]
    assert RESEARCH_LOOP in prompts[1] and "Keywords, comma separated." in prompts[3]
    # No template for the task without the contract; its context is the previous task's sections, labelled.
    assert "Open with one clear tension" not in prompts[3] and "PAYOFF: " in prompts[3]


def test_every_run_builds_a_fresh_crew(store: RunStore, crew_class: Any) -> None:
    """Two runs of one bound crew: each prompt has its own goal and hook only (CrewAI's tasks keep state)."""
    from marsrag.integrations.crewbase import bind_contract

    bound = bind_contract(crew_class, narrative=["research_task", "advice_task"], inputs={"topic": "search"})
    first, _ = run_bound(store, bound, [answer(loop="First loop?"), answer(), "a, b"], goal="First goal")
    second, llm = run_bound(store, bound, [answer(loop="Second loop?"), answer(), "c, d"], goal="Second goal")
    assert first.status == second.status == "completed"
    prompt = json.dumps(llm.calls[1].messages)
    assert "Second loop?" in prompt and "First loop?" not in prompt and "First goal" not in prompt
    assert store.get_tasks(second.run_id)[1].loop_output.hook == "Second loop?"


def test_binding_names_are_checked(crew_class: Any) -> None:
    """A narrative name that is not a task of the crew is a ConfigError naming the crew's tasks."""
    from marsrag.integrations.crewbase import bind_contract

    with pytest.raises(ConfigError, match="narrative names unknown task.* research_tsk .*research_task"):
        bind_contract(crew_class, narrative=["research_tsk"], inputs={"topic": "x"})


def test_a_hierarchical_crewbase_crew_stays_hierarchical(store: RunStore, crew_class: Any) -> None:
    """A crew built with Process.hierarchical runs managed: the manager's final answers are bound."""
    from crewai import Crew, Process

    from marsrag.integrations.crewbase import bind_contract

    def managed() -> Any:
        made = crew_class().crew()
        return Crew(agents=made.agents, tasks=made.tasks[:2], process=Process.hierarchical, manager_llm="gpt-4o")

    bound = bind_contract(managed, name="managed_support", inputs={"topic": "payments"})
    assert bound.project.workflow().process == "hierarchical"
    delegation = json.dumps({"task": "Research it.", "context": "Use HOOK to LOOP.", "coworker": "Technical writer"})
    outputs = [
        answer(loop=RESEARCH_LOOP),  # the manager answers research_task itself
        f"Action: Delegate work to coworker\nAction Input: {delegation}",
        "Final Answer: " + answer(),  # the writer
        "Final Answer: " + answer(),  # the manager
    ]
    run, llm = run_bound(store, bound, outputs)
    assert run.status == "completed" and llm.remaining == 0
    assert [call.task for call in llm.calls] == ["research_task", "advice_task", None, "advice_task"]
    tasks = store.get_tasks(run.run_id)
    # A bare Crew has no @agent names: its agents are named by their roles.
    assert [(t.agent, t.validation.status) for t in tasks] == [
        ("senior_topic_researcher", "valid"),
        ("technical_writer", "valid"),
    ]
    assert tasks[1].loop_output.hook == RESEARCH_LOOP
