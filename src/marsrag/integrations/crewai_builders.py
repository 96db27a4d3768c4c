"""Builders turning MarsRAG configs into fresh CrewAI objects, one set per run.

CrewAI mutates tasks and agents as they run (descriptions, outputs, retry counts), so nothing built here is
reused across runs: build, kick off, read the attempts, throw away.

Under ``process: hierarchical`` CrewAI runs every task with the manager agent, which may hand the work to the
task's agent through its "Delegate work to coworker" tool. The coworker gets a plain task (the manager's
wording, CrewAI's generic expected output, no output model); what the task returns is the manager's Final
Answer. So the contract is bound where it always is, on the task: its guardrail and local converter judge the
manager's final answer (CrewAI's #792 class of failure: ``output_pydantic`` on a managed task), and the task's
expected output tells the manager to pass the five-section format on and to return the coworker's answer whole.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from marsrag.chain.briefing import ANSWER_REQUEST
from marsrag.contract import (
    INSTRUCTIONS_NOT_ANSWER,
    LOOP_CONTRACT_VERSION,
    LoopOutput,
    Mode,
    render_example,
    render_expected_output,
)
from marsrag.errors import ConfigError
from marsrag.integrations.crewai import (
    Agent,
    ContractTask,
    Crew,
    LocalConverter,
    LoopOutputDraft,
    Process,
)
from marsrag.integrations.crewai_async import AsyncAgentExecutor
from marsrag.integrations.crewai_executor import ContractAgentExecutor
from marsrag.integrations.guardrail import ContractGuardrail
from marsrag.integrations.knowledge_tool import Searcher, knowledge_tool
from marsrag.tasks.config import AUTO_AGENT, AgentConfig, ProjectConfig, TaskConfig, WorkflowConfig

#: expected_output of a task that runs without the contract (loop_mode none, or narrative: false).
MACHINE_FIRST_OUTPUT = "The result as plain data for the next step: no narrative sections, no commentary."
_JSON_HINT = render_expected_output("json").split("\n\n", 1)[1]
#: Added to a narrative task's expected output in a hierarchical crew, where the manager answers the task: the
#: coworker it delegates to sees only what the manager passes on (CrewAI gives it a generic expected output).
MANAGED_HINT = (
    "You manage this task: delegate it to the coworker with the whole task and this answer format in the "
    "context, then give their complete answer, in this format, as your Final Answer (not a summary)."
)
#: The manager MarsRAG builds when a hierarchical workflow names no manager agent: CrewAI's own wording.
MANAGER_ROLE = "Crew Manager"
MANAGER_GOAL = "Manage the team to complete the task in the best way possible."
MANAGER_BACKSTORY = (
    "You are a seasoned manager with a knack for getting the best out of your team. You delegate work to the "
    "right people and evaluate it; you do not perform tasks by yourself."
)


@dataclass
class BuiltTask:
    """A CrewAI task built from a config, with its contract guardrail (None when no contract applies)."""

    config: TaskConfig
    task: Any
    guardrail: ContractGuardrail | None
    #: The agent the task is assigned to (kept here: under the hierarchical process CrewAI sets ``task.agent``
    #: to the manager while the task runs, but the work and the stored state are the assigned agent's).
    agent: Any = None

    @property
    def has_contract(self) -> bool:
        """Whether the Loop Contract applies to this task in this run."""
        return self.guardrail is not None


@dataclass
class BuiltCrew:
    """A crew for one workflow run, with its tasks in order (and its manager under the hierarchical process)."""

    workflow: WorkflowConfig
    loop_mode: Mode
    crew: Any
    tasks: list[BuiltTask]
    agents: dict[str, Any]
    manager: Any = None

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


#: How each agent tool a config may name (:data:`~marsrag.tasks.config.AGENT_TOOLS`) is built, from the run's
#: knowledge base and passages per search.
TOOL_FACTORIES: dict[str, Callable[[Searcher | None, int], Any]] = {"knowledge_base": knowledge_tool}


def build_tools(names: Sequence[str], retriever: Searcher | None = None, retrieval_limit: int = 5) -> list[Any]:
    """Fresh CrewAI tools for an agent's ``tools`` names (CrewAI counts uses on the tool objects)."""
    return [TOOL_FACTORIES[name](retriever, retrieval_limit) for name in dict.fromkeys(names)]


