"""Operator actions on a stored task: run its repair again, or regenerate only its failing sections.

Both run the task again on a crew of one (the same config, agent, loop mode and LLM as the run), keep the
earlier attempts and append the new ones (``operator_repair`` or ``regenerate``), record an event per
attempt, and, when the task's loop changes, re-plan the transition out of it: the new transition is stored
with the task in one transaction and the earlier one is kept, marked superseded. An LLM failure never
raises: it is recorded as a failed attempt and the task's output stays as it was.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

from marsrag.chain.briefing import asks_goal, briefing, without_placeholders
from marsrag.chain.numbering import SourceNumbers, numbered
from marsrag.contract import FIELD_LIMITS, FIELDS, render_sections, validate_output
from marsrag.errors import ActionConflictError, TaskNotFoundError
from marsrag.integrations.calls import JOURNAL, AttemptCalls
from marsrag.integrations.passages import PASSAGES
from marsrag.liveness import is_stale, owner_id
from marsrag.runtime.commit import Outcome, failed_attempt, settle
from marsrag.runtime.runner import WorkflowRunner
from marsrag.runtime.states import with_found
from marsrag.state import AttemptKind, AttemptRecord, RunRecord, TaskState
from marsrag.store.queries import Claim, Holder
from marsrag.tracing.spans import start_action
from marsrag.views.summary import summarize

Action = Literal["repair", "regenerate"]
#: The statuses an operator action applies to (valid tasks need none; skipped tasks have no contract).
FIXABLE = ("partial", "failed")


def repair_task(runner: WorkflowRunner, run_id: str, task_id: str) -> TaskState:
    """Run a task's repair again: a fresh answer with its errors fed back, itself allowed one repair.

    Raises:
        RunNotFoundError: no such run.
        TaskNotFoundError: the run has no such task.
        ActionConflictError: the task is valid or ran without the contract, the run is still executing, or
            the task is gone from the config.
    """
    with _claimed(runner, run_id, task_id) as (run, state, holder):
        return _repair(runner, run, state, holder)


def _repair(runner: WorkflowRunner, run: RunRecord, state: TaskState, holder: Holder) -> TaskState:
    crew = _crew(runner, run, state)
    item = crew.tasks[0]
    problems = "; ".join(issue.message for issue in state.validation.errors) or "the output was invalid"
    previous = state.attempts[-1].raw if state.attempts else state.rendered
    _describe(
        runner,
        item.task,
        run,
        state,
        "An operator asked for a repair of this step. Its last answer did not satisfy the Loop Contract "
        f"({state.validation.status}): {problems}.\nThe last answer was:\n{previous}\n\nAnswer again with all "
        "five sections.",
    )
    assert item.guardrail is not None  # _crew refuses tasks without the contract
    error = _kickoff(crew, run, "repair", state.task_id)
    if error is not None or not item.guardrail.attempts:
        return _record_failure(runner, run, state, holder, "operator_repair", error or "the task produced no answer")
    attempts = [
        attempt.record(len(state.attempts) + offset + 1, "operator_repair")
        for offset, attempt in enumerate(item.guardrail.attempts)
    ]
    outcomes = [Outcome.of(attempt.result) for attempt in item.guardrail.attempts]
    return _commit(runner, run, _with_found(state, item.task), holder, outcomes, attempts)


def regenerate_sections(runner: WorkflowRunner, run_id: str, task_id: str) -> TaskState:
    """Re-ask only a task's failing sections and merge them with its passing ones.

    The merged output is validated as a whole; its verdict is the task's. Sections the answer leaves out
    or gets wrong again keep their earlier text.

    Raises:
        RunNotFoundError, TaskNotFoundError, ActionConflictError: as for :func:`repair_task`.
    """
    with _claimed(runner, run_id, task_id, "regenerate") as (run, state, holder):
        return _regenerate(runner, run, state, holder)


def _regenerate(runner: WorkflowRunner, run: RunRecord, state: TaskState, holder: Holder) -> TaskState:
    failing = _failing(state)
    crew = _crew(runner, run, state, machine_first=True)
    item = crew.tasks[0]
    kept = render_sections({name: getattr(state.loop_output, name) for name in FIELDS if name not in failing})
    problems = "; ".join(issue.message for issue in state.validation.errors if issue.field in failing)
    labels = ", ".join(name.upper() for name in failing)
    _describe(
        runner,
        item.task,
        run,
        state,
        f"An operator asked to regenerate the sections of this step that failed the Loop Contract: {labels} "
        f"({problems or 'missing or invalid'}).\nThese sections passed and stay as they are:\n{kept or '(none)'}",
    )
    item.task.expected_output = (
        f"Only the sections {labels}, each on its own line as `LABEL: text`: non-empty, {FIELD_LIMITS}, "
        "consistent with the sections that passed."
    )
    error = _kickoff(crew, run, "regenerate", state.task_id)
    output: Any = getattr(item.task, "output", None)
    raw: str | None = output.raw if isinstance(getattr(output, "raw", None), str) else None
    if error is not None or raw is None:
        return _record_failure(runner, run, state, holder, "regenerate", error or "the task produced no answer")
    answer = validate_output(raw, mode=_mode(run))
    merged = {name: getattr(state.loop_output, name) for name in FIELDS}
    for name in failing:
        if name in answer.passing_fields:
            merged[name] = answer.loop_output[name]
    result = validate_output(merged, mode=_mode(run))
    calls = AttemptCalls.of(JOURNAL.drain(item.task))
    attempt = AttemptRecord(
        number=len(state.attempts) + 1,
        raw=raw,
        status=result.status,
        errors=list(result.errors),
        kind="regenerate",
        **calls.fields(),
    )
    return _commit(runner, run, _with_found(state, item.task), holder, [Outcome.of(result)], [attempt])


def apply_action(runner: WorkflowRunner, action: Action, run_id: str, task_id: str) -> TaskState:
    """Run ``repair`` or ``regenerate`` on a stored task (see :func:`repair_task`, :func:`regenerate_sections`)."""
    return (repair_task if action == "repair" else regenerate_sections)(runner, run_id, task_id)


# -- steps ----------------------------------------------------------------------------------------------------


@contextmanager
def _claimed(
    runner: WorkflowRunner, run_id: str, task_id: str, action: Action = "repair"
) -> Iterator[tuple[RunRecord, TaskState, Holder]]:
    """The run, the task's current state and the claim, with the task claimed for this action until the block ends.

    The claim is one conditional write: of two racing actions exactly one gets it, the other a conflict; a
    resume that took the run since it was read refuses it too, and a resume is refused while it holds. A
    claim whose process died is taken over (the liveness rule of runs). The state is read after claiming,
    so the action starts from what the previous action committed.
    """
    run = runner.store.get_run(run_id)
    if run.status in ("pending", "running") and not is_stale(run):
        raise ActionConflictError(f"run {run_id!r} is still {run.status}: act on its tasks once it has finished")
    owner = f"{owner_id()}:{uuid.uuid4().hex}"
    claim = runner.store.claim_task(run_id, task_id, owner, statuses=FIXABLE, seen=run)
    if not claim:
        raise _refused(runner, run_id, task_id, claim, action)
    try:
        yield run, _state(runner, run_id, task_id), Holder(task_claim=owner)
    finally:
        runner.store.release_task(run_id, task_id, owner)  # a no-op once the task was saved


def _refused(runner: WorkflowRunner, run_id: str, task_id: str, claim: Claim, action: Action) -> Exception:
    """The error that says why a claim on the task was refused (``action`` names what there is nothing to do)."""
    if claim.refusal == "changed":
        return ActionConflictError(
            f"run {run_id!r} changed while the action started (it is being resumed or recovered): try again"
        )
    if claim.refusal == "busy":
        return ActionConflictError(f"another operator action is already running on task {task_id!r}: try again later")
    state = _state(runner, run_id, task_id)  # raises TaskNotFoundError for a missing task
    nothing = "nothing to regenerate" if action == "regenerate" else "nothing to repair"
    if state.validation.status == "skipped":
        return ActionConflictError(f"task {task_id!r} ran without the contract (loop_mode none): {nothing}")
    return ActionConflictError(f"task {task_id!r} is already valid: {nothing}")


def _state(runner: WorkflowRunner, run_id: str, task_id: str) -> TaskState:
    state = next((task for task in runner.store.get_tasks(run_id) if task.task_id == task_id), None)
    if state is None:
        raise TaskNotFoundError(f"run {run_id!r} has no task {task_id!r}")
    return state


def _crew(runner: WorkflowRunner, run: RunRecord, state: TaskState, *, machine_first: bool = False) -> Any:
    # lazy: CrewAI, loads only when an LLM or a crew is built
    from marsrag.integrations.crewai_builders import build_single

    # A run under an experiment arm is re-run as it ran: the arm's loop mode, agent and LLM.
    project, llm = runner.run_setup(run)
    if run.workflow not in project.workflows or state.task_id not in project.tasks:
        raise ActionConflictError(
            f"task {state.task_id!r} of workflow {run.workflow!r} is not in the current config: cannot re-run it"
        )
    config = project.tasks[state.task_id]
    agent = state.agent if state.agent in project.agents else config.agent
    if agent not in project.agents:
        agent = next(iter(project.agents))
    crew = build_single(
        project,
        run.workflow,
        state.task_id,
        agent,
        llm,
        retriever=runner.retriever_for(run),
        retrieval_limit=runner.retrieval_limit,
    )
    if crew.tasks[0].guardrail is None:
        raise ActionConflictError(f"task {state.task_id!r} no longer runs under the contract in {run.workflow!r}")
    if machine_first:
        # lazy: CrewAI, loads only when an LLM or a crew is built
        from marsrag.integrations.crewai_builders import build_task

        # The regenerate answer holds only some sections: no guardrail, no conversion to LoopOutput.
        crew.tasks[0] = build_task(config, crew.tasks[0].task.agent, "none")
        crew.crew.tasks = [crew.tasks[0].task]
    return crew


def _describe(runner: WorkflowRunner, task: Any, run: RunRecord, state: TaskState, request: str) -> None:
    """Give the task what it had in the run (goal, hook, sources) and the operator's request."""
    hook = state.loop_output.hook if state.hook_source != "goal" else None
    results = state.retrieval.results if state.retrieval is not None else []
    support = state.retrieval.support if state.retrieval is not None else None
    # Added before kickoff, so interpolated with its inputs: stray braces would be read as inputs.
    goal_line = not asks_goal(task.expected_output)
    text = without_placeholders(briefing(run.goal, hook, results, extra=request, support=support, goal_line=goal_line))
    task.description = f"{task.description}\n\n{text}"
    # The agent's knowledge tool numbers what it finds by the run's sources (after these for an older run).
    numbers = SourceNumbers.of(runner.store.get_tasks(run.run_id)) if numbered(state) else None
    PASSAGES.given(str(task.id), results, numbers.assign if numbers is not None else None)


