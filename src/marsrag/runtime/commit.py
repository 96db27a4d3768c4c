"""The one commit path of a task: its attempts -> its final state, its outgoing transition, its events, one
transaction, then the sinks.

The runner (after each task CrewAI finishes) and every operator action (repair, regenerate) call it; neither
builds these records itself, so a task reads the same whichever of them produced it:

- :func:`settle` turns attempts into the task's final state: the best of its outcomes (:func:`best_outcome`: a
  repair worse than the answer before it is not what the task ends with), the stored hook of a chained task
  (the derived one, whatever the model answered), routing on the loop, the rendered text;
- :meth:`TaskCommitter.commit` records the new attempts' events, plans the transition out of the task with
  the planner (for an action: re-plans the current one, superseding it only when it changes; for a flow's
  step, whose successor is not known yet: plans the one into it from the step before), and stores the
  state, the transition and all their events in one transaction before any sink sees them;
- :func:`record_events` is the same "store, then dispatch" for events that describe no new state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from marsrag.chain.citations import resolve
from marsrag.chain.planner import plan_transition
from marsrag.contract import FIELDS, ContractIssue, ValidationResult
from marsrag.events.sinks import EventSink, dispatch
from marsrag.faults import failpoint
from marsrag.runtime.routing import Candidate, Router
from marsrag.state import (
    AttemptKind,
    AttemptRecord,
    EventName,
    LoopEvent,
    LoopFields,
    RunRecord,
    TaskState,
    TransitionRecord,
    Validation,
    ValidationStatus,
)
from marsrag.store.base import RunStore
from marsrag.store.queries import Holder

#: Appended to the reason of a transition re-planned after an operator action changed its source task.
REPLANNED = " (re-planned after an operator action)"


def record_events(store: RunStore, events: Sequence[LoopEvent], sinks: Iterable[EventSink]) -> None:
    """Store events that describe no new state (a follow, a rendered page), then give them to the sinks."""
    _store_then_dispatch(lambda: store.add_events(events), events, sinks)


def _store_then_dispatch(write: Callable[[], None], events: Sequence[LoopEvent], sinks: Iterable[EventSink]) -> None:
    # Sinks see only what is stored: a crash between the two loses a sink's copy, never the stored record.
    write()
    dispatch(events, sinks)


#: The order of verdicts when attempts are compared (then the number of passing fields).
STATUS_RANK: dict[str, int] = {"valid": 3, "partial": 2, "failed": 1, "skipped": 0}


@dataclass(frozen=True)
class Outcome:
    """One candidate for a task's final output: its fields, their verdict and the errors behind it."""

    values: Mapping[str, str | None]
    status: ValidationStatus
    errors: tuple[ContractIssue, ...] = ()

    @classmethod
    def of(cls, result: ValidationResult) -> Outcome:
        """The outcome of a validated answer."""
        return cls(dict(result.loop_output), result.status, tuple(result.errors))

    @classmethod
    def stored(cls, state: TaskState) -> Outcome:
        """The outcome a stored task state holds now (what an operator action competes with)."""
        values = {name: getattr(state.loop_output, name) for name in FIELDS}
        return cls(values, state.validation.status, tuple(state.validation.errors))

    @property
    def passing(self) -> int:
        """How many fields have a value that no error names."""
        failing = {issue.field for issue in self.errors}
        return sum(1 for name in FIELDS if self.values.get(name) and name not in failing)

    @property
    def rank(self) -> tuple[int, int]:
        """Verdict first (valid > partial > failed), then passing fields."""
        return STATUS_RANK.get(self.status, 0), self.passing


def best_outcome(outcomes: Iterable[Outcome]) -> Outcome:
    """The best of a task's outcomes, earlier ones first: a later one wins unless it is strictly worse.

    So a repair as good as the answer before it is kept (it answered the feedback), and a repair that made
    things worse is not what the task ends with, nor what the next task is given.

    Raises:
        ValueError: no outcome.
    """
    best: Outcome | None = None
    for outcome in outcomes:
        if best is None or outcome.rank >= best.rank:
            best = outcome
    if best is None:
        raise ValueError("a task needs at least one outcome to settle")
    return best


