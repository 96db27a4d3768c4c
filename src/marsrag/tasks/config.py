"""Narrative task, agent and workflow configs: the pydantic models runs are built from.

Defined in Python, or in CrewAI's YAML layout (``agents.yaml``, ``tasks.yaml``) plus ``workflows.yaml``;
:mod:`marsrag.tasks.loader` reads and checks the files. A task is narrative unless it says
``narrative: false``; narrative tasks return :class:`~marsrag.contract.LoopOutput`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

from marsrag.contract import EXPECTED_OUTPUT_TEMPLATE, LOOP_CONTRACT_VERSION, Mode
from marsrag.errors import ConfigError
from marsrag.tasks.entry_names import check_entry_name
from marsrag.tasks.experiment_limits import name_problem, ratio_problem, weight_problem

WorkflowKind = Literal["user_facing", "internal"]

#: How a workflow's crew runs its tasks: in order by their own agents, or by a manager delegating each one.
WorkflowProcess = Literal["sequential", "hierarchical"]

#: The name ``output_pydantic`` takes for narrative tasks (also accepted fully qualified).
#: The name of an agent, task, tool or workflow (see marsrag.tasks.entry_names).
EntryName = Annotated[str, AfterValidator(check_entry_name)]
LOOP_OUTPUT_NAMES = frozenset({"LoopOutput", "marsrag.contract.LoopOutput", "marsrag.contract.model.LoopOutput"})

#: A task config whose ``agent`` is this is executed by the agent routed from the task before it.
AUTO_AGENT = "auto"

#: The inputs every crew is kicked off with (``crew.kickoff({"goal": ...})``, in runs and operator actions):
#: the only ``{placeholders}`` CrewAI can fill in a task's description, expected_output and output_file and in
#: an agent's role, goal and backstory. Any other placeholder would fail the run, so lint refuses it (LC108).
KICKOFF_INPUTS = frozenset({"goal"})


#: The tools an agent may name in ``tools:`` (``agents.yaml``), each built for the run by the CrewAI binding:
#: ``knowledge_base`` is ``search_knowledge_base(query)`` over the run's knowledge base. Not the routing targets
#: of ``tools.yaml``, which a loop routes to and no agent calls.
AGENT_TOOLS = frozenset({"knowledge_base"})


def unknown_tools_message(agent: str, names: list[str]) -> str:
    """Why an agent's ``tools`` cannot be built: the names that are no agent tool, and the ones that are."""
    shown = ", ".join(repr(name) for name in names)
    known = ", ".join(sorted(AGENT_TOOLS))
    return (
        f"agent {agent!r} names unknown tool(s) {shown}: the agent tools are {known} (the routing targets of "
        "tools.yaml are not agent tools)"
    )


class AgentConfig(BaseModel):
    """A CrewAI agent: role, goal and backstory as in ``agents.yaml``; other CrewAI agent keys pass through.

    ``tools`` names built-in agent tools (:data:`AGENT_TOOLS`); any other name is a config error.
    """

    model_config = ConfigDict(extra="allow")

    name: EntryName
    role: str
    goal: str
    backstory: str = ""
    tools: list[str] = Field(default_factory=list)
    llm: str | None = None

    @model_validator(mode="after")
    def _known_tools(self) -> AgentConfig:
        # An unknown name would be dropped or fail mid-run: a config error naming the key, at load time.
        unknown = [name for name in dict.fromkeys(self.tools) if name not in AGENT_TOOLS]
        if unknown:
            raise ValueError(unknown_tools_message(self.name, unknown))
        return self


class ToolConfig(BaseModel):
    """A tool the loop can route to (``tools.yaml``): its name and what it does."""

    model_config = ConfigDict(extra="allow")

    name: EntryName
    description: str


#: CrewAI Task keys the contract binding sets on every narrative task (``integrations/crewai_builders.py``).
CONTRACT_BOUND_KEYS = frozenset({"guardrail", "guardrail_max_retries", "response_model", "converter_cls", "guardrails"})


class TaskConfig(BaseModel):
    """A task as in ``tasks.yaml``. Narrative tasks default to the canonical template and contract."""

    model_config = ConfigDict(extra="allow")

    name: EntryName
    description: str
    agent: str
    narrative: bool = True
    expected_output: str | None = None
    output_pydantic: str | None = None
    loop_contract_version: str | None = None
    context: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _narrative_defaults(self) -> TaskConfig:
        # Python-defined narrative tasks get the contract by construction; YAML ones are linted for it.
        if self.narrative:
            if self.expected_output is None:
                self.expected_output = EXPECTED_OUTPUT_TEMPLATE
            if self.output_pydantic is None:
                self.output_pydantic = "LoopOutput"
            if self.loop_contract_version is None:
                self.loop_contract_version = LOOP_CONTRACT_VERSION
        return self

    @model_validator(mode="after")
    def _no_binding_keys(self) -> TaskConfig:
        # The contract binding sets these on a narrative task: a second value would make CrewAI's Task raise a
        # TypeError mid-run, so it is a config error naming the key, at load time.
        taken = sorted(set(self.model_extra or {}) & CONTRACT_BOUND_KEYS) if self.narrative else []
        if taken:
            raise ValueError(
                f"{', '.join(taken)}: set by the Loop Contract binding on a narrative task (one repair, the "
                "contract's guardrail and converter); remove it, or mark the task narrative: false"
            )
        return self

    @property
    def crewai_options(self) -> dict[str, Any]:
        """Keys beyond MarsRAG's own, passed to ``crewai.Task`` as they are (e.g. ``async_execution``)."""
        return dict(self.model_extra or {})


