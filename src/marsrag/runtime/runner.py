"""The workflow runner: runs a workflow's tasks on CrewAI, chains each loop into the next hook, stores it all.

One crew per run, built fresh. After each task CrewAI calls the task's callback (before the next task
starts); there the runner stores the task's state with its attempts and events in one transaction, plans
the transition with the planner, stores it, and hands the next task its hook (in its description, which
survives its repair retry), its retrieval results and, for ``agent: auto``, its routed agent.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from marsrag.chain.briefing import asks_goal, briefing, without_placeholders
from marsrag.chain.numbering import SourceNumbers
from marsrag.chain.planner import asked_before, plan_next_action
from marsrag.errors import ActionConflictError, StoreError
from marsrag.events.sinks import EventSink
from marsrag.experiments.arms import project_for_run, run_arm
from marsrag.experiments.assignment import Assignment, session_assignment
from marsrag.goals import check_session_id, clean_goal
from marsrag.integrations.crewai import TaskOutput
from marsrag.integrations.crewai_builders import BuiltCrew, BuiltTask, CrewBuilder, build_crew
from marsrag.integrations.passages import PASSAGES
from marsrag.integrations.streams import STREAMS
from marsrag.liveness import HEARTBEAT_EVERY, is_stale, owner_id
from marsrag.llm.boundary import supports_async
from marsrag.llm.select import resolve_llm
from marsrag.runtime.commit import Committed, TaskCommitter
from marsrag.runtime.heartbeat import Heartbeat
from marsrag.runtime.progress import TaskProgressListener
from marsrag.runtime.retrieval import NoRetriever, Retriever, retrieve, run_scope, scoped_retriever
from marsrag.runtime.routing import LexicalRouter, Router, project_candidates
from marsrag.runtime.states import handed_on, task_state
from marsrag.state import (
    FollowKind,
    HookSource,
    LoopEvent,
    Retrieval,
    RunRecord,
    RunStatus,
    TaskProgress,
    TaskState,
    TransitionRecord,
    utcnow,
)
from marsrag.store.base import RETRY_DELAYS, RunStore
from marsrag.store.queries import Holder
from marsrag.tasks.config import AUTO_AGENT, ProjectConfig, WorkflowConfig
from marsrag.tracing import semconv
from marsrag.tracing.spans import NO_SPAN, TASKS, Span, current_traceparent, end_run, start_run, start_task
from marsrag.views.outcome import task_outcome
from marsrag.views.summary import summarize

logger = logging.getLogger(__name__)


class WorkflowRunner:
    """Runs workflows of one project with one LLM, storing every step in a run store."""

    def __init__(
        self,
        store: RunStore,
        project: ProjectConfig,
        llm: Any,
        *,
        sinks: Sequence[EventSink] = (),
        retriever: Retriever | None = None,
        router: Router | None = None,
        retrieval_limit: int = 5,
        crews: CrewBuilder = build_crew,
        heartbeat_every: float = HEARTBEAT_EVERY.total_seconds(),
        watchers: Sequence[Callable[[TaskProgress], object]] = (),
    ) -> None:
        self.store = store
        self.project = project
        self.llm = llm
        self.sinks = list(sinks)
        #: Told of each task when it starts (no chunk yet) and of its progress as the model streams it (a live
        #: display); what they raise is logged, never the run's failure.
        self.watchers = list(watchers)
        self.retriever: Retriever = retriever or NoRetriever()
        self.router: Router = router or LexicalRouter()
        self.retrieval_limit = retrieval_limit
        #: Builds each run's crew from the project: the YAML workflows', or a user's crew bound to the contract.
        self.crews = crews
        self.candidates = project_candidates(project)
        self.commits = TaskCommitter(store, self.sinks)
        #: Bumps the heartbeat of the runs this runner executes every ``heartbeat_every`` seconds, between their
        #: commits: a process on another host tells a live executor from a dead one by it (marsrag.liveness).
        self.heartbeat = Heartbeat(store, every=heartbeat_every)
        #: Set when the process shuts down: an executing run stops after its current task's commit and is left
        #: ``pending``, to resume from there (its executor sets it; see ThreadRunExecutor.shutdown).
        self.stopping = threading.Event()
        #: The LLMs of experiment arms that name one (``llm:`` spec -> LLM), built at their first run.
        self._arm_llms: dict[str, Any] = {}
        self._arm_llms_lock = threading.Lock()

    def start(
        self,
        goal: str,
        *,
        workflow: str | None = None,
        session_id: str | None = None,
        followed_from: str | None = None,
        events: Sequence[LoopEvent] = (),
        collections: Sequence[str] | None = None,
    ) -> RunRecord:
        """Record a new pending run held by this process (the workflow is checked now: a bad name writes nothing).

        ``collections``: the knowledge base collections its retrieval keeps to, else the workflow's
        ``collections:``, else all (recorded with the run, checked before it is stored).
        ``followed_from`` names the run whose next action it follows; ``events`` are stored with it. When the
        workflow has an experiment the run gets the session's arm (decided at the session's first run in it, see
        :func:`~marsrag.experiments.assignment.session_assignment`) and that arm's loop mode; the session's first
        run in the experiment also stores ``loop.experiment.assigned``.

        Raises:
            ConfigError: no such workflow.
            InputError: the goal or session id breaks the rules of :mod:`marsrag.goals` (blank, too long,
                control characters; a session id outside its alphabet), or a collection is unknown.
            AlreadyFollowedError: ``followed_from`` is followed already (nothing is stored).
        """
        goal, session_id = clean_goal(goal), check_session_id(session_id)
        chosen = self.project.workflow(workflow)
        scope = run_scope(self.retriever, collections, chosen.collections)
        run_id, session = uuid.uuid4().hex, session_id or uuid.uuid4().hex
        assignment = self._assignment(chosen, session, known=session_id is not None)
        run = RunRecord(
            run_id=run_id,
            session_id=session,
            goal=goal,
            workflow=chosen.name,
            loop_mode=assignment.config.loop_mode if assignment else chosen.effective_loop_mode,
            # The accepting process holds a pending run until an executor claims it: if it dies first, the
            # run is found stale at once (same host) and picked up by the sweep.
            owner=owner_id(),
            followed_from=followed_from,
            experiment=assignment.experiment if assignment else None,
            arm=assignment.arm if assignment else None,
            collections=scope,
            # The trace of whoever started it (a server's submit span): its execution, anywhere, continues it.
            trace=current_traceparent(),
        )
        if assignment is not None and assignment.first:
            # In the same transaction as the session's first run in the experiment: never one without the other.
            events = [*events, assignment.event(run_id, session)]
        self.commits.create_run(run, events)
        return run

    def _assignment(self, workflow: WorkflowConfig, session_id: str, *, known: bool) -> Assignment | None:
        """The experiment arm a new run of ``workflow`` in the session runs under (None: no experiment applies)."""
        if workflow.experiment is None:
            return None  # no read of the session: a run outside any experiment is started as it always was
        # A session id made up for this run has no runs yet; a given one may have (a follow, a returning user).
        earlier = self.store.list_runs(session_id=session_id) if known else []
        return session_assignment(workflow, session_id, earlier, utcnow())

    def run_setup(self, run: RunRecord) -> tuple[ProjectConfig, Any]:
        """The project and the LLM ``run`` executes with: this runner's, or under an experiment arm the arm's.

        See :func:`~marsrag.experiments.arms.project_for_run`; an arm's ``llm`` spec is resolved once per runner.
        """
        project = project_for_run(self.project, run)
        arm = run_arm(self.project, run)
        if arm is None or arm.llm is None:
            return project, self.llm
        with self._arm_llms_lock:
            llm = self._arm_llms.get(arm.llm)
            if llm is None:
                # Under this runner's call policy, as a workflow's manager_llm; kept, as the run's LLM is.
                llm = self._arm_llms[arm.llm] = resolve_llm(arm.llm, policy=getattr(self.llm, "call_policy", None))
        return project, llm

    def retriever_for(self, run: RunRecord) -> Retriever:
        """What ``run``'s tasks and their tools search: this runner's retriever kept to the run's collections."""
        return scoped_retriever(self.retriever, run.collections)

    def run(
        self,
        goal: str,
        *,
        workflow: str | None = None,
        session_id: str | None = None,
        collections: Sequence[str] | None = None,
    ) -> RunRecord:
        """Start and execute a run; return its final record (``completed`` or ``failed`` with the reason)."""
        started = self.start(goal, workflow=workflow, session_id=session_id, collections=collections)
        return self.execute(started.run_id)

    def execute(self, run_id: str) -> RunRecord:
        """Execute a stored pending run to its end. LLM and store errors end it ``failed``, never raise.

        Raises:
            ActionConflictError: another process took the run first.
        """
        return self._execute(self.store.get_run(run_id), [])

    def resume(self, run_id: str) -> RunRecord:
        """Finish a run that stopped (a crash, a killed process) without redoing its committed tasks.

        Committed task states stay as they are; a transition missing after the last of them is planned from
        the stored state (the planner is pure, so it is the one the crashed process would have stored); the
        remaining tasks run with the stored output of the task before them as context.

        Raises:
            ActionConflictError: the run is running in a live process, or another process took it first.
        """
        run, stored = self._resumable(run_id)
        return run if stored is None else self._execute(run, stored)

    def _resumable(self, run_id: str) -> tuple[RunRecord, list[TaskState] | None]:
        """The run and the committed prefix of its tasks to resume after (None: it is completed, nothing to do).

        Raises:
            ActionConflictError: the run is running in a live process.
        """
        run = self.store.get_run(run_id)
        if run.status == "completed":
            return run, None
        if run.status == "running" and not is_stale(run):
            raise ActionConflictError(f"run {run_id!r} is still running in {run.owner}: resume it once that stops")
        names = self.project.workflow(run.workflow).tasks
        stored: list[TaskState] = []
        for state in self.store.get_tasks(run_id):
            if len(stored) < len(names) and state.task_id == names[len(stored)]:
                stored.append(state)
        return run, stored

    async def arun(
        self,
        goal: str,
        *,
        workflow: str | None = None,
        session_id: str | None = None,
        collections: Sequence[str] | None = None,
    ) -> RunRecord:
        """The async :meth:`run`, on CrewAI's native ``Crew.akickoff`` (the LLM's ``acall`` is awaited)."""
        started = self.start(goal, workflow=workflow, session_id=session_id, collections=collections)
        return await self.aexecute(started.run_id)

    async def aexecute(self, run_id: str) -> RunRecord:
        """The async :meth:`execute`: the run waits on the LLM without holding a thread.

        An LLM without an ``acall`` of its own (:func:`~marsrag.llm.boundary.supports_async`) is run on the
        sync path, in a thread of the event loop's default pool.

        Store reads and writes stay synchronous (a commit takes milliseconds): they run on the event loop,
        one at a time, between the LLM calls of the runs it executes.

        Raises:
            ActionConflictError: another process took the run first.
        """
        return await self._aexecute(self.store.get_run(run_id), [])

    async def aresume(self, run_id: str) -> RunRecord:
        """The async :meth:`resume` (same rules: committed tasks are kept, the rest run after them).

        Raises:
            ActionConflictError: the run is running in a live process, or another process took it first.
        """
        run, stored = self._resumable(run_id)
        return run if stored is None else await self._aexecute(run, stored)

    def follow(
        self,
        run_id: str,
        *,
        workflow: str | None = None,
        goal: str | None = None,
        collections: Sequence[str] | None = None,
    ) -> RunRecord:
        """Start and execute the next run of a run's session (see :meth:`start_follow`); its final record."""
        return self.execute(self.start_follow(run_id, workflow=workflow, goal=goal, collections=collections).run_id)

    def start_follow(
        self,
        run_id: str,
        *,
        workflow: str | None = None,
        goal: str | None = None,
        collections: Sequence[str] | None = None,
    ) -> RunRecord:
        """Record ``loop.action.followed`` and the next run of the run's session, pending, with its next action as goal.

        The next action is :func:`plan_next_action`'s: the final loop when usable, else the fallback question.
        The workflow is ``workflow`` when given, else the one the loop routed to when registered, else the run's.
        ``goal`` is the user's edit of the next action: when it differs from it (once trimmed, as goals are
        stored) the follow is ``edited`` and the new run asks ``goal``; else it is ``suggested`` (the event's
        ``detail["follow_kind"]``). The next run keeps to ``collections`` when given, else to the followed
        run's collections when it kept to some, else to its workflow's.

        Raises:
            RunNotFoundError: no such run.
            ActionConflictError: the run is still executing, or no task of it ran under the contract.
            InputError: ``goal`` breaks the goal rules (blank, too long, control characters).
        """
        edited = clean_goal(goal) if goal is not None else None
        prior = self.store.get_run(run_id)
        if prior.status in ("pending", "running") and not is_stale(prior):
            raise ActionConflictError(f"run {run_id!r} is still {prior.status}: follow it once it has finished")
        planned = plan_next_action(self.store.get_tasks(run_id), self.asked(prior))
        if planned is None:
            raise ActionConflictError(f"run {run_id!r} has no next action to follow (no task ran under the contract)")
        last, action = planned
        kind: FollowKind = "edited" if edited is not None and edited != action.hook.strip() else "suggested"
        routed = last.routing.next_workflow
        chosen: str | None = workflow or (routed if routed in self.project.workflows else prior.workflow)
        if chosen not in self.project.workflows:
            chosen = None  # the followed run's workflow is gone from this config: use the default
        event = LoopEvent(
            name="loop.action.followed",
            run_id=run_id,
            task_id=last.task_id,
            loop_contract_version=last.loop_contract_version,
            loop_mode=prior.loop_mode,
            validation_status=last.validation.status,
            transition_mode=action.mode,
            detail={"follow_kind": kind},
        )
        # The follow and its event are one write, unique per followed run: of racing follows (a double
        # click, ten requests), one run is stored; the others raise AlreadyFollowedError naming it.
        asked = edited if kind == "edited" and edited is not None else action.hook
        scope = collections if collections is not None else prior.collections
        return self.start(
            asked,
            workflow=chosen,
            session_id=prior.session_id,
            followed_from=run_id,
            events=[event],
            collections=scope,
        )

    def _execute(self, run: RunRecord, stored: list[TaskState]) -> RunRecord:
        span = start_run(run, resumed=_resumed(run, stored))
        held = self._claim(run, span)
        execution: _Execution | None = None
        with self.heartbeat.holding(held.run_id), span.current():
            try:
                execution = _Execution(self, held, stored, span)
                execution.kickoff()
            except Exception as error:  # noqa: BLE001 - any failure is recorded on the run, with its reason
                ending = _ending(execution, error)
            else:
                ending = _ending(execution, None)
            try:
                final = self._finish(held, *ending)
            except BaseException as error:
                _traced_abandon(span, execution, error)
                raise
            return _traced_end(span, execution, final)

    async def _aexecute(self, run: RunRecord, stored: list[TaskState]) -> RunRecord:
        if not supports_async(self.run_setup(run)[1]):
            # An LLM with call only (a user's BaseLLM): the sync path on a thread of the loop, never a failed run.
            return await asyncio.to_thread(self._execute, run, stored)
        span = start_run(run, resumed=_resumed(run, stored))
        held = self._claim(run, span)
        execution: _Execution | None = None
        with self.heartbeat.holding(held.run_id), span.current():
            try:
                execution = _Execution(self, held, stored, span)
                await execution.akickoff()
            except Exception as error:  # noqa: BLE001 - any failure is recorded on the run, with its reason
                ending = _ending(execution, error)
            else:
                ending = _ending(execution, None)
            try:
                final = await self._afinish(held, *ending)
            except BaseException as error:
                _traced_abandon(span, execution, error)
                raise
            return _traced_end(span, execution, final)

    def _claim(self, run: RunRecord, span: Span = NO_SPAN) -> RunRecord:
        """The run as this process holds it once claimed (``span``, its execution's, is its trace if it had none).

        Raises:
            ActionConflictError: another process took it, or an operator action holds one of its tasks.
        """
        # Compare-and-set on the run as read: of processes racing for it (a redelivered job), one executes it;
        # none while an operator action holds one of its tasks. A refused claim leaves ``span`` unended: an
        # unended span is never exported, so an execution that did not happen leaves no trace.
        owner = owner_id()
        claim = self.store.claim_run(run.run_id, owner, seen=run, trace=None if run.trace else span.traceparent())
        if not claim:
            if claim.refusal == "busy":
                raise ActionConflictError(
                    f"an operator action is running on task {claim.task_id!r} of run {run.run_id!r} "
                    f"({claim.holder}): resume the run once it has finished"
                )
            raise ActionConflictError(f"run {run.run_id!r} was taken by another process")
        return run.model_copy(update={"status": "running", "owner": owner})

    def manager_llm(self, workflow: str) -> Any:
        """The LLM of a hierarchical workflow's ``manager_llm`` (fresh, under this runner's call policy); else None.

        None lets the builder give the manager the run's LLM.
        """
        spec = self.project.workflow(workflow).manager_llm
        return resolve_llm(spec, policy=getattr(self.llm, "call_policy", None)) if spec else None

    def asked(self, run: RunRecord) -> list[str]:
        """What ``run``'s session asked up to it: its runs' goals, oldest first (see :func:`asked_before`)."""
        return asked_before(self.store.list_runs(session_id=run.session_id), run)

    def _finish(self, held: RunRecord, status: RunStatus, details: dict[str, str]) -> RunRecord:
        """Record the run's end while this process still holds it, riding out a brief store outage; the final record.

        A compare-and-set on the run as this process holds it: when another process took the run over (it
        found this one stale), its record stands and is returned.

        Raises:
            StoreError: the store stayed unreachable (the run stays ``running``, its committed tasks kept:
                it is resumed once its process is gone).
        """
        for delay in (*RETRY_DELAYS, None):
            try:
                return self._set_final(held, status, details)
            except StoreError:
                if delay is None:
                    raise
                time.sleep(delay)
        raise AssertionError("unreachable")  # the loop returns or raises

    async def _afinish(self, held: RunRecord, status: RunStatus, details: dict[str, str]) -> RunRecord:
        """The async :meth:`_finish`: the store's outage is waited out without stopping the event loop's other runs."""
        for delay in (*RETRY_DELAYS, None):
            try:
                return self._set_final(held, status, details)
            except StoreError:
                if delay is None:
                    raise
                await asyncio.sleep(delay)
        raise AssertionError("unreachable")  # the loop returns or raises

    def _set_final(self, held: RunRecord, status: RunStatus, details: dict[str, str]) -> RunRecord:
        self.store.set_run_status(held.run_id, status, seen=held, **details)
        return self.store.get_run(held.run_id)


