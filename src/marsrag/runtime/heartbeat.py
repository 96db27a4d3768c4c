"""The heartbeat of the runs a process executes: proof of life between task commits, for other hosts to read.

A process on another host cannot check whether a run's executor is alive; it reads the run's ``updated_at``
(:mod:`marsrag.liveness`). Task commits bump it, but with a slow model they may be minutes apart, so an
executor found silent only after :data:`~marsrag.liveness.STALE_AFTER` (10 minutes) left a dead worker's runs
stranded that long. While a process executes runs, a :class:`Heartbeat` thread bumps theirs every
:data:`~marsrag.liveness.HEARTBEAT_EVERY` (one store write for all of them), and a running run is given up for
dead after :data:`~marsrag.liveness.EXECUTOR_SILENT_AFTER` of silence instead. The thread beats only while the
process holds a run, and stops when it holds none.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from marsrag.errors import MarsRAGError
from marsrag.liveness import HEARTBEAT_EVERY, owner_id
from marsrag.store.base import RunStore

log = logging.getLogger(__name__)

__all__ = ["Heartbeat"]


class Heartbeat:
    """Bumps the heartbeat of the runs this process holds in ``store``, every ``every`` seconds, on a daemon thread.

    ``owner`` is the holder the runs were claimed under (None: this process's ``host:pid`` at each beat, as
    claims take it): a run no longer running under it (finished, or taken over after this process was found
    silent) is not touched.
    """

    def __init__(
        self, store: RunStore, *, every: float = HEARTBEAT_EVERY.total_seconds(), owner: str | None = None
    ) -> None:
        if every <= 0:
            raise ValueError(f"a heartbeat needs an interval > 0 seconds, got {every!r}")
        self.store = store
        self.every = every
        self._owner = owner
        # Holds are counted, so each release ends its own hold only (a run held twice stays beaten until both end).
        self._held: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @contextmanager
    def holding(self, run_id: str) -> Iterator[None]:
        """Beat for ``run_id`` while the block executes it."""
        self.hold(run_id)
        try:
            yield
        finally:
            self.release(run_id)

    def hold(self, run_id: str) -> None:
        """Beat for ``run_id`` until :meth:`release` (starts the thread when it is not beating)."""
        with self._lock:
            self._held[run_id] += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._beat, name="marsrag-heartbeat", daemon=True)
                self._thread.start()

    def release(self, run_id: str) -> None:
        """Stop beating for ``run_id`` (once released as often as it was held)."""
        with self._lock:
            self._held[run_id] -= 1
            if self._held[run_id] <= 0:
                del self._held[run_id]

    @property
    def owner(self) -> str:
        """The holder the runs are beaten for."""
        return self._owner or owner_id()

    @property
    def beating(self) -> bool:
        """Whether the thread runs (it ends within one interval of the last run's release)."""
        with self._lock:
            return self._thread is not None

    def held(self) -> list[str]:
        """The runs beaten for now."""
        with self._lock:
            return list(self._held)

    def beat(self) -> set[str]:
        """Bump the heartbeat of every run held now, in one store write; the ids still held in the store.

        A store error is logged, not raised: the next beat tries again (the holder stays alive in the store
        for :data:`~marsrag.liveness.EXECUTOR_SILENT_AFTER`, several beats).
        """
        run_ids = self.held()
        if not run_ids:
            return set()
        owner = self.owner
        try:
            beaten = self.store.heartbeat_runs(run_ids, owner)
        except MarsRAGError as error:
            log.warning("heartbeat of %d run(s) not recorded (the next beat tries again): %s", len(run_ids), error)
            return set()
        for run_id in set(run_ids) - beaten:
            # Finished a moment ago, or taken over: its executor learns it at its next write (HolderLostError).
            log.debug("run %s is no longer running under %s: not beaten", run_id, owner)
        return beaten

    def _beat(self) -> None:
        while True:
            with self._lock:
                if not self._held:
                    # Decided under the lock hold() takes: a run held from now on starts a new thread.
                    self._thread = None
                    return
            time.sleep(self.every)
            try:
                self.beat()
            except Exception:  # noqa: BLE001 - the thread must outlive any one beat, or the runs go silent
                log.exception("heartbeat failed (the next beat tries again)")
