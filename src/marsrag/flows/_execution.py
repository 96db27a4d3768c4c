"""One kickoff of a LoopFlow against the run store: the run it opens or resumes, and each step's commit.

A step commits exactly what a YAML workflow's task does (:func:`~marsrag.runtime.states.task_state`, then
:meth:`~marsrag.runtime.commit.TaskCommitter.commit`). The step that runs next is known only once it starts (a
router may choose it), so the transition into a step is planned when the step starts, from the stored state
of the one before (the planner is pure: the hook is the one planned when that step finished), and committed with
the step's own state, in its transaction. A run stopped inside a step has no transition into it yet; resumed,
it is planned again, as the runner does for a run stopped between a state and its transition.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from marsrag.chain.briefing import briefing, without_placeholders
from marsrag.chain.numbering import SourceNumbers
from marsrag.chain.planner import asked_before
from marsrag.contract import Mode
from marsrag.errors import ActionConflictError, InputError
from marsrag.events.sinks import EventSink
from marsrag.goals import check_session_id, clean_goal
from marsrag.integrations.crewai_builders import BuiltTask
from marsrag.liveness import is_stale, owner_id
from marsrag.runtime.commit import Committed, TaskCommitter
from marsrag.runtime.heartbeat import Heartbeat
from marsrag.runtime.retrieval import NoRetriever, Retriever, retrieve, run_scope, scoped_retriever
from marsrag.runtime.routing import Candidate, Router
from marsrag.runtime.states import task_state
from marsrag.state import HookSource, RunRecord, RunStatus, TaskState, TransitionRecord
from marsrag.store.base import RunStore
from marsrag.store.queries import Holder
from marsrag.tracing import semconv
from marsrag.tracing.spans import NO_SPAN, Span, current_traceparent, end_run, start_run, start_task
from marsrag.views.outcome import task_outcome
from marsrag.views.summary import summarize


@dataclass
class FlowBinding:
    """What a LoopFlow's steps run with: the store and its sinks, the LLM, retrieval and the router."""

    store: RunStore
    llm: Any
    router: Router
    sinks: Sequence[EventSink] = ()
    retriever: Retriever = field(default_factory=NoRetriever)
    retrieval_limit: int = 5
    candidates: Sequence[Candidate] = ()
    project: Any = None
    #: The knowledge base collections a new run's retrieval keeps to (None: all); a resumed run keeps its own.
    collections: Sequence[str] | None = None

    def __post_init__(self) -> None:
        self.commits = TaskCommitter(self.store, self.sinks)
        #: Beats for the runs this binding's flows execute, between their steps' commits (see marsrag.liveness).
        self.heartbeat = Heartbeat(self.store)


@dataclass(frozen=True)
class Answer:
    """What a step's crew ended with: the task that is the step's answer, its output and its agent's name."""

    item: BuiltTask
    output: Any
    agent: str | None


#: Runs a step's crew: given the task id, the briefing to append to its description and the passages the
#: briefing numbers (its agent's knowledge tool numbers what it finds after them), its answer.
Executor = Callable[[str, str, Sequence[Mapping[str, Any]]], Answer]


