"""A run as it happens: the task updates a viewer has not seen yet, for the API's event stream and the terminal.

A viewer holds a :class:`Cursor`: how many of the run's committed tasks it has seen, and the last progress
number (:meth:`marsrag.store.RunStore.save_progress`) it has seen. :func:`poll` reads the run once and returns the
updates after the cursor, each with the cursor that follows it, so a viewer that reconnects with the last one
it got (an ``EventSource``'s ``Last-Event-ID``) gets every update it missed and none twice:

- a committed task, as ``runs show --format json`` shows it (its final state), once, in workflow order;
- a task being written, as the same JSON with ``validation.status`` ``"in_progress"``, the sections seen so far
  in ``loop_output`` (null for those not reached) and a ``progress`` object (the section being written, chunks,
  characters, which request, when it started); only its latest state: progress writes a viewer did not see
  are superseded by the later ones, never lost in between;
- the run's end (``completed`` or ``failed``), after its last task.

Reads only the store, so the run may be executing in any process (a ``serve``, a Celery worker).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final, Literal

from marsrag.contract import FIELDS
from marsrag.state import TaskProgress
from marsrag.store.base import RunStore
from marsrag.views.outcome import task_outcome

__all__ = ["FINISHED", "IN_PROGRESS", "Cursor", "LiveUpdate", "Poll", "poll", "progress_task"]

#: The ``validation.status`` of a task whose answer is still being written.
IN_PROGRESS: Final = "in_progress"
#: Run statuses after which nothing more happens to a run's tasks.
FINISHED: Final = frozenset({"completed", "failed"})
_CURSOR: Final = re.compile(r"(\d{1,9})-(\d{1,18})")


@dataclass(frozen=True, order=True)
class Cursor:
    """What a viewer has seen of a run: its first ``tasks`` committed tasks, its progress up to number ``progress``."""

    tasks: int = 0
    progress: int = 0

    def __str__(self) -> str:
        return f"{self.tasks}-{self.progress}"

    @classmethod
    def parse(cls, text: str | None) -> Cursor:
        """The cursor an event id names (``"2-17"``); anything else (none, garbage) is the start of the run."""
        match = _CURSOR.fullmatch((text or "").strip())
        return cls(int(match[1]), int(match[2])) if match else cls()


@dataclass(frozen=True)
class LiveUpdate:
    """One update: its kind (``task`` or ``end``), its JSON data, and the cursor that follows it (its event id)."""

    kind: Literal["task", "end"]
    data: dict[str, Any]
    cursor: Cursor


@dataclass(frozen=True)
class Poll:
    """What one read of a run gave: the updates after the cursor, the cursor after them, whether the run ended."""

    updates: list[LiveUpdate]
    cursor: Cursor
    finished: bool


def progress_task(progress: TaskProgress) -> dict[str, Any]:
    """A task being written as task JSON: ``validation.status`` ``in_progress`` and a ``progress`` object."""
    return {
        "run_id": progress.run_id,
        "task_id": progress.task_id,
        "position": progress.position,
        "validation": {"status": IN_PROGRESS, "errors": []},
        "loop_output": {name: progress.sections.get(name) for name in FIELDS},
        "progress": {
            "writing": progress.writing,
            "call": progress.call,
            "chunks": progress.chunks,
            "chars": progress.chars,
            "seq": progress.seq,
            "started_at": progress.started_at.isoformat(),
            "updated_at": progress.updated_at.isoformat(),
        },
    }


def poll(store: RunStore, run_id: str, cursor: Cursor) -> Poll:
    """The updates of run ``run_id`` after ``cursor`` (see the module), from one read of the run and its progress.

    Raises:
        RunNotFoundError: no such run.
    """
    run, states, _ = store.read_run(run_id)
    # Read after the tasks: a task committed in between shows as progress now and as its final state next time.
    progress = store.progress_since(run_id, cursor.progress)
    updates: list[LiveUpdate] = []
    seen_tasks, seen_progress = cursor.tasks, cursor.progress
    for seen_tasks, state in enumerate(states[cursor.tasks :], start=cursor.tasks + 1):
        updates.append(LiveUpdate("task", state.model_dump(mode="json"), Cursor(seen_tasks, seen_progress)))
    committed = len(states)
    for item in progress:
        seen_progress = max(seen_progress, item.seq)
        if item.position < committed:
            continue  # its final state is sent (or was): the progress is superseded
        updates.append(LiveUpdate("task", progress_task(item), Cursor(seen_tasks, seen_progress)))
    after = Cursor(seen_tasks, seen_progress)
    finished = run.status in FINISHED
    if finished:
        outcome = task_outcome(state.validation.status for state in states)
        updates.append(LiveUpdate("end", {"run_id": run.run_id, "status": run.status, "outcome": outcome}, after))
    return Poll(updates, after, finished)
