"""``LoopFlow``: a CrewAI Flow whose steps are Loop Contract tasks, stored as a run like any YAML workflow's.

Importing this module imports CrewAI (after :func:`prepare_crewai_environment` has made it offline), as
:mod:`marsrag.integrations.crewai` does; only code that runs flows imports it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any, ClassVar

from marsrag.integrations.crewai_env import prepare_crewai_environment

prepare_crewai_environment()

from crewai.flow import Flow  # noqa: E402 - must follow the environment set-up above
from pydantic import PrivateAttr  # noqa: E402

from marsrag.chain.briefing import briefing  # noqa: E402
from marsrag.chain.planner import plan_transition  # noqa: E402
from marsrag.contract import Mode  # noqa: E402
from marsrag.errors import InputError, RunNotFoundError  # noqa: E402
from marsrag.events.sinks import EventSink  # noqa: E402
from marsrag.flows._execution import Answer, FlowBinding, FlowExecution  # noqa: E402
from marsrag.flows.state import LoopFlowState, StepRecord  # noqa: E402
from marsrag.goals import check_session_id, clean_goal  # noqa: E402
from marsrag.integrations.crewai import Agent, Crew, Process  # noqa: E402
from marsrag.integrations.crewai_builders import BuiltCrew, CrewBuilder, build_agent, build_crew, build_task  # noqa: E402
from marsrag.integrations.crewai_executor import use_contract_executor  # noqa: E402
from marsrag.integrations.passages import PASSAGES  # noqa: E402
from marsrag.llm.select import resolve_llm  # noqa: E402
from marsrag.runtime.retrieval import NoRetriever, Retriever, run_scope  # noqa: E402
from marsrag.runtime.routing import Candidate, LexicalRouter, Router, project_candidates  # noqa: E402
from marsrag.runtime.states import task_state  # noqa: E402
from marsrag.state import RunRecord  # noqa: E402
from marsrag.store.base import RunStore  # noqa: E402
from marsrag.tasks.config import AgentConfig, ProjectConfig, TaskConfig  # noqa: E402


class FlowStateNotFoundError(RunNotFoundError):
    """No persisted flow state has that id (CrewAI would silently start afresh)."""


class LoopFlow(Flow[LoopFlowState]):
    """A CrewAI Flow whose steps run under the Loop Contract and are stored as one MarsRAG run.

    Steps are the flow's own ``@start``/``@listen`` methods; each calls :meth:`contract_step` (a contract task
    on a crew of one) or :meth:`crew_step` (a workflow's whole crew). Each step is validated, repaired once and
    settled exactly as a workflow task is, committed in one transaction with its attempts and events, and hands
    the next step its hook (the prior loop, by the chain rule). ``@router`` methods route on the last loop with
    :meth:`route_on_loop`. The run's workflow is the flow's name (its class name in snake case).

    Kick off with ``inputs={"goal": ...}`` (and optionally ``session_id``); resume a stopped run with
    :meth:`resume_run` or ``inputs={"run_id": ...}`` (CrewAI's own ``resume`` is for human feedback): its
    committed steps are not run again, their stored outputs stand in.
    Under ``@persist``, ``inputs={"id": <state id>}`` restores CrewAI's snapshot, which names the run.
    """

    #: How strictly the contract applies to the flow's steps (``hard``, ``soft`` or ``none``).
    loop_mode: ClassVar[Mode] = "hard"
    #: A step's state is the first record of it; the flow's state is plain data (see marsrag.flows.state).
    initial_state = LoopFlowState

    # CrewAI gives every flow a Memory (an LLM and a vector store) unless told not to: a flow's memory is its run.
    _skip_auto_memory: bool = True
    _binding: FlowBinding | None = PrivateAttr(default=None)
    _execution: FlowExecution | None = PrivateAttr(default=None)
    _run: RunRecord | None = PrivateAttr(default=None)
    _open_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def __init__(
        self,
        *,
        store: RunStore | None = None,
        llm: Any = None,
        project: ProjectConfig | None = None,
        sinks: Sequence[EventSink] = (),
        retriever: Retriever | None = None,
        router: Router | None = None,
        retrieval_limit: int = 5,
        collections: Sequence[str] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        if store is not None:
            self.bind(
                store,
                llm=llm,
                project=project,
                sinks=sinks,
                retriever=retriever,
                router=router,
                retrieval_limit=retrieval_limit,
                collections=collections,
            )

    def bind(
        self,
        store: RunStore,
        *,
        llm: Any = None,
        project: ProjectConfig | None = None,
        sinks: Sequence[EventSink] = (),
        retriever: Retriever | None = None,
        router: Router | None = None,
        retrieval_limit: int = 5,
        collections: Sequence[str] | None = None,
    ) -> LoopFlow:
        """Give the flow its store and LLM (a flow CrewAI restored from a checkpoint has none); the flow.

        ``llm`` None is the offline composer, as ``marsrag run`` uses by default; ``project`` gives named agents
        (``agent="analyst"``), :meth:`crew_step`'s workflows and the candidates each loop is routed on.
        ``collections``: the knowledge base collections a new run's retrieval keeps to (recorded with the run,
        checked when it starts; a resumed run keeps its own).
        """
        self._binding = FlowBinding(
            store=store,
            llm=llm if llm is not None else resolve_llm(None),
            router=router or LexicalRouter(),
            sinks=list(sinks),
            retriever=retriever or NoRetriever(),
            retrieval_limit=retrieval_limit,
            candidates=project_candidates(project) if project is not None else [],
            project=project,
            collections=collections,
        )
        return self

    @classmethod
    def resume_run(cls, run_id: str, *, store: RunStore, llm: Any = None, **options: Any) -> Any:
        """Continue a stopped run of this flow from its committed steps; the flow's final output.

        Raises:
            RunNotFoundError: no run ``run_id`` in ``store`` (never a silent fresh start).
        """
        flow = cls(store=store, llm=llm, **options)
        return flow.kickoff(inputs={"run_id": run_id})

    # -- the run ---------------------------------------------------------------------------------------------

    @property
    def workflow_name(self) -> str:
        """The run's workflow: the flow's ``name``, else its class name in snake case."""
        return self.name or _snake(type(self).__name__)

    @property
    def run_id(self) -> str | None:
        """The run this flow is (None before its first step)."""
        run_id: str | None = self.state.run_id
        return run_id

    @property
    def run(self) -> RunRecord | None:
        """The run's record as the last kickoff left it (``completed``, or ``failed`` with the reason)."""
        return self._run

    async def kickoff_async(
        self,
        inputs: dict[str, Any] | None = None,
        input_files: Any = None,
        from_checkpoint: Any = None,
        restore_from_state_id: str | None = None,
    ) -> Any:
        """Run the flow (``kickoff`` and ``akickoff`` come here too), recording its run's end in the store.

        A step that raises ends the run ``failed`` with the reason, and the error is raised on: the run's
        committed steps stay, to :meth:`resume_run` from.

        Raises:
            RunNotFoundError: ``inputs`` name a ``run_id`` the store does not have.
            FlowStateNotFoundError: under ``@persist``, ``inputs`` name an ``id`` with no stored snapshot.
            InputError: a new run's goal or session id breaks the rules of :mod:`marsrag.goals`.
        """
        checked = self._checked(dict(inputs or {}))
        self._execution, self._run = None, None
        try:
            result = await super().kickoff_async(
                checked, input_files, from_checkpoint, restore_from_state_id=restore_from_state_id
            )
        except Exception as error:
            if self._execution is not None:
                self._run = self._execution.finish("failed", reason=f"{type(error).__name__}: {error}")
            raise
        except BaseException:
            if self._execution is not None:
                self._execution.close()  # cancelled or interrupted: the run is no longer beaten for
            raise
        if self._execution is not None:
            self._run = self._execution.finish("completed")
        return result

    def _checked(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """``inputs`` with a resumed run's goal and session; unknown ids refused before anything runs."""
        store = self._bound().store
        if inputs.get("run_id"):
            run = store.get_run(str(inputs["run_id"]))  # RunNotFoundError: never a fresh start under a lost id
            return {**inputs, "goal": run.goal, "session_id": run.session_id, "steps": []}
        if "id" in inputs and self.persistence is not None:
            if not self.persistence.load_state(str(inputs["id"])):
                raise FlowStateNotFoundError(f"no stored state of flow {self.workflow_name!r} has id {inputs['id']!r}")
            return inputs
        goal = clean_goal(str(inputs.get("goal", self.state.goal)))
        binding = self._bound()
        run_scope(binding.retriever, binding.collections)  # an unknown collection: refused before any step runs
        return {**inputs, "goal": goal, "session_id": check_session_id(inputs.get("session_id")), "run_id": None}

    def _bound(self) -> FlowBinding:
        if self._binding is None:
            raise InputError(f"flow {type(self).__name__} has no run store: give store= or call bind(store)")
        return self._binding

    def _retriever(self) -> Retriever:
        """What the run's agents' tools search: its retrieval's knowledge base, kept to the run's collections."""
        return self._execution.retriever if self._execution is not None else self._bound().retriever

    def _numbering(self) -> Callable[[Mapping[str, Any]], int] | None:
        """How the run numbers the passages a step's tools find (its sources', :mod:`marsrag.chain.numbering`)."""
        return self._execution.numbers.assign if self._execution is not None else None

    def _opened(self) -> FlowExecution:
        with self._open_lock:
            if self._execution is None:
                state = self.state
                self._execution = FlowExecution.open(
                    self._bound(),
                    run_id=state.run_id,
                    goal=state.goal,
                    session_id=state.session_id,
                    workflow=self.workflow_name,
                    mode=self.loop_mode,
                )
                state.run_id, state.session_id = self._execution.run.run_id, self._execution.run.session_id
                # A restored snapshot's steps are walked again from the store: each is recorded as it is reached.
                state.steps = []
            return self._execution

    # -- steps -----------------------------------------------------------------------------------------------

    def contract_step(
        self,
        name: str,
        *,
        agent: str | AgentConfig | Any,
        description: str,
        expected_output: str | None = None,
        narrative: bool = True,
    ) -> StepRecord:
        """Run one task as a crew of one (or reuse its committed state when resuming); its record.

        ``agent``: an agent of the flow's project by name, an :class:`AgentConfig` (built fresh, on the flow's
        LLM), or a CrewAI ``Agent`` (used as it is). A narrative task (the default) is bound to the contract
        under the flow's loop mode: validated, repaired once, its failure recorded and the fallback hook handed on.
        """
        agent_name, make_agent = self._agent(agent)

        def execute(task_id: str, text: str, passages: Sequence[Mapping[str, Any]]) -> Answer:
            built_agent = make_agent()
            config = TaskConfig(
                name=task_id,
                description=f"{description}\n\n{text}",
                agent=agent_name,
                expected_output=expected_output,
                narrative=narrative,
            )
            item = build_task(config, built_agent, self.loop_mode)
            PASSAGES.given(str(item.task.id), passages, self._numbering())
            crew = Crew(agents=[built_agent], tasks=[item.task], process=Process.sequential, verbose=False)
            crew.kickoff(inputs={"goal": self.state.goal})
            return Answer(item, item.task.output, agent_name)

        return self._step(name, execute, chained=narrative and self.loop_mode != "none")

    def crew_step(self, name: str, *, workflow: str, crews: CrewBuilder = build_crew) -> StepRecord:
        """Run a workflow of the flow's project as one crew; its last contract task's answer is the step's.

        The step's hook opens the crew's first task; inside the crew each task hands the next its loop by the
        chain rule. Only the step is stored (one task of the run), with the answer's attempts.
        """
        binding = self._bound()
        project = binding.project
        if project is None:
            raise InputError(f"crew_step {name!r}: the flow has no project to take workflow {workflow!r} from")
        mode = project.workflow(workflow).effective_loop_mode

        def execute(task_id: str, text: str, passages: Sequence[Mapping[str, Any]]) -> Answer:
            built = crews(
                project, workflow, binding.llm, retriever=self._retriever(), retrieval_limit=binding.retrieval_limit
            )
            PASSAGES.given(str(built.tasks[0].task.id), passages, self._numbering())
            built.tasks[0].task.description += f"\n\n{text}"
            for index, item in enumerate(built.tasks[:-1]):
                item.task.callback = partial(self._hand_on, built, index)
            built.kickoff({"goal": self.state.goal})
            answer = next((item for item in reversed(built.tasks) if item.has_contract), built.tasks[-1])
            agent = next((key for key, value in built.agents.items() if value is answer.agent), None)
            renamed = replace(answer, config=answer.config.model_copy(update={"name": task_id}))
            return Answer(renamed, answer.task.output, agent)

        return self._step(name, execute, chained=mode != "none")

    def _hand_on(self, built: BuiltCrew, index: int, output: Any) -> None:
        """Inside a crew step: give the crew's next task the hook planned from this task's settled answer."""
        item, following = built.tasks[index], built.tasks[index + 1]
        binding = self._bound()
        settled = task_state(
            self.state.run_id or "",
            index,
            item,
            output,
            agent=None,
            loop_mode=built.loop_mode,
            hook=None,
            source="goal",
            retrieval=None,
            router=binding.router,
            candidates=(),
        )
        if following.has_contract:
            following.task.description += f"\n\n{briefing(self.state.goal, plan_transition(settled).hook, [])}"

    def _step(self, name: str, execute: Any, *, chained: bool) -> StepRecord:
        state, _ = self._opened().step(name, execute, chained=chained)
        planned = plan_transition(state)
        record = StepRecord.of(name, state, planned.hook, planned.mode)
        self.state.steps.append(record)
        return record

    def _agent(self, agent: str | AgentConfig | Any) -> tuple[str, Any]:
        """The agent's name and a maker of the agent a step runs with (fresh per step but for a given Agent)."""
        binding = self._bound()
        llm = binding.llm

        def build(config: AgentConfig) -> Any:
            # Fresh per step; its tools (tools: [knowledge_base]) search the flow's knowledge base.
            return build_agent(config, llm, retriever=self._retriever(), retrieval_limit=binding.retrieval_limit)

        if isinstance(agent, str):
            project = binding.project
            if project is None or agent not in project.agents:
                known = ", ".join(sorted(project.agents)) if project is not None else "no project given"
                raise InputError(f"flow {self.workflow_name!r}: unknown agent {agent!r} (known: {known})")
            config = project.agents[agent]
            return agent, lambda: build(config)
        if isinstance(agent, AgentConfig):
            return agent.name, lambda: build(agent)
        if isinstance(agent, Agent):
            return str(agent.role), lambda: use_contract_executor(agent)
        raise InputError(f"flow {self.workflow_name!r}: an agent is a name, an AgentConfig or a CrewAI Agent")

    # -- routing ---------------------------------------------------------------------------------------------

    def route_on_loop(self, routes: Mapping[str, str] | Sequence[str], *, default: str | None = None) -> str:
        """The label of ``routes`` the last step's loop points to, by the runner's lexical router; for ``@router``.

        ``routes`` maps each label to what it is for (or lists labels, matched on their words). A step that fell
        back (its loop unusable) or whose loop matches no route goes to ``default`` (else the first label).
        """
        labels = list(routes)
        if not labels:
            raise InputError("route_on_loop needs at least one route")
        chosen = default if default is not None else labels[0]
        last = self.state.last
        if last is not None and last.transition_mode != "fallback":
            texts = routes if isinstance(routes, Mapping) else dict.fromkeys(labels, "")
            candidates = [Candidate("workflow", label, f"{label.replace('_', ' ')} {texts[label]}") for label in labels]
            chosen = self._bound().router.route(last.next_hook, candidates).next_workflow or chosen
        if last is not None:
            last.route = chosen
        return chosen


def _snake(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", text).lower()).strip("_") or "flow"
