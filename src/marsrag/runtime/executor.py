"""Where stored runs execute once started: the seam between starting a run and running it.

A web request starts a run (a ``pending`` row) and returns at once; an executor runs it. This process's
thread pool is the embedded default; a queue of workers plugs in behind the same interface.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol


class RunExecutor(Protocol):
    """Executes stored runs in the background."""

    def submit(self, run_id: str) -> None:
        """Queue a stored ``pending`` run for execution; returns at once."""
        ...

    def shutdown(self) -> None:
        """Stop taking runs; wait for the ones executing."""
        ...


class ThreadRunExecutor:
    """Executes runs on a pool of threads in this process (a run that never finishes is found stale later)."""

    def __init__(self, execute: Callable[[str], Any], threads: int = 2) -> None:
        self._execute = execute
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="marsrag-run")
        self._pending: set[Future[Any]] = set()
        self._lock = threading.Lock()

    def submit(self, run_id: str) -> None:
        """Queue a stored run; returns at once."""
        future = self._pool.submit(self._execute, run_id)
        with self._lock:
            self._pending.add(future)
        future.add_done_callback(self._done)

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
