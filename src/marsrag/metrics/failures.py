"""The latest contract failures: task states whose validation ended ``failed`` or ``partial``, newest first.

One SQL query (SQLAlchemy Core over the store's tables, on SQLite and PostgreSQL) finds the tasks, joined to
their runs for the goal and workflow; a second one, only for tasks whose stored validation has no error list,
reads the errors of their latest attempt that has any. The window and workflow filters are the metrics' own:
runs created in the window, of that workflow.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote

from sqlalchemy import Engine, select

from marsrag.metrics.compute import run_filters
from marsrag.metrics.window import Window
from marsrag.store._rows import from_db
from marsrag.store.schema import attempts, runs, task_states

#: The validation statuses that count as a failure here.
FAILED_STATUSES = ("failed", "partial")


@dataclass(frozen=True)
class Failure:
    """One failed or partial task: where it is, what the run was for, and its first error message."""

    run_id: str
    task_id: str
    position: int
    status: str
    workflow: str
    goal: str
    run_status: str
    created_at: datetime
    message: str | None

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
    engine: Engine, limit: int = 20, window: Window | None = None, workflow: str | None = None
) -> list[Failure]:
    """The ``limit`` most recent failed or partial tasks of runs created in ``window``, optionally one workflow.

    Newest first by the task state's time (then the run's, then the task's position, for a stable order).
    """
    if limit <= 0:
        return []
    window = window or Window()
    statement = (
        select(
            task_states.c.run_id,
            task_states.c.task_id,
            task_states.c.position,
            task_states.c.validation_status,
            task_states.c.validation_errors,
            task_states.c.created_at,
            runs.c.workflow,
            runs.c.goal,
            runs.c.status.label("run_status"),
        )
        .select_from(task_states.join(runs, runs.c.run_id == task_states.c.run_id))
        .where(task_states.c.validation_status.in_(FAILED_STATUSES), *run_filters(window, workflow))
        .order_by(
            task_states.c.created_at.desc(),
            runs.c.created_at.desc(),
            task_states.c.run_id,
            task_states.c.position,
        )
        .limit(limit)
    )
    with engine.connect() as connection:
        rows = list(connection.execute(statement).mappings())
        without = sorted({row["run_id"] for row in rows if not _first_message(row["validation_errors"])})
        fallback = _attempt_messages(connection, without) if without else {}
    return [
        Failure(
            run_id=row["run_id"],
            task_id=row["task_id"],
            position=int(row["position"]),
            status=row["validation_status"],
            workflow=row["workflow"],
            goal=row["goal"],
            run_status=row["run_status"],
            created_at=from_db(row["created_at"]),
            message=_first_message(row["validation_errors"]) or fallback.get((row["run_id"], row["task_id"])),
        )
        for row in rows
    ]


def _first_message(errors: Any) -> str | None:
    """The first error's message from a stored error list (``[{field, code, message}, ...]``)."""
    if not isinstance(errors, list):
        return None
    for issue in errors:
        if isinstance(issue, dict) and issue.get("message"):
            return str(issue["message"])
    return None


def _attempt_messages(connection: Any, run_ids: list[str]) -> dict[tuple[str, str], str]:
    """Per (run, task) of these runs: the first error of the latest attempt that recorded errors."""
    statement = (
        select(attempts.c.run_id, attempts.c.task_id, attempts.c.errors)
        .where(attempts.c.run_id.in_(run_ids))
        .order_by(attempts.c.run_id, attempts.c.task_id, attempts.c.number.desc())
    )
    found: dict[tuple[str, str], str] = {}
    for row in connection.execute(statement).mappings():
        key = (row["run_id"], row["task_id"])
        if key not in found:
            message = _first_message(row["errors"])
            if message:
                found[key] = message
    return found
