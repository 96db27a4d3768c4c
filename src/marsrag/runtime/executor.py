"""Where stored runs and operator actions execute: the seam between asking for work and doing it.

A web request starts a run (a ``pending`` row) and returns at once; an executor runs it. An operator action
(repair, regenerate) is executed by the same executor, and its caller waits for the task's new state. This
process's thread pool is the embedded default; with a broker set, Celery workers execute both
(:mod:`marsrag.queue`). :func:`marsrag.compose.open_executor` chooses between them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Protocol

from marsrag.errors import ActionConflictError

if TYPE_CHECKING:
    from marsrag.runtime.actions import Action
    from marsrag.state import TaskState

log = logging.getLogger(__name__)

ActFunction = Callable[["Action", str, str], "TaskState"]


class RunExecutor(Protocol):
    """Executes stored runs in the background and operator actions on stored tasks."""

    def submit(self, run_id: str) -> None:
        """Queue a stored ``pending`` run for execution; returns at once."""
        ...

    def act(self, action: Action, run_id: str, task_id: str) -> TaskState:
        """Execute an operator action on a stored task and return the task's new state (seconds: it calls the LLM).

        Raises:
            RunNotFoundError, TaskNotFoundError, ActionConflictError: as :func:`marsrag.runtime.actions.apply_action`.
        """
        ...

    def shutdown(self) -> None:
        """Stop taking work; wait for what this process is executing."""
        ...


class ThreadRunExecutor:
    """Executes runs on a pool of threads in this process, and actions in the caller's thread.

    A run that never finishes (the process died) is found stale later and can be resumed.
    """

    def __init__(self, execute: Callable[[str], Any], act: ActFunction, threads: int = 2) -> None:
        self._execute = execute
        self._act = act
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="marsrag-run")
        self._pending: set[Future[Any]] = set()
        self._lock = threading.Lock()

    def submit(self, run_id: str) -> None:
        """Queue a stored run; returns at once."""
        future = self._pool.submit(self._run, run_id)
        with self._lock:
            self._pending.add(future)
        future.add_done_callback(self._done)

    def _run(self, run_id: str) -> Any:
        try:
            return self._execute(run_id)
        except ActionConflictError as conflict:
            # Another process executes it (a recovered run both picked up): not a failure of this one.
            log.info("run %s not executed here: %s", run_id, conflict)
            return None
        except Exception:
            # The runner records a run's failures on the run; what escapes it (the store is gone) is logged here.
            log.exception("run %s could not be executed", run_id)
            raise

    def act(self, action: Action, run_id: str, task_id: str) -> TaskState:
        """Execute the action here and now; the task's new state."""
        return self._act(action, run_id, task_id)

    def _done(self, future: Future[Any]) -> None:
        with self._lock:
            self._pending.discard(future)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until every queued run has finished (or ``timeout`` passed); whether all finished."""
        with self._lock:
            pending = list(self._pending)
        for future in pending:
            try:
                future.result(timeout=timeout)
            except TimeoutError:
                return False
            except Exception:  # noqa: BLE001, S110 - the runner records failures on the run itself
                pass
        return True

    def shutdown(self) -> None:
        """Stop taking runs and wait for the ones executing."""
        self._pool.shutdown(wait=True)
