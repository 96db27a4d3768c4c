"""The sweep: finding the runs no live executor holds and handing them to one, at start and while serving.

A run is unheld when (the liveness rule of :mod:`marsrag.liveness`, for pending and running runs alike):

- it is ``running`` and its executor is gone (dead on this host, or silent for
  :data:`~marsrag.liveness.EXECUTOR_SILENT_AFTER` elsewhere: executors beat while they execute). Whoever sent
  the run to that executor does not matter: once claimed, a run is held by its executor's liveness alone;
- it is ``pending`` and the process that accepted it is gone, or it is this process, whose executor does
  not have it (the queue refused it with 503, its claim failed on a full disk, or the broker lost it) a few
  seconds after it was stored (:data:`ACCEPT_GRACE`: the request that stored it queues it right after).

An unheld run is adopted first: a compare-and-set makes this process its holder (a running run of a gone
executor goes back to ``pending``, handed back), so of several servers sweeping the same store one hands it
over, and the run is then held by this process's executor like a run it accepted. Handing a run over is
always safe: the claim on the run lets one process execute it, and a run resumes from its committed tasks.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime, timedelta

from marsrag.errors import MarsRAGError, QueueUnavailableError
from marsrag.liveness import holds_here, is_stale, owner_id
from marsrag.runtime.executor import RunExecutor
from marsrag.state import RunRecord, utcnow
from marsrag.store.base import RunStore

log = logging.getLogger(__name__)

#: Seconds between two sweeps of a serving process (``MARSRAG_SWEEP_SECONDS``).
SWEEP_SECONDS = 30.0


#: How long a run accepted here may wait for the request that stored it to queue it, before the sweep takes it
#: for unqueued: the request stores the run, then queues it, and a sweep in between must not send it as well.
ACCEPT_GRACE = timedelta(seconds=5)


def unheld(run: RunRecord, executor: RunExecutor, now: datetime | None = None) -> bool:
    """Whether no live executor holds ``run`` (see the module docstring)."""
    if run.status == "running":
        # Claimed: its executor's liveness decides, not whether (or when) this process's executor was given it.
        # A run handed back is pending again, under this process: the executor holds it until it is claimed.
        return is_stale(run)
    if executor.holds(run.run_id):
        return False
    if holds_here(run.owner):
        # Accepted here, yet not queued here (refused by the queue, a failed claim, lost by the broker). Its
        # updated_at was set by this process's clock, so the age is safe to compare.
        return (now or utcnow()) - run.updated_at > ACCEPT_GRACE
    return is_stale(run)


class Sweeper:
    """Hands the runs no live executor holds to ``executor``: once (:meth:`sweep`) or every ``interval`` seconds."""

    def __init__(
        self,
        store: RunStore,
        executor: RunExecutor,
        *,
        interval: float = SWEEP_SECONDS,
        runnable: Callable[[RunRecord], bool] = lambda run: True,
    ) -> None:
        self.store = store
        self.executor = executor
        self.interval = interval
        #: Whether this process can execute a run: a run it cannot (a Flow's, resumed by its flow's
        #: ``LoopFlow.resume_run``; one of a workflow this config no longer defines) is left as it is stored.
        self.runnable = runnable
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sweep(self) -> list[str]:
        """Hand every unheld run to the executor, oldest first; the ids handed over.

        An unreachable queue stops this sweep, not the caller: the runs stay stored for the next one.
        """
        handed: list[str] = []
        for run in reversed(self.store.list_runs(statuses=("pending", "running"))):
            if not self.runnable(run) or not unheld(run, self.executor) or not self._adopt(run):
                continue
            try:
                self.executor.submit(run.run_id)
            except QueueUnavailableError as error:
                log.warning("unheld runs not handed over (%d handed): %s", len(handed), error)
                break
            handed.append(run.run_id)
        return handed

    def _adopt(self, run: RunRecord) -> bool:
        """Make this process the holder of an unheld run; whether it is (or was) this one's.

        A running run of a gone executor is handed back: ``pending`` under this process, with the reason, so
        the executor it is given to claims it as a new run (and this process's executor holds it until then:
        the next sweep does not send it again). A compare-and-set on the run as read: one sweeper adopts it.
        """
        if run.status == "pending" and holds_here(run.owner):
            return True  # this one's own needs no adopting
        reason = None
        if run.status == "running":
            reason = f"handed back by {owner_id()}: its executor {run.owner} is gone; it resumes from its last commit"
        return self.store.set_run_status(run.run_id, "pending", owner=owner_id(), reason=reason, seen=run)

    def start(self) -> None:
        """Sweep every ``interval`` seconds on a daemon thread until :meth:`stop`."""
        if self._thread is None and self.interval > 0:
            self._thread = threading.Thread(target=self._loop, name="marsrag-sweep", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                handed = self.sweep()
            except MarsRAGError as error:  # the store is down: the next sweep tries again
                log.warning("sweep failed: %s", error)
                continue
            if handed:
                log.info("sweep handed %d unheld run(s) to the executor: %s", len(handed), ", ".join(handed))

    def stop(self) -> None:
        """Stop sweeping (a sweep in progress finishes)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None


__all__ = ["ACCEPT_GRACE", "SWEEP_SECONDS", "Sweeper", "unheld"]