class FlowExecution:
    """The run of one kickoff: opened (or resumed) at the first step, each step committed as it ends."""

    def __init__(
        self,
        binding: FlowBinding,
        run: RunRecord,
        stored: list[TaskState],
        *,
        finished: bool,
        new_session: bool = False,
        span: Span = NO_SPAN,
    ) -> None:
        self.binding = binding
        self.run = run
        #: The run's span (this kickoff's execution of it): each step's span goes under it.
        self.span = span
        #: What the run's steps and their agents' tools search: the knowledge base kept to the run's collections.
        self.retriever = scoped_retriever(binding.retriever, run.collections)
        #: Every write applies only while this process still holds the run.
        self.holder = Holder(run_owner=run.owner)
        #: The committed steps of a resumed run, by position: they are not run again.
        self.stored = {state.position: state for state in stored}
        #: A completed run walked again: nothing is stored, its steps are all reused.
        self.finished = finished
        self.states: list[TaskState] = []
        #: The run's sources by number, the committed steps' first (a resumed run numbers on from them).
        self.numbers = SourceNumbers.of(stored)
        self.runs_of: dict[str, int] = {}
        #: The session's questions so far, read once: each step's LOOP is asked to offer something new. A session
        #: id made up for this run has no other runs: nothing to read.
        earlier = [] if new_session else binding.store.list_runs(session_id=run.session_id)
        self.asked = asked_before(earlier, run)
        self.lock = threading.Lock()
        # A run this kickoff executes shows signs of life until it ends (finish, or close when it is abandoned).
        self._beating = not finished
        if self._beating:
            binding.heartbeat.hold(run.run_id)

    @classmethod
    def open(
        cls, binding: FlowBinding, *, run_id: str | None, goal: str, session_id: str | None, workflow: str, mode: Mode
    ) -> FlowExecution:
        """Resume run ``run_id`` (its committed steps kept) and claim it, or store a new run of ``workflow`` running.

        Raises:
            RunNotFoundError: no run ``run_id`` in the store.
            InputError: the run is of another flow, the goal or session id breaks the rules, or the binding's
                collections name one the knowledge base does not have.
            ActionConflictError: the run is running in a live process, or another process took it first.
        """
        store = binding.store
        if run_id:
            run = store.get_run(run_id)
            if run.workflow != workflow:
                raise InputError(f"run {run_id!r} is a run of {run.workflow!r}, not of flow {workflow!r}")
            stored = store.get_tasks(run_id)
            if run.status == "completed":
                return cls(binding, run, stored, finished=True)
            if run.status == "running" and not is_stale(run):
                raise ActionConflictError(f"run {run_id!r} is still running in {run.owner}: resume it once that stops")
            owner = owner_id()
            # A resumed run: a new trace linked to the run's first (an unended span of a refused claim is dropped).
            span = start_run(run, resumed=True)
            if not store.claim_run(run_id, owner, seen=run, trace=None if run.trace else span.traceparent()):
                raise ActionConflictError(f"run {run_id!r} was taken by another process")
            held = run.model_copy(update={"status": "running", "owner": owner})
            return cls(binding, held, stored, finished=False, span=span)
        given = check_session_id(session_id)
        scope = run_scope(binding.retriever, binding.collections)  # an unknown collection stores nothing
        # Created running under this process (one write): no other process knows the run before it is stored.
        run = RunRecord(
            run_id=uuid.uuid4().hex,
            session_id=given or uuid.uuid4().hex,
            goal=clean_goal(goal),
            workflow=workflow,
            loop_mode=mode,
            status="running",
            owner=owner_id(),
            collections=scope,
            # Under the span of the code that kicked the flow off, if any (a traced application).
            trace=current_traceparent(),
        )
        span = start_run(run, resumed=False)
        run = run.model_copy(update={"trace": run.trace or span.traceparent()})
        try:
            binding.commits.create_run(run)
        except BaseException as error:
            span.fail(error)
            span.end()
            raise
        return cls(binding, run, [], finished=False, new_session=given is None, span=span)

    def step(self, name: str, execute: Executor, *, chained: bool) -> tuple[TaskState, bool]:
        """Run step ``name`` (or reuse its committed state) after the steps so far; its state, and whether reused.

        ``chained``: the step's task has the contract, so it is told the hook handed to it.
        """
        with self.lock:  # steps chain in the order they run: one at a time
            count = self.runs_of[name] = self.runs_of.get(name, 0) + 1
            task_id = name if count == 1 else f"{name}-{count}"
            position = len(self.states)
            prior = self.states[-1] if self.states else None
            stored = self.stored.get(position)
            reused = stored if stored is not None and stored.task_id == task_id else None
            hook: str | None = None
            source: HookSource = "goal"
            # The prior step, when the transition from it into this one is not stored yet: stored with this step.
            after: TaskState | None = None
            if prior is not None:
                transition = self._stored_transition(prior, task_id)
                if transition is None and reused is not None:
                    transition = self.binding.commits.commit_transition(self.run, prior, task_id, holder=self.holder)
                elif transition is None:
                    transition, after = self.binding.commits.planned(self.run, prior, task_id), prior
                assert transition is not None  # a target always gets a transition
                hook, source = transition.hook, transition.transition_mode
            if reused is not None:
                self.states.append(reused)
                return reused, True
            if self.finished:
                raise ActionConflictError(f"run {self.run.run_id!r} is completed: it has no step {task_id!r} to run")
            return self._execute(task_id, position, hook, source, execute, chained=chained, after=after), False

    def _execute(
        self,
        task_id: str,
        position: int,
        hook: str | None,
        source: HookSource,
        execute: Executor,
        *,
        chained: bool,
        after: TaskState | None,
    ) -> TaskState:
        span = start_task(self.span, self.run, task_id, position, None)
        try:
            with span.current():  # the step's LLM calls run in its context: their spans nest under it
                committed = self._run_step(task_id, position, hook, source, execute, chained=chained, after=after)
        except BaseException as error:
            span.fail(error)
            span.end()
            raise
        state = committed.state
        span.set({semconv.AGENT_NAME: state.agent, semconv.VALIDATION_STATUS: state.validation.status})
        span.set({semconv.HOOK_SOURCE: state.hook_source, semconv.ATTEMPTS: len(state.attempts)})
        span.set({semconv.CONTRACT_VERSION: state.loop_contract_version})
        span.events(committed.events)
        span.end()
        return state

    def _run_step(
        self,
        task_id: str,
        position: int,
        hook: str | None,
        source: HookSource,
        execute: Executor,
        *,
        chained: bool,
        after: TaskState | None,
    ) -> Committed:
        retrieval = retrieve(self.retriever, hook, self.run.goal, self.binding.retrieval_limit, numbers=self.numbers)
        # The hooks handed within this run were asked too: a later step's LOOP should not circle back to them.
        handed = [state.loop_output.hook for state in self.states if state.hook_source != "goal"]
        asked = list(dict.fromkeys([*self.asked, *(item for item in [*handed, hook] if item)]))
        text = briefing(
            self.run.goal, hook if chained else None, retrieval.results, asked=asked, support=retrieval.support
        )
        # Added before the step's kickoff, which interpolates its inputs: stray braces would be read as inputs.
        answer = execute(task_id, without_placeholders(text), retrieval.results)
        state = task_state(
            self.run.run_id,
            position,
            answer.item,
            answer.output,
            agent=answer.agent,
            loop_mode=self.run.loop_mode,
            hook=hook,
            source=source,
            retrieval=retrieval,
            router=self.binding.router,
            candidates=self.binding.candidates,
            known=self.numbers.sources(),
        )
        committed = self.binding.commits.commit(self.run, state, state.attempts, after=after, holder=self.holder)
        self.states.append(state)
        return committed

    def _stored_transition(self, prior: TaskState, target: str) -> TransitionRecord | None:
        """The stored transition from ``prior`` to ``target`` (a resumed run's), else None.

        Raises:
            ActionConflictError: the run is completed and has no such step.
        """
        # Only a resumed run has transitions stored before this kickoff: a new one is not read back at every step.
        resumed = bool(self.stored) or self.finished
        stored = [
            t
            for t in (self.binding.store.get_transitions(self.run.run_id) if resumed else ())
            if t.transition_source_task_id == prior.task_id
            and t.transition_target_task_id == target
            and not t.superseded
        ]
        if stored:
            return stored[-1]
        if self.finished:
            raise ActionConflictError(f"run {self.run.run_id!r} is completed: it has no step {target!r} to run")
        return None

    def finish(self, status: RunStatus, *, reason: str | None = None) -> RunRecord:
        """Record the run's end (``completed`` with its summary, or ``failed`` with the reason); the final record."""
        try:
            if not self.finished:
                summary = summarize(self.states, self.asked) if status == "completed" else None
                self.binding.store.set_run_status(
                    self.run.run_id, status, seen=self.run, reason=reason, summary=summary
                )
            final = self.binding.store.get_run(self.run.run_id)
            outcome = task_outcome(state.validation.status for state in self.states) if status == "completed" else None
            end_run(self.span, final, outcome)
            return final
        finally:
            self.close()

    def close(self) -> None:
        """Stop beating for the run (idempotent): its kickoff ended, recorded or not (then its span ends failed)."""
        if self.span:
            self.span.fail("the flow's kickoff ended before the run did")
            self.span.end()
        if self._beating:
            self._beating = False
            self.binding.heartbeat.release(self.run.run_id)
