"""The in-process run executor on one event loop: runs wait on the LLM without holding a thread each.

:class:`AsyncRunExecutor` is the sibling of :class:`~marsrag.runtime.executor.ThreadRunExecutor` for LLMs
that answer ``acall`` (:func:`marsrag.llm.boundary.supports_async`): a background thread owns an event loop,
and each submitted run is a task on it, executed by the runner's ``aresume``
(:meth:`~marsrag.runtime.runner.WorkflowRunner.aresume`, on CrewAI's native ``Crew.akickoff``). While a run
waits on its LLM the loop serves the others, so ``concurrency`` runs can wait at once where the thread
executor needs a thread each. Operator actions execute in the caller's thread, as on the thread executor.

Shutdown is the thread executor's: queued runs stay ``pending`` for the next server's sweep, executing ones
stop after their current task's commit (``stopping``), and one still inside an LLM call when the grace ends
is left ``running`` (found stale once this process is gone).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from marsrag.runtime.executor import ActFunction, HeldRuns, logged_failures

if TYPE_CHECKING:
    from marsrag.runtime.actions import Action
    from marsrag.state import TaskState

#: Runs executing at once on the loop by default (``marsrag serve --concurrent-runs``).
DEFAULT_CONCURRENCY = 64


class AsyncRunExecutor:
    """Executes runs as tasks on one event loop in a background thread, and actions in the caller's thread."""

    def __init__(
        self,
        execute: Callable[[str], Awaitable[Any]],
        act: ActFunction,
        concurrency: int = DEFAULT_CONCURRENCY,
        *,
        stopping: threading.Event | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency!r}")
        self._execute = execute
        self._act = act
        #: Set on shutdown: the runner checks it after each task commit (see WorkflowRunner.stopping).
        self.stopping = stopping if stopping is not None else threading.Event()
        self._held = HeldRuns(self.stopping)
        self._loop = asyncio.new_event_loop()
        # Made on the loop (its thread): the runs over ``concurrency`` wait for a slot, queued.
        self._slots: asyncio.Semaphore | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        ready = threading.Event()
        # A daemon thread, as the thread executor's: an interpreter exiting after the grace does not wait on it.
        self._thread = threading.Thread(
            target=self._serve, args=(concurrency, ready), name="marsrag-run-loop", daemon=True
        )
        self._thread.start()
        ready.wait()

    def _serve(self, concurrency: int, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        self._slots = asyncio.Semaphore(concurrency)
        ready.set()
        try:
            self._loop.run_forever()
        finally:
            self._loop.run_until_complete(self._loop.shutdown_default_executor())
            self._loop.close()

    def submit(self, run_id: str) -> None:
        """Queue a stored run on the loop; returns at once.

        Raises:
            QueueUnavailableError: the executor is shutting down (the run stays ``pending``).
        """
        if self._held.admit(run_id):
            self._loop.call_soon_threadsafe(self._start, run_id)

    def holds(self, run_id: str) -> bool:
        """Whether the run is queued or executing here."""
        return self._held.holds(run_id)

    def _start(self, run_id: str) -> None:
        # On the loop: the task is kept referenced until it ends (the loop itself keeps only weak references).
        task = self._loop.create_task(self._work(run_id), name=f"marsrag-run-{run_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _work(self, run_id: str) -> None:
        assert self._slots is not None  # made before the loop started
        try:
            if self.stopping.is_set():
                return  # left pending, for the next server's sweep
            async with self._slots:
                if not self.stopping.is_set():  # else: left pending, for the next server's sweep
                    with logged_failures(run_id):
                        await self._execute(run_id)
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

        An executing run stops after its current task commits (left ``pending``, it resumes from there on the
        next start). When every run has stopped within the grace the loop and its thread end; else they are
        left to the process's exit, and a run still inside an LLM call stays ``running``, found stale later.
        """
        self._held.stop()
        deadline = time.monotonic() + grace
        if self.wait(max(0.0, deadline - time.monotonic())) and self._thread.is_alive():
            with suppress(RuntimeError):  # closed already: a second shutdown
                self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(max(0.0, deadline - time.monotonic()))


__all__ = ["DEFAULT_CONCURRENCY", "AsyncRunExecutor"]
