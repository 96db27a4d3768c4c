"""The jobs a ``marsrag worker`` executes: run a stored run, apply an operator action to a stored task.

Both take ids only and work on the worker's runner (its store, config and LLM), bound once at start.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from marsrag import errors
from marsrag.errors import ActionConflictError, MarsRAGError, RunNotFoundError
from marsrag.liveness import is_stale
from marsrag.state import RunRecord

if TYPE_CHECKING:
    from marsrag.runtime.runner import WorkflowRunner

log = logging.getLogger(__name__)

#: Job names, the contract between the processes that send jobs and the workers that execute them.
RUN_JOB = "marsrag.run"
ACT_JOB = "marsrag.act"

#: Seconds before a run job refused while an operator action holds a task of its run looks again.
BUSY_RETRY_SECONDS = 15
#: Looks before giving up on a run an operator action holds (20 minutes: past an action claim's staleness).
BUSY_RETRIES = 80

_runner: WorkflowRunner | None = None


def bind(runner: WorkflowRunner) -> None:
    """Make ``runner`` the one this process's jobs use."""
    global _runner
    _runner = runner


def _bound() -> WorkflowRunner:
    if _runner is None:
        raise RuntimeError("no runner bound: jobs execute in `marsrag worker` processes")
    return _runner


def run_job(job: Any, run_id: str) -> str:
    """Execute (or resume) a stored run; its final status.

    Idempotent: a job of a finished run, or of a run executing in a live worker (a duplicate: the broker
    redelivered it, or a sweep sent it again), is a no-op; if that worker dies, a server's sweep hands the
    run back. A job refused because an operator action holds a task of the run looks again later.
    """
    runner = _bound()
    try:
        run = runner.store.get_run(run_id)
    except RunNotFoundError:
        log.warning("run %s is not in the store: job dropped", run_id)
        return "missing"
    if run.status in ("completed", "failed"):
        return run.status  # a redelivered job of a run that ended
    if _held_elsewhere(run):
        return "held"
    try:
        # resume executes a pending run from its start, and a stale one from its last committed task.
        return runner.resume(run_id).status
    except ActionConflictError:
        try:
            current = runner.store.get_run(run_id)
        except RunNotFoundError:
            return "missing"
        if current.status in ("completed", "failed"):
            return current.status
        if _held_elsewhere(current):
            return "held"  # another worker won the claim
        # An operator action holds one of its tasks (or the run changed meanwhile): look again later.
        raise job.retry(countdown=BUSY_RETRY_SECONDS, max_retries=BUSY_RETRIES) from None


def _held_elsewhere(run: RunRecord) -> bool:
    """Whether ``run`` is executing in a live process: a job for it is a duplicate (logged and dropped)."""
    if run.status != "running" or is_stale(run):
        return False
    log.info("run %s is executing in %s, which is alive: duplicate job dropped", run.run_id, run.owner)
    return True


def act_job(action: str, run_id: str, task_id: str) -> dict[str, Any]:
    """Apply an operator action; ``{"task": state}`` or ``{"error": class name, "message": ...}``.

    Errors travel as data, not pickled exceptions: the server re-raises them as the same MarsRAG error.
    """
    from marsrag.runtime.actions import apply_action  # lazy: CrewAI (the worker's runner loaded it already)

    if action not in ("repair", "regenerate"):
        return {"error": "InputError", "message": f"no action {action!r}: use repair or regenerate"}
    try:
        state = apply_action(_bound(), "repair" if action == "repair" else "regenerate", run_id, task_id)
    except MarsRAGError as error:
        return {"error": type(error).__name__, "message": str(error)}
    return {"task": state.model_dump(mode="json")}


def raise_error(result: dict[str, Any]) -> None:
    """Re-raise an :func:`act_job` error result as its MarsRAG error class (the base class when unknown)."""
    name, message = str(result.get("error")), str(result.get("message", ""))
    kind = getattr(errors, name, None)
    if not (isinstance(kind, type) and issubclass(kind, MarsRAGError)):
        kind = MarsRAGError
    raise kind(message)


def register(app: Any) -> None:
    """Register the jobs on a Celery app."""
    app.task(name=RUN_JOB, bind=True, ignore_result=True)(run_job)
    # An action is not redelivered: its operator waits for it now; a lost one is clicked again.
    app.task(name=ACT_JOB, acks_late=False)(act_job)
