"""``CeleryRunExecutor``: the run executor that sends runs and actions to ``marsrag worker`` processes."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from marsrag.errors import QueueUnavailableError
from marsrag.liveness import STALE_AFTER
from marsrag.queue.app import ACT_JOB, RUN_JOB, QueueSettings, celery_app
from marsrag.queue.jobs import raise_error
from marsrag.settings import resolve_settings
from marsrag.state import TaskState

if TYPE_CHECKING:
    from marsrag.runtime.actions import Action


__all__ = ["CeleryRunExecutor", "QueueUnavailableError"]


class CeleryRunExecutor:
    """Sends each run and action as a job to the queue; workers on any machine sharing the store execute them."""

    def __init__(self, settings: QueueSettings) -> None:
        self.settings = settings
        self.app = celery_app(settings)
        # When each run was last sent, oldest first: the broker holds it for a while; past STALE_AFTER it may
        # have lost it. Entries past that are dropped as runs are sent, so the map stays as small as a window.
        self._sent: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def from_url(cls, broker: str) -> CeleryRunExecutor:
        """The executor on ``broker``, with the other queue settings resolved as everywhere (the environment).

        Raises:
            InputError: a setting is not usable.
        """
        return cls(QueueSettings.from_settings(resolve_settings(broker=broker)))

    def submit(self, run_id: str) -> None:
        """Send the run to the queue; returns once the broker has it.

        Raises:
            QueueUnavailableError: the broker cannot be reached (the run stays stored, ``pending``).
        """
        try:
            # ignore_result: nobody waits for a run job (its outcome is in the store), so no result subscription.
            self.app.send_task(RUN_JOB, args=[run_id], queue=self.settings.queue, retry=False, ignore_result=True)
        except Exception as error:  # noqa: BLE001 - kombu raises transport-specific errors
            raise QueueUnavailableError(_unreachable(error)) from None
        now = time.monotonic()
        with self._lock:
            self._sent[run_id] = now
            self._sent.move_to_end(run_id)
            while self._sent:
                oldest, sent = next(iter(self._sent.items()))
                if now - sent <= STALE_AFTER.total_seconds():
                    break
                del self._sent[oldest]

    def holds(self, run_id: str) -> bool:
        """Whether the run was sent from here within :data:`~marsrag.liveness.STALE_AFTER` (the broker has it).

        The sweep asks this of pending runs only: once a worker claims a run, the run is held by that worker's
        liveness (:func:`marsrag.liveness.is_stale`), not by when it was sent, so a worker that dies mid-run has
        its runs handed back by the next sweep. Past the window, a run still pending may have been lost by the
        broker: the sweep sends it again (a duplicate job is harmless: the claim on the run lets one worker
        execute it; a job of a finished run, or of one executing in a live worker, is a no-op).
        """
        with self._lock:
            sent = self._sent.get(run_id)
            if sent is not None and time.monotonic() - sent > STALE_AFTER.total_seconds():
                del self._sent[run_id]
                sent = None
        return sent is not None

    def act(self, action: Action, run_id: str, task_id: str) -> TaskState:
        """Send the action to a worker and wait (``action_timeout``) for the task's new state.

        Raises:
            RunNotFoundError, TaskNotFoundError, ActionConflictError: as the worker's ``apply_action`` raised.
            QueueUnavailableError: no broker, or no worker finished the action in time.
        """
        from celery.exceptions import TimeoutError as CeleryTimeout  # lazy: Celery

        try:
            pending = self.app.send_task(
                ACT_JOB, args=[action, run_id, task_id], queue=self.settings.queue, retry=False
            )
        except Exception as error:  # noqa: BLE001 - kombu raises transport-specific errors
            raise QueueUnavailableError(_unreachable(error)) from None
        try:
            result: Any = pending.get(timeout=self.settings.action_timeout, propagate=True)
        except CeleryTimeout:
            pending.forget()
            raise QueueUnavailableError(
                f"no worker finished the {action} of task {task_id!r} within {self.settings.action_timeout:g} s"
            ) from None
        if "task" not in result:
            raise_error(result)
        return TaskState.model_validate(result["task"])

    def shutdown(self, grace: float = 0.0) -> None:
        """Release the broker connections (jobs already sent stay queued; workers execute them)."""
        self.app.close()


def _unreachable(error: Exception) -> str:
    # Kombu's and Celery's messages span lines; an error reason is one.
    return f"the job queue is unreachable ({type(error).__name__}): {' '.join(str(error).split())}"
