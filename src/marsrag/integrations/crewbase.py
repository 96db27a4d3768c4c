"""Binding an existing CrewAI crew (a ``@CrewBase`` class, as ``crewai create crew`` makes) to the Loop Contract.

:func:`bind_contract` takes the crew as the user wrote it and gives the runner what ``build_crew`` gives it
for a YAML workflow: a :class:`~marsrag.integrations.crewai_builders.BuiltCrew` per run, built fresh from a
new instance of the crew, and the :class:`~marsrag.tasks.ProjectConfig` describing it, so the run is stored,
chained, routed and measured like any other::

    bound = bind_contract(SupportCrew)                      # the @CrewBase class itself
    runner = WorkflowRunner(store, bound.project, llm, crews=bound)
    runner.run("Checkout latency doubled after the deploy")

Which tasks are narrative (bound to the contract): the names given as ``narrative``, else every task except
those whose ``tasks.yaml`` entry says ``narrative: false`` and those with an output model, JSON schema or
guardrail of their own (they keep it, run machine-first). A narrative task gets the canonical template as its
expected output (the crew's own expected output stays in its description, as what the answer covers), the
contract guardrail, the local converter and the prior task as context; its agent, tools and description are
the crew's. The user's agents keep their own LLMs unless the runner is given one (then it answers for every
agent, as ``--llm`` does for a YAML config). A hierarchical crew stays hierarchical, with its manager.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from marsrag.contract import Mode
from marsrag.errors import ConfigError
from marsrag.integrations.crewai import Crew, Process
from marsrag.integrations.crewai_builders import BuiltCrew, BuiltTask, build_manager, build_task
from marsrag.integrations.crewai_executor import use_contract_executor
from marsrag.integrations.knowledge_tool import Searcher
from marsrag.tasks.config import AUTO_AGENT, AgentConfig, ProjectConfig, TaskConfig, WorkflowConfig, WorkflowProcess

#: What a crew factory returns: a crewai ``Crew``, or a ``@CrewBase`` instance (its ``@crew`` method is called).
CrewSource = Callable[[], Any]

#: Task settings kept from the crew's task on a narrative task (the contract binding sets the rest).
_KEPT = ("tools", "human_input", "output_file", "markdown")


@dataclass
class ContractBoundCrew(BuiltCrew):
    """A user's crew, built for one run, with the kickoff inputs it was bound with."""

    inputs: dict[str, Any] = field(default_factory=dict)

    def kickoff(self, inputs: dict[str, Any] | None = None) -> Any:
        """Run the crew with the bound inputs and the run's (``{goal}``)."""
        return self.crew.kickoff(inputs={**self.inputs, **(inputs or {})})


@dataclass(frozen=True)
class _Found:
    """One fresh instance of the user's crew: the Crew, its agents by name, its task configs by name."""

    crew: Any
    agents: dict[str, Any]
    task_settings: dict[str, Mapping[str, Any]]


