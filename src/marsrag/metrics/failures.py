"""The latest contract failures: task states whose validation ended ``failed`` or ``partial``, newest first.

The store finds them (:meth:`marsrag.store.RunStore.task_failures`: the tasks joined to their runs for the goal
and workflow, with the first error of their validation or of their latest attempt); this module adds the link
to the task's run page. The window and workflow filters are the metrics' own: runs created in the window, of
that workflow. The status is the task's stored one, the same ``marsrag runs show`` reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from marsrag.metrics.window import Window
from marsrag.store import RunStore, TaskFailure

#: The validation statuses that count as a failure here.
FAILED_STATUSES = ("failed", "partial")


@dataclass(frozen=True)
class Failure(TaskFailure):
    """One failed or partial task as the dashboard and the review show it: the store's record, and its link."""

    @property
    def link(self) -> str:
        """The task on its run page: ``/runs/{run_id}#task-{task_id}`` (ids percent-encoded)."""
        return f"/runs/{quote(self.run_id, safe='')}#task-{quote(self.task_id, safe='')}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record (``created_at`` as ISO 8601, plus the ``link``)."""
        return {
            "run_id": self.run_id,
            "task_id": self.task_id,
            "position": self.position,
            "status": self.status,
            "workflow": self.workflow,
            "goal": self.goal,
            "run_status": self.run_status,
            "created_at": self.created_at.isoformat(),
            "message": self.message,
            "link": self.link,
        }


def latest_failures(
    store: RunStore, limit: int = 20, window: Window | None = None, workflow: str | None = None
) -> list[Failure]:
    """The ``limit`` most recent failed or partial tasks of runs created in ``window``, optionally one workflow.

    Newest first by the task state's time (then the run's, then the task's position, for a stable order).
    """
    if limit <= 0:
        return []
    window = window or Window()
    found = store.task_failures(limit=limit, since=window.since, until=window.until, workflow=workflow)
    return [Failure(**vars(row)) for row in found]