def _resumed(run: RunRecord, stored: Sequence[TaskState]) -> bool:
    """Whether executing ``run`` now resumes it: it ran before (it has committed tasks, or was claimed)."""
    return bool(stored) or run.status != "pending"


def _traced_end(span: Span, execution: _Execution | None, final: RunRecord) -> RunRecord:
    """End the run's span (and any task span left open) with how it ended; ``final``."""
    if execution is not None:
        execution.end_task_spans(final.status_reason or "the run ended before the task did")
    outcome = None
    if execution is not None and final.status == "completed":
        outcome = task_outcome(state.validation.status for state in execution.states)
    end_run(span, final, outcome)
    return final


def _traced_abandon(span: Span, execution: _Execution | None, error: BaseException) -> None:
    """End the run's span (and any task span left open) as failed: its end could not be recorded (``error``)."""
    reason = f"the run's end could not be recorded: {type(error).__name__}: {error}"
    if execution is not None:
        execution.end_task_spans(reason)
    span.fail(reason)
    span.end()


def _ending(execution: _Execution | None, error: Exception | None) -> tuple[RunStatus, dict[str, str]]:
    """How an execution ended: its run's final status and details (reason, summary)."""
    if execution is not None and error is None:
        return "completed", {"summary": summarize(execution.states, execution.asked)}
    if execution is not None and isinstance(error, RunInterrupted):
        # Handed back, not failed: the next sweep (this server's successor) resumes it after its last commit.
        return "pending", {"reason": str(error), "summary": summarize(execution.states, execution.asked)}
    return "failed", {"reason": f"{type(error).__name__}: {error}"}