def settle(
    base: TaskState,
    attempts: Sequence[AttemptRecord],
    outcomes: Iterable[Outcome],
    *,
    router: Router,
    candidates: Sequence[Candidate],
    known: Mapping[str, Mapping[str, Any]] | None = None,
) -> TaskState:
    """The task's state after ``attempts`` (all of them, earlier ones first), built from the best of ``outcomes``.

    ``outcomes`` are what the task could end with, earlier ones first (an action gives the stored outcome and
    its new one); :func:`best_outcome` picks. A chained task (``hook_source`` other than ``goal``) keeps its
    derived hook (spec section 3); the loop is routed anew when there is one, else the earlier routing stays.
    ``known``: the run's sources by number, which a marker naming none of the task's passages may cite
    (:func:`~marsrag.chain.citations.resolve`).
    """
    chosen = best_outcome(outcomes)
    fields = LoopFields(**dict(chosen.values))
    if base.hook_source != "goal":
        fields.hook = base.loop_output.hook
    routing = router.route(fields.loop, candidates) if fields.loop else base.routing
    citations, warnings = resolve(fields.model_dump(), base.retrieval.results if base.retrieval else [], known)
    return base.model_copy(
        update={
            "validation": Validation(status=chosen.status, errors=list(chosen.errors)),
            "loop_output": fields,
            "routing": routing,
            "citations": citations,
            "citation_warnings": warnings,
            "attempts": list(attempts),
            "rendered": fields.render(),
        }
    )


def failed_attempt(state: TaskState, kind: AttemptKind, reason: str) -> AttemptRecord:
    """An attempt that produced no answer (the LLM or provider failed), naming the reason."""
    return AttemptRecord(
        number=len(state.attempts) + 1,
        raw="",
        status="failed",
        errors=[ContractIssue(None, "action_failed", f"the {kind.replace('_', ' ')} failed: {reason}")],
        kind=kind,
    )


@dataclass(frozen=True)
class Committed:
    """What one commit stored: the task's state and, when one was planned, the transition out of it."""

    state: TaskState
    transition: TransitionRecord | None
    #: The events stored with them (the attempts' verdicts, the transition's).
    events: tuple[LoopEvent, ...] = ()