class CrewBuilder(Protocol):
    """What builds a run's crew: :func:`build_crew`, or a user's crew bound to the contract (``crewbase``)."""

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
    ) -> BuiltCrew: ...


def build_agent(
    config: AgentConfig, llm: Any = None, *, retriever: Searcher | None = None, retrieval_limit: int = 5
) -> Any:
    """A fresh CrewAI agent; ``llm`` (an LLM object or model string) overrides the config's ``llm``.

    The agent's ``tools`` are built over ``retriever`` (the run's knowledge base; None: the tool says there is
    none), each search returning up to ``retrieval_limit`` passages.
    """
    options = dict(config.model_extra or {})
    options.setdefault("allow_delegation", False)
    options.setdefault("verbose", False)
    # A failed LLM call is retried by MarsRAG's call policy (MARSRAG_LLM_RETRIES, transport errors only);
    # CrewAI's re-run of the whole task on any error would multiply it (and retry what cannot succeed).
    options.setdefault("max_retry_limit", 0)
    options.setdefault("executor_class", ContractAgentExecutor)
    if config.tools:
        options["tools"] = build_tools(config.tools, retriever, retrieval_limit)
    return Agent(
        role=config.role,
        goal=config.goal,
        backstory=config.backstory or config.goal,
        llm=llm if llm is not None else config.llm,
        **options,
    )


def build_manager(llm: Any = None, config: AgentConfig | None = None) -> Any:
    """A fresh manager agent for a hierarchical crew: ``config``'s agent, else CrewAI-style, on ``llm``.

    It delegates (CrewAI gives it the delegation tools per task) and has no tools of its own.
    """
    if config is not None:
        # CrewAI raises for a manager with tools of its own ("Manager agent should not have tools").
        manager = build_agent(config.model_copy(update={"tools": []}), llm)
        manager.allow_delegation = True
        return manager
    return Agent(
        role=MANAGER_ROLE,
        goal=MANAGER_GOAL,
        backstory=MANAGER_BACKSTORY,
        llm=llm,
        allow_delegation=True,
        verbose=False,
        executor_class=ContractAgentExecutor,
        max_retry_limit=0,  # as build_agent: MarsRAG's call policy retries, CrewAI's task re-run would multiply it
    )