def _with_found(state: TaskState, task: Any) -> TaskState:
    """``state`` with the passages the agent's tools found in the action after its retrieval results (as numbered)."""
    return state.model_copy(update={"retrieval": with_found(state.retrieval, task)})


def _kickoff(crew: Any, run: RunRecord, action: Action, task_id: str) -> str | None:
    """Run the crew (traced as the action's span); the error as one line when it raised (an LLM or provider
    failure), else None."""
    span = start_action(run, action, task_id)
    try:
        with span.current():
            crew.kickoff({"goal": run.goal})
    except Exception as error:  # noqa: BLE001 - recorded on the task as a failed attempt, never raised
        span.fail(error)
        return f"{type(error).__name__}: {error}"
    finally:
        span.end()
    return None


def _record_failure(
    runner: WorkflowRunner, run: RunRecord, state: TaskState, holder: Holder, kind: AttemptKind, reason: str
) -> TaskState:
    """Append a failed attempt naming the reason; the task's output and verdict stay as they were."""
    attempt = failed_attempt(state, kind, reason)
    updated = state.model_copy(update={"attempts": [*state.attempts, attempt]})
    return runner.commits.commit(run, updated, [attempt], holder=holder).state


def _commit(
    runner: WorkflowRunner,
    run: RunRecord,
    state: TaskState,
    holder: Holder,
    outcomes: list[Outcome],
    new_attempts: list[AttemptRecord],
) -> TaskState:
    """Store the task's new attempts, events and (when its loop changed) a re-planned transition.

    The task ends with the best of what it holds now and what the action produced (an action that made it
    worse keeps the earlier output; its attempts are stored all the same). The run's summary is rewritten
    only while the run is as the action read it: a resume that took it since writes its own.
    """
    attempts = [*state.attempts, *new_attempts]
    candidates = [Outcome.stored(state), *outcomes]
    stored = runner.store.get_tasks(run.run_id)
    known = SourceNumbers.of([*stored, state]).sources() if numbered(state) else None
    updated = settle(state, attempts, candidates, router=runner.router, candidates=runner.candidates, known=known)
    runner.commits.commit(run, updated, new_attempts, replan=True, holder=holder)
    tasks = [updated if task.task_id == updated.task_id else task for task in stored]
    runner.store.set_run_status(run.run_id, run.status, summary=summarize(tasks, runner.asked(run)), seen=run)
    return updated


def _failing(state: TaskState) -> list[str]:
    named = {issue.field for issue in state.validation.errors if issue.field in FIELDS}
    named.update(name for name in FIELDS if not getattr(state.loop_output, name))
    return [name for name in FIELDS if name in named]


def _mode(run: RunRecord) -> Any:
    return run.loop_mode if run.loop_mode in ("hard", "soft") else "hard"


__all__ = ["FIXABLE", "Action", "apply_action", "regenerate_sections", "repair_task"]
