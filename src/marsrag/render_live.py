"""The terminal's view of a run as it executes: a Rich live line on stderr (``marsrag run``, ``resume``, ``follow``).

:class:`RunProgress` is both an event sink (a line per task validated and per handoff, as
:class:`marsrag.render_text.ProgressSink` prints them) and a progress watcher of the runner
(:attr:`marsrag.runtime.runner.WorkflowRunner.watchers`): below those lines, one live line says which task is
being answered, which section the model is writing, how many chunks (about tokens) it has written and for how
long. The live line is drawn only when stderr is a terminal, and cleared when the run ends; stdout carries the
final result alone.
"""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import Any

from rich.console import Console, RenderableType
from rich.live import Live
from rich.spinner import Spinner

from marsrag.render_text import ProgressSink, shown
from marsrag.state import TaskProgress

__all__ = ["RunProgress"]


class RunProgress(ProgressSink):
    """Progress lines and, on a terminal, a live line for the task being answered (a context manager)."""

    def __init__(self, console: Console | None = None) -> None:
        super().__init__()
        if console is not None:
            self._console = console
        self._lock = threading.Lock()
        self._task: TaskProgress | None = None
        self._since = time.monotonic()
        self._live: Live | None = None
        if self._console.is_terminal:
            self._live = Live(
                _Line(self), console=self._console, transient=True, refresh_per_second=8, redirect_stderr=False
            )

    def __enter__(self) -> RunProgress:
        if self._live is not None:
            self._live.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._live is not None:
            self._live.stop()

    def watch(self, progress: TaskProgress) -> None:
        """The runner's news of the task being answered (a start with no chunk, then what it has written)."""
        with self._lock:
            if self._task is None or (self._task.run_id, self._task.position) != (progress.run_id, progress.position):
                self._since = time.monotonic()
            self._task = progress

    def line(self) -> RenderableType:
        """The live line now: the task, the section being written, chunks so far and the time spent on the task."""
        with self._lock:
            task, elapsed = self._task, time.monotonic() - self._since
        if task is None:
            return shown("starting…", "dim")
        parts = [f"{task.position + 1}. {task.task_id}"]
        if task.chunks == 0:
            parts.append("waiting for the model")
        else:
            parts.append(f"writing {task.writing.upper()}" if task.writing else "writing")
            parts.append(f"{task.chunks} tokens")
        if task.call > 1:
            parts.append(f"request {task.call}")
        parts.append(f"{elapsed:.0f} s")
        return Spinner("dots", shown(" · ".join(parts), "dim"))


class _Line:
    """What the live display redraws: the line of its :class:`RunProgress` at each refresh."""

    def __init__(self, progress: RunProgress) -> None:
        self._progress = progress

    def __rich__(self) -> Any:
        return self._progress.line()
