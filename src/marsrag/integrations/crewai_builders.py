"""Builders turning MarsRAG configs into fresh CrewAI objects, one set per run.

CrewAI mutates tasks and agents as they run (descriptions, outputs, retry counts), so nothing built here is
reused across runs: build, kick off, read the attempts, throw away.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from marsrag.contract import LOOP_CONTRACT_VERSION, LoopOutput, Mode, render_expected_output
from marsrag.integrations.crewai import (
    Agent,
    ContractTask,
    Crew,
    LocalConverter,
    LoopOutputDraft,
    Process,
)
from marsrag.integrations.crewai_async import AsyncAgentExecutor
from marsrag.integrations.guardrail import ContractGuardrail
from marsrag.tasks.config import AUTO_AGENT, AgentConfig, ProjectConfig, TaskConfig, WorkflowConfig

#: expected_output of a task that runs without the contract (loop_mode none, or narrative: false).
MACHINE_FIRST_OUTPUT = "The result as plain data for the next step: no narrative sections, no commentary."
_JSON_HINT = render_expected_output("json").split("\n\n", 1)[1]


@dataclass
class BuiltTask:
    """A CrewAI task built from a config, with its contract guardrail (None when no contract applies)."""

    config: TaskConfig
    task: Any
    guardrail: ContractGuardrail | None

    @property
    def has_contract(self) -> bool:
        """Whether the Loop Contract applies to this task in this run."""
        return self.guardrail is not None


@dataclass
class BuiltCrew:
    """A sequential crew for one workflow run, with its tasks in order."""

    workflow: WorkflowConfig
    loop_mode: Mode
    crew: Any
    tasks: list[BuiltTask]
    agents: dict[str, Any]

    def kickoff(self, inputs: dict[str, Any] | None = None) -> Any:
        """Run the crew (``inputs`` fill ``{placeholders}`` such as ``{goal}``)."""
        return self.crew.kickoff(inputs=inputs or {})

    async def akickoff(self, inputs: dict[str, Any] | None = None) -> Any:
        """Run the crew on CrewAI's native ``Crew.akickoff``, its agents awaiting the LLM (``acall``).

        The agents get :class:`~marsrag.integrations.crewai_async.AsyncAgentExecutor` (their executor is
        created when their first task starts): with CrewAI's own, each LLM call would hold a thread.
        """
        for agent in self.agents.values():
            agent.executor_class = AsyncAgentExecutor
        return await self.crew.akickoff(inputs=inputs or {})


def build_agent(config: AgentConfig, llm: Any = None) -> Any:
    """A fresh CrewAI agent; ``llm`` (an LLM object or model string) overrides the config's ``llm``."""
    options = {key: value for key, value in (config.model_extra or {}).items() if key not in {"tools"}}
    options.setdefault("allow_delegation", False)
    options.setdefault("verbose", False)
    # A failed LLM call is retried by MarsRAG's call policy (MARSRAG_LLM_RETRIES, transport errors only);
    # CrewAI's re-run of the whole task on any error would multiply it (and retry what cannot succeed).
    options.setdefault("max_retry_limit", 0)
    return Agent(
        role=config.role,
        goal=config.goal,
        backstory=config.backstory or config.goal,
        llm=llm if llm is not None else config.llm,
        **options,
    )


def build_task(config: TaskConfig, agent: Any, loop_mode: Mode, context: list[Any] | None = None) -> BuiltTask:
    """A fresh CrewAI task for ``config`` under ``loop_mode``, bound to the contract when it applies.

    Narrative tasks under hard or soft get ``output_pydantic=LoopOutput``, the lenient draft as
    ``response_model``, the local converter and the contract guardrail with one repair. Everything else is
    built machine-first, without template or contract.
    """
    common: dict[str, Any] = {
        "name": config.name,
        "description": config.description,
        "agent": agent,
        "marsrag_task": config.name,
        "loop_mode": loop_mode,
        **config.crewai_options,
    }
    if context:
        common["context"] = context
    if not config.narrative or loop_mode == "none":
        expected = config.expected_output if not config.narrative and config.expected_output else MACHINE_FIRST_OUTPUT
        return BuiltTask(config, ContractTask(expected_output=expected, **common), None)
    guardrail = ContractGuardrail(loop_mode)
    # With response_model set CrewAI adds no format text to the prompt, so the template says it.
    expected = f"{config.expected_output}\n\n{_JSON_HINT}"
    task = ContractTask(
        expected_output=expected,
        output_pydantic=LoopOutput,
        response_model=LoopOutputDraft,
        converter_cls=LocalConverter,
        guardrail=guardrail.check,
        guardrail_max_retries=1,
        loop_contract_version=config.loop_contract_version or LOOP_CONTRACT_VERSION,
        **common,
    )
    guardrail.bind(task)
    return BuiltTask(config, task, guardrail)


def build_crew(project: ProjectConfig, workflow: str | None = None, llm: Any = None, *, start: int = 0) -> BuiltCrew:
    """A sequential crew for a workflow: fresh agents and tasks, each task given the prior one as context.

    With ``start`` (resuming a run) every task is still built, so the chain of contexts is whole, but the
    crew only executes the tasks from ``start`` on; the caller gives the task before it its stored output.
    """
    chosen = project.workflow(workflow)
    mode = chosen.effective_loop_mode
    configs = project.tasks_of(chosen)
    # A task with agent: auto is run by whichever agent the loop before it routes to, so every agent must
    # be in the crew; it starts with the first registered agent until a route says otherwise.
    routed = any(config.agent == AUTO_AGENT for config in configs)
    names = list(project.agents) if routed else list(dict.fromkeys(config.agent for config in configs))
    agents = {name: build_agent(project.agents[name], llm) for name in names}
    built: list[BuiltTask] = []
    for config in configs:
        agent = agents[names[0]] if config.agent == AUTO_AGENT else agents[config.agent]
        context = [built[-1].task] if built else None
        built.append(build_task(config, agent, mode, context))
    crew = Crew(
        agents=list(agents.values()),
        tasks=[item.task for item in built[start:]],
        process=Process.sequential,
        verbose=False,
    )
    return BuiltCrew(chosen, mode, crew, built, agents)


def build_single(project: ProjectConfig, workflow: str, task: str, agent: str, llm: Any = None) -> BuiltCrew:
    """A crew of one task of a workflow, run by the named agent (for operator actions on a stored task).

    The task is built under the workflow's loop mode, so it carries the contract (and its guardrail) exactly
    when it did in the run.
    """
    chosen = project.workflow(workflow)
    built_agent = build_agent(project.agents[agent], llm)
    built = build_task(project.tasks[task], built_agent, chosen.effective_loop_mode)
    crew = Crew(agents=[built_agent], tasks=[built.task], process=Process.sequential, verbose=False)
    return BuiltCrew(chosen, chosen.effective_loop_mode, crew, [built], {agent: built_agent})


__all__ = ["BuiltCrew", "BuiltTask", "build_agent", "build_crew", "build_single", "build_task"]