class BoundCrew:
    """A user's crew bound to the contract: its :attr:`project` and a crew builder for the runner (``crews=``)."""

    def __init__(
        self,
        source: CrewSource,
        *,
        name: str,
        narrative: Collection[str] | None,
        loop_mode: Mode,
        inputs: Mapping[str, Any],
    ) -> None:
        self.source = source
        self.name = name
        self.inputs = dict(inputs)
        found = self._fresh()
        self.narrative = frozenset(narrative) if narrative is not None else None
        self.project = self._describe(found, loop_mode)

    def __call__(
        self,
        project: ProjectConfig,
        workflow: str | None = None,
        llm: Any = None,
        *,
        start: int = 0,
        manager_llm: Any = None,
        retriever: Searcher | None = None,
        retrieval_limit: int = 5,
    ) -> ContractBoundCrew:
        """A fresh crew for one run, bound to the contract (``build_crew``'s signature: the runner's ``crews=``).

        ``retriever`` and ``retrieval_limit`` are unused: the crew's agents keep the tools their class gives them.
        """
        chosen = project.workflow(workflow)
        mode = chosen.effective_loop_mode
        found = self._fresh()
        original = found.crew
        for agent in found.agents.values():
            use_contract_executor(agent)
            if llm is not None:
                agent.llm = llm
        managed = chosen.process == "hierarchical"
        built: list[BuiltTask] = []
        by_original: dict[int, Any] = {}
        for index, task in enumerate(original.tasks):
            config = project.tasks[chosen.tasks[index]]
            context = _context_of(task, by_original, built)
            if config.narrative:
                kept = {key: getattr(task, key) for key in _KEPT if getattr(task, key, None)}
                bound = TaskConfig.model_validate({**config.model_dump(), **kept})
                item = build_task(bound, task.agent, mode, context, managed=managed)
            else:
                task.context = context if context else task.context
                item = BuiltTask(config, task, None, task.agent)
            by_original[id(task)] = item.task
            built.append(item)
        options: dict[str, Any] = {"process": Process.sequential}
        manager = None
        if managed:
            manager = original.manager_agent
            if manager is not None and llm is not None:
                manager.llm = llm
            if manager is None:
                manager = build_manager(llm if llm is not None else manager_llm or original.manager_llm)
            use_contract_executor(manager)
            options = {"process": Process.hierarchical, "manager_agent": manager}
        crew = Crew(
            agents=list(found.agents.values()), tasks=[item.task for item in built[start:]], verbose=False, **options
        )
        return ContractBoundCrew(chosen, mode, crew, built, found.agents, manager, inputs=self.inputs)

    def _fresh(self) -> _Found:
        """A new instance of the crew (CrewAI's tasks and agents keep state: one per run)."""
        made = self.source()
        instance = None
        if not isinstance(made, Crew):
            instance = made
            made = instance.crew()
            if not isinstance(made, Crew):
                raise ConfigError(f"{self.name}: the crew method returned {type(made).__name__}, not a crewai.Crew")
        agents = _agent_names(instance, made)
        settings = getattr(instance, "tasks_config", None) or {}
        return _Found(made, agents, {str(key): value for key, value in settings.items() if isinstance(value, Mapping)})

    def _describe(self, found: _Found, loop_mode: Mode) -> ProjectConfig:
        """The crew as MarsRAG configs: its agents, its tasks (narrative or not) and one workflow of them in order."""
        crew = found.crew
        names = {id(agent): name for name, agent in found.agents.items()}
        agents = {
            name: AgentConfig(name=name, role=agent.role, goal=agent.goal, backstory=agent.backstory or "")
            for name, agent in found.agents.items()
        }
        tasks: dict[str, TaskConfig] = {}
        for index, task in enumerate(crew.tasks):
            task_name = _slug(task.name or f"task_{index + 1}")
            if task_name in tasks:
                raise ConfigError(f"{self.name}: two tasks are named {task_name!r}: give each task its own name")
            agent = names.get(id(task.agent)) if task.agent is not None else AUTO_AGENT
            if agent is None:
                raise ConfigError(f"{self.name}: task {task_name!r}'s agent is not one of the crew's agents")
            narrative = self._is_narrative(task_name, task, found.task_settings.get(task.name or "", {}))
            description = task.description
            if narrative and task.expected_output:
                description = f"{description}\n\nWhat the answer covers: {task.expected_output}"
            tasks[task_name] = TaskConfig(
                name=task_name,
                description=description,
                agent=agent,
                narrative=narrative,
                **({} if narrative else {"expected_output": task.expected_output}),
            )
        if self.narrative is not None and not self.narrative <= set(tasks):
            unknown = ", ".join(sorted(self.narrative - set(tasks)))
            raise ConfigError(f"{self.name}: narrative names unknown task(s) {unknown} (tasks: {', '.join(tasks)})")
        process: WorkflowProcess = "hierarchical" if crew.process == Process.hierarchical else "sequential"
        workflow = WorkflowConfig(
            name=self.name, description=f"The {self.name} crew", loop_mode=loop_mode, tasks=list(tasks), process=process
        )
        return ProjectConfig(
            source=f"<crew {self.name}>", agents=agents, tasks=tasks, workflows={workflow.name: workflow}
        )

    def _is_narrative(self, name: str, task: Any, settings: Mapping[str, Any]) -> bool:
        if self.narrative is not None:
            return name in self.narrative
        if settings.get("narrative") is False:
            return False
        # A task with its own structure or check keeps it: binding LoopOutput would silently replace it.
        return not (task.output_pydantic or task.output_json or task.guardrail or task.guardrails)


def bind_contract(
    crew: Any,
    *,
    name: str | None = None,
    narrative: Collection[str] | None = None,
    loop_mode: Mode = "hard",
    inputs: Mapping[str, Any] | None = None,
) -> BoundCrew:
    """Bind a user's CrewAI crew to the Loop Contract, for :class:`~marsrag.runtime.runner.WorkflowRunner`.

    Args:
        crew: the ``@CrewBase`` class, or a zero-argument callable returning a ``crewai.Crew`` or a ``@CrewBase``
            instance, or a ``crewai.Crew`` (copied for each run). Called once here, to describe the crew, and
            once per run: CrewAI's tasks and agents keep state, so every run gets new ones.
        name: the workflow name runs are stored under (default: the class's or the crew's name).
        narrative: the names of the tasks to bind (default: see :mod:`marsrag.integrations.crewbase`).
        loop_mode: ``hard`` (default) or ``soft``; ``none`` runs every task machine-first.
        inputs: kickoff inputs for the crew's own ``{placeholders}`` (the run gives ``{goal}``).

    Raises:
        ConfigError: the crew has two tasks of one name, a task whose agent is not the crew's, a ``narrative``
            name that is not a task, or its factory does not give a crew.
    """
    source: CrewSource
    if isinstance(crew, Crew):
        template = crew
        source = template.copy
    else:
        source = crew
    if name is None:
        name = getattr(crew, "__name__", None) or str(getattr(crew, "name", None) or "crew")
    return BoundCrew(source, name=_slug(name), narrative=narrative, loop_mode=loop_mode, inputs=inputs or {})


def _agent_names(instance: Any, crew: Any) -> dict[str, Any]:
    """The crew's agents by name: their ``@agent`` method's name, else a slug of the role."""
    named: dict[str, Any] = {}
    methods = getattr(instance, "__crew_metadata__", {}).get("original_agents", {}) if instance is not None else {}
    by_id = {id(agent): agent for agent in crew.agents}
    for method in methods:
        agent = getattr(instance, method)()  # memoized: the same object the crew holds
        if id(agent) in by_id:
            named[_slug(method)] = agent
    for agent in crew.agents:
        if all(agent is not known for known in named.values()):
            base = _slug(agent.role)
            key, number = base, 2
            while key in named:
                key, number = f"{base}_{number}", number + 1
            named[key] = agent
    return named


def _context_of(task: Any, built: Mapping[int, Any], prior: list[BuiltTask]) -> list[Any] | None:
    """The built tasks a task reads: the crew's explicit ``context`` mapped to this run's tasks, else the prior one."""
    if isinstance(task.context, list):
        return [built[id(item)] for item in task.context if id(item) in built] or None
    return [prior[-1].task] if prior else None


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", text).lower()).strip("_") or "crew"


__all__ = ["BoundCrew", "ContractBoundCrew", "bind_contract"]