class ArmConfig(BaseModel):
    """One arm of an experiment: the loop mode its sessions run under, its share of sessions, optional variants.

    ``agent`` and ``llm`` swap what the arm's runs use (an agent of ``agents.yaml`` for every task's agent, an
    LLM spec as ``--llm`` takes); the task template and the contract stay the same (spec section 2). The weight is
    held to the range of :mod:`marsrag.tasks.experiment_limits`.
    """

    model_config = ConfigDict(extra="forbid")

    loop_mode: Mode
    weight: float = 1.0
    agent: str | None = None
    llm: str | None = None

    @field_validator("weight", mode="before")
    @classmethod
    def _weight_in_range(cls, value: object) -> object:
        # Before pydantic's own float parsing: the value as written, as lint (LC111) sees it.
        problem = weight_problem(value)
        if problem is not None:
            raise ValueError(f"weight {problem}")
        return value


class ExperimentConfig(BaseModel):
    """An experiment on a workflow: named arms, each new session assigned one by a hash of its id.

    Weights are relative (50/50, 1/1 and 2/2 are the same split). ``start``, when given, is the moment from
    which new sessions are assigned (sessions that began earlier run under the workflow's own ``loop_mode``).
    Names and weights are held to :mod:`marsrag.tasks.experiment_limits`, as lint (LC111) holds them.
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    arms: dict[str, ArmConfig] = Field(min_length=2)
    start: datetime | None = None

    @model_validator(mode="after")
    def _within_limits(self) -> ExperimentConfig:
        problem = name_problem(self.name)
        if problem is not None:
            raise ValueError(f"experiment name {problem}")
        for arm in self.arms:
            problem = name_problem(arm)
            if problem is not None:
                raise ValueError(f"experiment arm name {problem}")
        problem = ratio_problem({name: arm.weight for name, arm in self.arms.items()})
        if problem is not None:
            raise ValueError(f"experiment weights: {problem}")
        return self


class WorkflowConfig(BaseModel):
    """An ordered chain of tasks with its audience (``kind``) and contract strictness (``loop_mode``).

    ``process: hierarchical`` has a manager delegate each task, in order, to the task's agent: the manager is
    the agent named by ``manager_agent``, else one CrewAI-style manager on ``manager_llm`` (an LLM spec as
    ``--llm`` takes), else on the run's LLM.
    """

    model_config = ConfigDict(extra="forbid")

    name: EntryName
    description: str = ""
    kind: WorkflowKind = "user_facing"
    loop_mode: Mode | None = None
    tasks: list[str] = Field(min_length=1)
    process: WorkflowProcess = "sequential"
    manager_agent: str | None = None
    manager_llm: str | None = None
    experiment: ExperimentConfig | None = None
    #: The knowledge base collections the workflow's runs retrieve from (None: all); a run's own list overrides it.
    collections: list[Annotated[str, StringConstraints(min_length=1)]] | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _manager_needs_hierarchy(self) -> WorkflowConfig:
        # The same rule as lint's LC109, for Python-defined workflows.
        if self.manager_agent is not None and self.manager_llm is not None:
            raise ValueError("give manager_agent or manager_llm, not both")
        if self.process != "hierarchical" and (self.manager_agent is not None or self.manager_llm is not None):
            raise ValueError("manager_agent and manager_llm apply only to process: hierarchical")
        return self

    @property
    def effective_loop_mode(self) -> Mode:
        """``loop_mode`` when set, else the default policy: user-facing hard, internal none (spec section 7)."""
        if self.loop_mode is not None:
            return self.loop_mode
        return "hard" if self.kind == "user_facing" else "none"


class ProjectConfig(BaseModel):
    """Agents, tasks and workflows that reference each other by name."""

    source: str = "<python>"
    agents: dict[str, AgentConfig] = Field(default_factory=dict)
    tools: dict[str, ToolConfig] = Field(default_factory=dict)
    tasks: dict[str, TaskConfig] = Field(default_factory=dict)
    workflows: dict[str, WorkflowConfig] = Field(default_factory=dict)

    def workflow(self, name: str | None = None) -> WorkflowConfig:
        """The named workflow, or the first user-facing one (else the first) when ``name`` is None.

        Raises:
            ConfigError: no such workflow, or none at all.
        """
        if name is None:
            for workflow in self.workflows.values():
                if workflow.kind == "user_facing":
                    return workflow
            if self.workflows:
                return next(iter(self.workflows.values()))
            raise ConfigError(f"{self.source}: defines no workflows")
        try:
            return self.workflows[name]
        except KeyError:
            known = ", ".join(sorted(self.workflows)) or "none"
            raise ConfigError(f"{self.source}: unknown workflow {name!r} (known: {known})") from None

    def tasks_of(self, workflow: WorkflowConfig) -> list[TaskConfig]:
        """The workflow's tasks, in order."""
        return [self.tasks[name] for name in workflow.tasks]
