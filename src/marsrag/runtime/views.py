"""The run document: one JSON-ready view of a run, shared by ``runs show``, ``run --format json`` and the API."""

from __future__ import annotations

from typing import Any

from marsrag.runtime.liveness import is_stale
from marsrag.state import RunRecord
from marsrag.store.base import RunStore


def run_summary_row(run: RunRecord) -> dict[str, Any]:
    """One row of ``runs list``; ``stale`` marks a run left running by a process that is gone."""
    return {
        "run_id": run.run_id,
        "session_id": run.session_id,
        "goal": run.goal,
        "workflow": run.workflow,
        "status": run.status,
        "created_at": run.created_at.isoformat(),
        "stale": is_stale(run),
    }


def run_document(store: RunStore, run_id: str) -> dict[str, Any]:
    """A run with its task states (spec section 4 shape plus attempts), transitions and events.

    Raises:
        RunNotFoundError: no such run.
    """
    run = store.get_run(run_id)
    tasks = [task.model_dump(mode="json") for task in store.get_tasks(run_id)]
    transitions = [transition.model_dump(mode="json") for transition in store.get_transitions(run_id)]
    return {
        "run_id": run.run_id,
        "session_id": run.session_id,
        "goal": run.goal,
        "workflow": run.workflow,
        "loop_mode": run.loop_mode,
        "status": run.status,
        "status_reason": run.status_reason,
        "summary": run.summary,
        "created_at": run.created_at.isoformat(),
        "tasks": tasks,
        "transitions": transitions,
        "events": [event.to_dict() for event in store.get_events(run_id)],
    }
