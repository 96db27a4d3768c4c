"""Where stored runs and operator actions execute: the seam between asking for work and doing it.

A web request starts a run (a ``pending`` row) and returns at once; an executor runs it. An operator action
(repair, regenerate) is executed by the same executor, and its caller waits for the task's new state. In this
process, runs execute as tasks on one event loop (:mod:`marsrag.runtime.async_executor`, for LLMs that answer
``acall``) or on a thread pool (here); with a broker set, Celery workers execute both (:mod:`marsrag.queue`).
:func:`marsrag.compose.open_executor` chooses between them.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal, Protocol

from marsrag.errors import ActionConflictError, QueueUnavailableError

if TYPE_CHECKING:
    from marsrag.runtime.actions import Action
    from marsrag.state import TaskState

log = logging.getLogger(__name__)

ActFunction = Callable[["Action", str, str], "TaskState"]
#: How a server executes runs in its own process (see :func:`marsrag.compose.open_executor`).
ExecutorKind = Literal["auto", "async", "thread"]
EXECUTOR_KINDS: tuple[ExecutorKind, ...] = ("auto", "async", "thread")


class RunExecutor(Protocol):
    """Executes stored runs in the background and operator actions on stored tasks."""

    def submit(self, run_id: str) -> None:
        """Queue a stored ``pending`` run for execution; returns at once.

        Raises:
            QueueUnavailableError: the run cannot be queued now (it stays stored, ``pending``, for the sweep).
        """
        ...

    def holds(self, run_id: str) -> bool:
        """Whether this executor has the run queued or executing (the sweep leaves such runs alone)."""
        ...

    def act(self, action: Action, run_id: str, task_id: str) -> TaskState:
        """Execute an operator action on a stored task and return the task's new state (seconds: it calls the LLM).

        Raises:
            RunNotFoundError, TaskNotFoundError, ActionConflictError: as :func:`marsrag.runtime.actions.apply_action`.
        """
        ...

    def shutdown(self, grace: float = 0.0) -> None:
        """Stop taking work; give what this process is executing up to ``grace`` seconds to reach a commit point."""
        ...


class HeldRuns:
    """The runs an in-process executor holds (queued or executing): each admitted once, until released.

    Shared by :class:`ThreadRunExecutor` and :class:`~marsrag.runtime.async_executor.AsyncRunExecutor`, with the
    executor's ``stopping`` event: once it is set (under this lock) no run is admitted.
    """

    def __init__(self, stopping: threading.Event) -> None:
        self.stopping = stopping
        self._held: set[str] = set()
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)

    def admit(self, run_id: str) -> bool:
        """Hold ``run_id``; False when it is held already (the sweep and a request may both hand it over).

        Raises:
            QueueUnavailableError: the executor is shutting down (the run stays ``pending``).
        """
        with self._lock:
            if self.stopping.is_set():
                raise QueueUnavailableError("this server is shutting down: the run stays pending for the next one")
            if run_id in self._held:
                return False
            self._held.add(run_id)
            return True

    def holds(self, run_id: str) -> bool:
        """Whether the run is queued or executing here."""
        with self._lock:
            return run_id in self._held

    def release(self, run_id: str) -> None:
        """The run is no longer queued or executing here."""
        with self._lock:
            self._held.discard(run_id)
            self._idle.notify_all()

    def stop(self) -> None:
        """Admit no more runs (sets ``stopping``)."""
        with self._lock:
            self.stopping.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until no run is held (or ``timeout`` passed); whether none is."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._held, timeout)


@contextmanager
def logged_failures(run_id: str) -> Iterator[None]:
    """Around a run's execution: what escapes the runner is logged, never raised into the executor's worker.

    The runner records a run's failures on the run; what escapes it (the store is gone) is logged here, and
    the run, still stored, is picked up again by the sweep.
    """
    try:
        yield
    except ActionConflictError as conflict:
        # Another process executes it (a recovered run both picked up): not a failure of this one.
        log.info("run %s not executed here: %s", run_id, conflict)
    except Exception:  # noqa: BLE001 - logged: the runner records failures on the run, this is what escapes it
        log.exception("run %s could not be executed", run_id)


class ThreadRunExecutor:
    """Executes runs on daemon threads of this process, and actions in the caller's thread.

    On :meth:`shutdown` queued runs are left ``pending`` (the next server's sweep takes them) and executing
    ones are asked to stop after their current task's commit (``stopping``), so a server exits within its
    grace period instead of draining its whole queue. A run that never finishes (the process died, or the
    grace ran out mid-task) is found stale later and resumed from its committed tasks.
    """

    def __init__(
        self,
        execute: Callable[[str], Any],
        act: ActFunction,
        threads: int = 2,
        *,
        stopping: threading.Event | None = None,
    ) -> None:
        self._execute = execute
        self._act = act
        #: Set on shutdown: the runner checks it after each task commit (see WorkflowRunner.stopping).
        self.stopping = stopping if stopping is not None else threading.Event()
        self._queue: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._held = HeldRuns(self.stopping)
        # Daemon threads: an interpreter exiting after the grace period does not wait for an LLM call.
        self._threads = [
            threading.Thread(target=self._work, name=f"marsrag-run-{index}", daemon=True) for index in range(threads)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, run_id: str) -> None:
        """Queue a stored run; returns at once.

        Raises:
            QueueUnavailableError: the executor is shutting down (the run stays ``pending``).
        """
        if self._held.admit(run_id):
            self._queue.put(run_id)

    def holds(self, run_id: str) -> bool:
        """Whether the run is queued or executing here."""
        return self._held.holds(run_id)

    def _work(self) -> None:
        while (run_id := self._queue.get()) is not None:
            try:
                if not self.stopping.is_set():  # else: left pending, for the next server's sweep
                    with logged_failures(run_id):
                        self._execute(run_id)
            finally:
                self._held.release(run_id)

    def act(self, action: Action, run_id: str, task_id: str) -> TaskState:
        """Execute the action here and now; the task's new state."""
        return self._act(action, run_id, task_id)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until no run is queued or executing (or ``timeout`` passed); whether none is."""
        return self._held.wait(timeout)

    def shutdown(self, grace: float = 0.0) -> None:
        """Stop taking runs, leave queued ones pending, and give executing ones ``grace`` seconds to stop.

        An executing run stops after its current task commits (it is left ``pending`` and resumes from there
        on the next start); one still inside an LLM call when the grace ends is left ``running`` and found
        stale once this process is gone.
        """
        self._held.stop()
        for _ in self._threads:
            self._queue.put(None)
        deadline = time.monotonic() + grace
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