class TaskCommitter:
    """Commits task states, their transitions and their events for one store and its sinks."""

    def __init__(self, store: RunStore, sinks: Sequence[EventSink]) -> None:
        self.store = store
        self.sinks = sinks

    def commit(
        self,
        run: RunRecord,
        state: TaskState,
        new_attempts: Sequence[AttemptRecord],
        *,
        target: str | None = None,
        replan: bool = False,
        after: TaskState | None = None,
        holder: Holder | None = None,
    ) -> Committed:
        """Store ``state`` with the events of ``new_attempts`` and the transition planned out of it, then dispatch.

        Args:
            run: the task's run.
            state: the task's final state (see :func:`settle`).
            new_attempts: the attempts this commit adds (each gets its validated/failed event).
            target: the next task, when a transition is planned to it.
            replan: re-plan the task's current outgoing transition (an operator action changed the task): a new
                one is stored, superseding it, only when the planned hook or mode differs.
            after: instead, the committed task this one follows (a flow's step, known only once it started):
                the transition from it into this task is planned (as :meth:`planned` did for the step's hook)
                and stored with this task, in its transaction.
            holder: who commits (the run's executor, or the action's claim): the store writes only while they
                still hold the run or the task.

        Raises:
            HolderLostError: ``holder`` no longer holds the run or the task (nothing is stored or dispatched).
        """
        events = self._attempt_events(state, new_attempts)
        source = after if after is not None else state
        if after is not None:
            transition = self.planned(run, after, state.task_id)
        else:
            transition = self._replanned(run, state) if replan else self.planned(run, state, target)
        transition_events = self._transition_events(run, source, transition) if transition is not None else []
        failpoint("task.before_commit", state.task_id)
        # The task's state and the transition planned from it commit together: no crash can separate them.
        _store_then_dispatch(
            lambda: self.store.save_task(
                state, events, transition=transition, transition_events=transition_events, holder=holder
            ),
            [*events, *transition_events],
            self.sinks,
        )
        failpoint("task.after_commit", state.task_id)
        return Committed(state, transition, (*events, *transition_events))

    def commit_transition(
        self, run: RunRecord, prior: TaskState, target: str, *, holder: Holder | None = None
    ) -> TransitionRecord:
        """Plan and store the missing transition out of a committed task (a run stopped between the two)."""
        transition = self.planned(run, prior, target)
        assert transition is not None  # a target always gets a transition
        events = self._transition_events(run, prior, transition)
        _store_then_dispatch(lambda: self.store.save_transition(transition, events, holder=holder), events, self.sinks)
        return transition

    def create_run(self, run: RunRecord, events: Sequence[LoopEvent] = ()) -> None:
        """Store a new run with the events that describe it (a follow), in one transaction, then dispatch them.

        Raises:
            AlreadyFollowedError: the run it follows is followed already (nothing is stored or dispatched).
        """
        _store_then_dispatch(lambda: self.store.create_run(run, events), events, self.sinks)

    def record(self, events: Sequence[LoopEvent]) -> None:
        """Store events that describe no new state, then dispatch them (see :func:`record_events`)."""
        record_events(self.store, events, self.sinks)

    # -- records --------------------------------------------------------------------------------------------

    @staticmethod
    def planned(run: RunRecord, prior: TaskState, target: str | None) -> TransitionRecord | None:
        """The transition the planner gives from ``prior`` to ``target`` (None without a target); nothing stored."""
        if target is None:
            return None
        planned = plan_transition(prior, target)
        return TransitionRecord(
            run_id=run.run_id,
            transition_source_task_id=prior.task_id,
            transition_target_task_id=target,
            transition_mode=planned.mode,
            transition_reason=planned.reason,
            hook=planned.hook,
        )

    def _replanned(self, run: RunRecord, after: TaskState) -> TransitionRecord | None:
        current = next(
            (
                t
                for t in reversed(self.store.get_transitions(run.run_id))
                if t.transition_source_task_id == after.task_id and not t.superseded
            ),
            None,
        )
        if current is None:
            return None
        planned = self.planned(run, after, current.transition_target_task_id)
        assert planned is not None
        if (planned.hook, planned.transition_mode) == (current.hook, current.transition_mode):
            return None
        return planned.model_copy(update={"transition_reason": planned.transition_reason + REPLANNED})

    @staticmethod
    def _attempt_events(state: TaskState, attempts: Sequence[AttemptRecord]) -> list[LoopEvent]:
        if state.validation.status == "skipped":
            return []  # a task without the contract is not validated: no contract event
        return [
            _event(
                "loop.contract.validated" if attempt.status == "valid" else "loop.contract.failed",
                run_id=state.run_id,
                task_id=state.task_id,
                loop_contract_version=state.loop_contract_version,
                loop_mode=state.loop_mode,
                validation_status=attempt.status,
            )
            for attempt in attempts
        ]

    @staticmethod
    def _transition_events(run: RunRecord, source: TaskState, transition: TransitionRecord) -> list[LoopEvent]:
        names: list[EventName] = ["loop.transition.planned"]
        if transition.transition_mode == "fallback":
            names.append("loop.transition.fallback_used")
        return [
            _event(
                name,
                run_id=run.run_id,
                task_id=transition.transition_target_task_id,
                # The handoff is described under the contract version of the task it leaves.
                loop_contract_version=source.loop_contract_version,
                loop_mode=run.loop_mode,
                transition_mode=transition.transition_mode,
            )
            for name in names
        ]


def _event(name: EventName, **fields: str | None) -> LoopEvent:
    return LoopEvent(name=name, **fields)  # type: ignore[arg-type]
