"""The knowledge base's gaps: the latest runs whose first task's retrieval did not support it (support ``none``).

What users ask that the knowledge base lacks, beside ``unsupported_rate`` on the dashboard. The store finds them
(:meth:`marsrag.store.RunStore.unsupported_goals`: newest run first, with the words asked that the best passage
did not have); this module adds the link to the run's page. The window and workflow filters are the metrics'
own: runs created in the window, of that workflow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from marsrag.metrics.window import Window
from marsrag.store import RunStore, UnsupportedGoal


@dataclass(frozen=True)
class Gap(UnsupportedGoal):
    """One unsupported goal as the dashboard shows it: the store's record, and its link."""

    @property
    def link(self) -> str:
        """The run's first task on its page: ``/runs/{run_id}#task-{task_id}`` (ids percent-encoded)."""
        return f"/runs/{quote(self.run_id, safe='')}#task-{quote(self.task_id, safe='')}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record (``created_at`` as ISO 8601, plus the ``link``)."""
        return {
            "run_id": self.run_id,
            "task_id": self.task_id,
            "workflow": self.workflow,
            "goal": self.goal,
            "run_status": self.run_status,
            "created_at": self.created_at.isoformat(),
            "missing": list(self.missing),
            "link": self.link,
        }


def latest_gaps(
    store: RunStore, limit: int = 10, window: Window | None = None, workflow: str | None = None
) -> list[Gap]:
    """The ``limit`` most recent runs of ``window`` (of ``workflow``) whose first task's support was ``none``."""
    if limit <= 0:
        return []
    window = window or Window()
    found = store.unsupported_goals(limit=limit, since=window.since, until=window.until, workflow=workflow)
    return [Gap(**vars(row)) for row in found]