class RunInterrupted(Exception):  # noqa: N818 - not an error: the run is handed back
    """Raised after a task's commit when the process is shutting down: the run stops there, resumable."""


class _Execution:
    """The mutable state of one run while its crew executes."""

    def __init__(self, runner: WorkflowRunner, run: RunRecord, stored: list[TaskState], span: Span = NO_SPAN) -> None:
        self.runner = runner
        self.run = run
        #: The run's span: its tasks' spans go under it.
        self.span = span
        #: Every write of the execution applies only while this process still holds the run.
        self.holder = Holder(run_owner=run.owner)
        start = len(stored)
        project, llm = runner.run_setup(run)
        #: What the run's tasks and their tools search: the knowledge base kept to the run's collections.
        self.retriever = runner.retriever_for(run)
        self.built: BuiltCrew = runner.crews(
            project,
            run.workflow,
            llm,
            start=start,
            manager_llm=runner.manager_llm(run.workflow),
            retriever=self.retriever,
            retrieval_limit=runner.retrieval_limit,
        )
        self.states: list[TaskState] = list(stored)
        self.hooks: dict[int, tuple[str | None, HookSource]] = {0: (None, "goal")}
        self.retrievals: dict[int, Retrieval] = {}
        #: The run's sources by number, the committed tasks' first (a resumed run numbers on from them); a run
        #: following another keeps its numbers, so a marker in the next action it asks names the same source.
        followed = runner.store.get_tasks(run.followed_from) if run.followed_from else []
        self.numbers = SourceNumbers.of([*followed, *stored])
        #: The session's questions so far, read once: each task's LOOP is asked to offer something new.
        self.asked = runner.asked(run)
        for index, item in enumerate(self.built.tasks):
            item.task.callback = partial(self._task_done, index)
        if start == 0:
            self._prepare(0, None, first=True)
        elif start < len(self.built.tasks):
            self._resume_after(stored[-1], start)

    def _resume_after(self, prior: TaskState, start: int) -> None:
        """Stand the stored prior task in for the executed one: its output as context, its transition."""
        prior_item = self.built.tasks[start - 1]
        handed = handed_on(prior)
        raw = handed if handed is not None else prior.attempts[-1].raw if prior.attempts else prior.rendered
        prior_item.task.output = TaskOutput(
            description=prior_item.task.description, agent=prior.agent or "", raw=raw, name=prior.task_id
        )
        target = self.built.tasks[start].config.name
        stored = [
            t
            for t in self.runner.store.get_transitions(self.run.run_id)
            if t.transition_source_task_id == prior.task_id
            and t.transition_target_task_id == target
            and not t.superseded
        ]
        if stored:
            self._hand_to(prior, start, stored[-1], first=True)
        else:
            self._hand_over(prior, start, first=True)

    def kickoff(self) -> None:
        try:
            if self.built.crew.tasks:
                self.built.kickoff({"goal": self.run.goal})
        finally:
            self._stop_listening()

    async def akickoff(self) -> None:
        try:
            if self.built.crew.tasks:
                await self.built.akickoff({"goal": self.run.goal})
        finally:
            self._stop_listening()

    def _stop_listening(self) -> None:
        # A run that ended early (an error, a shutdown) leaves no listener behind for its tasks.
        for item in self.built.tasks:
            STREAMS.forget(item.task)

    def end_task_spans(self, reason: str) -> None:
        """End the spans of tasks that never finished (the run failed or stopped in them), as failed."""
        for item in self.built.tasks:
            span = TASKS.close(item.task)
            span.fail(reason)
            span.end()

    # -- before a task -------------------------------------------------------------------------------------

    def _prepare(self, index: int, hook: str | None, *, first: bool = False) -> None:
        """Give task ``index`` its hook and retrieval results, in its description."""
        item = self.built.tasks[index]
        task = item.task
        span = start_task(self.span, self.run, item.config.name, index, item.config.agent)
        TASKS.open(task, span)
        try:
            retrieval = retrieve(
                self.retriever, hook, self.run.goal, self.runner.retrieval_limit, numbers=self.numbers, span=span
            )
        except BaseException as error:
            # Raised while the execution may not exist yet (its first task): nothing else would end the span.
            TASKS.close(task)
            span.fail(error)
            span.end()
            raise
        self.retrievals[index] = retrieval
        results = retrieval.results
        # The agent's knowledge tool numbers what it finds by the run's sources too (see _retrieval).
        PASSAGES.given(str(task.id), results, self.numbers.assign)
        chained = hook if hook is not None and self.built.tasks[index].has_contract else None
        # The hooks handed within this run were asked too: a later task's LOOP should not circle back to them.
        handed = [item for position, (item, _) in sorted(self.hooks.items()) if position <= index and item]
        text = briefing(
            self.run.goal,
            chained,
            results,
            asked=list(dict.fromkeys([*self.asked, *handed])),
            support=retrieval.support,
            goal_line=not asks_goal(task.expected_output),
        )
        if first:
            # Text added before kickoff is interpolated with its inputs: stray braces would be read as inputs.
            text = without_placeholders(text)
        task.description = f"{task.description}\n\n{text}"
        # What the task's answer holds while the model streams it, for viewers (the stored state is the answer).
        name = self.built.tasks[index].config.name
        listener = TaskProgressListener(self._publish, run_id=self.run.run_id, task_id=name, position=index)
        STREAMS.listen(task, listener)
        if self.runner.watchers:
            self._watch(TaskProgress(run_id=self.run.run_id, task_id=name, position=index))

    def _publish(self, progress: TaskProgress) -> None:
        """Store a task's progress (for viewers in any process) and tell this process's watchers."""
        try:
            progress = progress.model_copy(update={"seq": self.runner.store.save_progress(progress)})
        finally:
            self._watch(progress)

    def _watch(self, progress: TaskProgress) -> None:
        for watcher in self.runner.watchers:
            try:
                watcher(progress)
            except Exception:  # a display must never fail the run
                logger.exception("a progress watcher failed")

    # -- after a task (CrewAI calls this before the next task starts) ----------------------------------------

    def _task_done(self, index: int, output: Any) -> None:
        STREAMS.forget(self.built.tasks[index].task)
        state = self._state(index, self.built.tasks[index], output)
        target = self.built.tasks[index + 1].config.name if index + 1 < len(self.built.tasks) else None
        committed = self.runner.commits.commit(self.run, state, state.attempts, target=target, holder=self.holder)
        self.states.append(state)
        handed = handed_on(state)
        if handed is not None and isinstance(getattr(output, "raw", None), str):
            output.raw = handed  # what CrewAI gives the later tasks as context; the attempts keep the raw text
        _end_task_span(TASKS.close(self.built.tasks[index].task), state, committed)
        if target is not None and self.runner.stopping.is_set():
            raise RunInterrupted(f"interrupted by a shutdown after task {state.task_id!r}: it resumes from there")
        if committed.transition is not None:
            self._hand_to(state, index + 1, committed.transition)

    def _hand_over(self, prior: TaskState, index: int, *, first: bool = False) -> None:
        """Plan, store and apply a missing transition (a run stopped between a state and its transition)."""
        target = self.built.tasks[index].config.name
        transition = self.runner.commits.commit_transition(self.run, prior, target, holder=self.holder)
        self._hand_to(prior, index, transition, first=first)

    def _hand_to(self, prior: TaskState, index: int, transition: TransitionRecord, *, first: bool = False) -> None:
        """Give task ``index`` the planned hook (and, for agent: auto, its routed agent)."""
        self.hooks[index] = (transition.hook, transition.transition_mode)
        self._prepare(index, transition.hook, first=first)
        self._route_agent(prior, index)

    def _route_agent(self, prior: TaskState, index: int) -> None:
        target = self.built.tasks[index]
        if target.config.agent == AUTO_AGENT and prior.routing.next_agent in self.built.agents:
            target.agent = target.task.agent = self.built.agents[prior.routing.next_agent]

    def _state(self, index: int, item: BuiltTask, output: Any) -> TaskState:
        hook, source = self.hooks[index]
        # The assigned agent, not task.agent: a hierarchical crew's manager takes that over while the task runs.
        agent = next((name for name, agent in self.built.agents.items() if agent is item.agent), None)
        return task_state(
            self.run.run_id,
            index,
            item,
            output,
            agent=agent,
            loop_mode=self.built.loop_mode,
            hook=hook,
            source=source,
            retrieval=self.retrievals.get(index),
            router=self.runner.router,
            candidates=self.runner.candidates,
            known=self.numbers.sources(),
        )


def _end_task_span(span: Span, state: TaskState, committed: Committed) -> None:
    """Record the committed task on its span (verdict, hook, support, attempts, its loop events) and end it."""
    support = state.retrieval.support if state.retrieval is not None else None
    span.set(
        {
            semconv.AGENT_NAME: state.agent,
            semconv.VALIDATION_STATUS: state.validation.status,
            semconv.CONTRACT_VERSION: state.loop_contract_version,
            semconv.HOOK_SOURCE: state.hook_source,
            semconv.TRANSITION_MODE: committed.transition.transition_mode if committed.transition else None,
            semconv.SUPPORT: support.level if support is not None else None,
            semconv.ATTEMPTS: len(state.attempts),
        }
    )
    span.events(committed.events)
    if state.validation.status == "failed":
        span.fail("the answer failed the Loop Contract")
    span.end()