def build_task(
    config: TaskConfig, agent: Any, loop_mode: Mode, context: list[Any] | None = None, *, managed: bool = False
) -> BuiltTask:
    """A fresh CrewAI task for ``config`` under ``loop_mode``, bound to the contract when it applies.

    Narrative tasks under hard or soft get ``output_pydantic=LoopOutput``, the lenient draft as
    ``response_model``, the local converter and the contract guardrail with one repair. Everything else is
    built machine-first, without template or contract. ``managed``: a manager answers the task (the
    hierarchical process), so its expected output also tells the manager how to delegate it.
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
        return BuiltTask(config, ContractTask(expected_output=expected, **common), None, agent)
    guardrail = ContractGuardrail(loop_mode)
    # With response_model set CrewAI adds no format text to the prompt, so the template says it: an example from
    # an unrelated domain first (shown last, SmolLM2-135M copied it into 3 of 3 answers; shown first, none),
    # then the template framed as instructions (small models copy them otherwise), the format, and last the
    # goal (CrewAI fills in {goal} at kickoff) right before CrewAI asks for the answer.
    parts = [render_example(), f"{INSTRUCTIONS_NOT_ANSWER}\n{config.expected_output}", _JSON_HINT]
    if managed:
        parts.append(MANAGED_HINT)
    expected = "\n\n".join([*parts, ANSWER_REQUEST])
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
    return BuiltTask(config, task, guardrail, agent)


def build_crew(
    project: ProjectConfig,
    workflow: str | None = None,
    llm: Any = None,
    *,
    start: int = 0,
    manager_llm: Any = None,
    retriever: Searcher | None = None,
    retrieval_limit: int = 5,
) -> BuiltCrew:
    """A crew for a workflow: fresh agents and tasks, each task given the prior one as context.

    With ``start`` (resuming a run) every task is still built, so the chain of contexts is whole, but the
    crew only executes the tasks from ``start`` on; the caller gives the task before it its stored output.
    Under ``process: hierarchical`` the tasks run in the same order, each answered by the manager (the
    workflow's ``manager_agent``, else a CrewAI-style manager on ``manager_llm``, else on ``llm``). Agents with
    ``tools`` search ``retriever`` (see :func:`build_agent`).

    Raises:
        ConfigError: a hierarchical workflow's manager agent is unknown or also runs one of its tasks.
    """
    chosen = project.workflow(workflow)
    mode = chosen.effective_loop_mode
    configs = project.tasks_of(chosen)
    managed = chosen.process == "hierarchical"
    manager = _manager_of(project, chosen, llm, manager_llm) if managed else None
    # A task with agent: auto is run by whichever agent the loop before it routes to, so every agent must
    # be in the crew; it starts with the first registered agent until a route says otherwise. CrewAI refuses
    # a manager among the crew's agents, so a manager agent is never a worker (nor a route's target).
    routed = any(config.agent == AUTO_AGENT for config in configs)
    names = list(project.agents) if routed else list(dict.fromkeys(config.agent for config in configs))
    names = [name for name in names if not managed or name != chosen.manager_agent]
    agents = {
        name: build_agent(project.agents[name], llm, retriever=retriever, retrieval_limit=retrieval_limit)
        for name in names
    }
    built: list[BuiltTask] = []
    for config in configs:
        agent = agents[names[0]] if config.agent == AUTO_AGENT else agents[config.agent]
        context = [built[-1].task] if built else None
        built.append(build_task(config, agent, mode, context, managed=managed))
    options: dict[str, Any] = {"process": Process.hierarchical, "manager_agent": manager} if managed else {}
    crew = Crew(
        agents=list(agents.values()),
        tasks=[item.task for item in built[start:]],
        **({"process": Process.sequential} | options),
        verbose=False,
    )
    return BuiltCrew(chosen, mode, crew, built, agents, manager)


def _manager_of(project: ProjectConfig, workflow: WorkflowConfig, llm: Any, manager_llm: Any) -> Any:
    """The manager agent of a hierarchical workflow (see :func:`build_crew`)."""
    name = workflow.manager_agent
    if name is None:
        return build_manager(manager_llm if manager_llm is not None else llm)
    if name not in project.agents:
        raise ConfigError(f"{project.source}: workflow {workflow.name!r}: manager_agent names unknown agent {name!r}")
    busy = [config.name for config in project.tasks_of(workflow) if config.agent == name]
    if busy:
        raise ConfigError(
            f"{project.source}: workflow {workflow.name!r}: manager agent {name!r} also runs task {busy[0]!r}"
        )
    return build_manager(llm, project.agents[name])


def build_single(
    project: ProjectConfig,
    workflow: str,
    task: str,
    agent: str,
    llm: Any = None,
    *,
    retriever: Searcher | None = None,
    retrieval_limit: int = 5,
) -> BuiltCrew:
    """A crew of one task of a workflow, run by the named agent (for operator actions on a stored task).

    The task is built under the workflow's loop mode, so it carries the contract (and its guardrail) exactly
    when it did in the run; the agent's tools search ``retriever`` as they did.
    """
    chosen = project.workflow(workflow)
    built_agent = build_agent(project.agents[agent], llm, retriever=retriever, retrieval_limit=retrieval_limit)
    built = build_task(project.tasks[task], built_agent, chosen.effective_loop_mode)
    crew = Crew(agents=[built_agent], tasks=[built.task], process=Process.sequential, verbose=False)
    return BuiltCrew(chosen, chosen.effective_loop_mode, crew, [built], {agent: built_agent})


__all__ = [
    "TOOL_FACTORIES",
    "BuiltCrew",
    "BuiltTask",
    "CrewBuilder",
    "build_agent",
    "build_crew",
    "build_manager",
    "build_single",
    "build_task",
    "build_tools",
]
