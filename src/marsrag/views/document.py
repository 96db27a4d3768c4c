"""The run document: one JSON-ready view of a run, shared by ``runs show``, ``run --format json`` and the API.

Both the document and the ``runs list`` rows carry the run's ``outcome`` (how many of its tasks ended valid,
partial, failed or skipped) beside its ``status`` (whether it finished), and the ``experiment`` and ``arm`` its
session was assigned (null outside an experiment). :func:`list_runs` and :func:`show_run` read them from a store
URL, for ``marsrag runs list`` and ``runs show``: they need the store and nothing of the runtime, so those commands
start without it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from marsrag.liveness import is_stale
from marsrag.state import RunRecord
from marsrag.store import open_store
from marsrag.store.base import RunStore
from marsrag.views.outcome import task_outcome


def run_summary_row(run: RunRecord, outcome: Mapping[str, int]) -> dict[str, Any]:
    """One row of ``runs list``; ``stale`` marks a run left pending or running by a process that is gone."""
    return {
        "run_id": run.run_id,
        "session_id": run.session_id,
        "goal": run.goal,
        "workflow": run.workflow,
        "status": run.status,
        "created_at": run.created_at.isoformat(),
        "experiment": run.experiment,
        "arm": run.arm,
        "stale": is_stale(run),
        "outcome": dict(outcome),
    }


def run_rows(store: RunStore, runs: Sequence[RunRecord]) -> list[dict[str, Any]]:
    """The ``runs list`` rows of ``runs`` (the CLI's and the API's), outcomes and short ids read in one query each.

    Each row's ``short_id`` is its run id's shortest unique prefix (at least 8 characters): every command
    that takes a run id accepts it.
    """
    ids = [run.run_id for run in runs]
    outcomes = store.task_outcomes(ids)
    short = store.short_run_ids(ids)
    return [{**run_summary_row(run, outcomes[run.run_id]), "short_id": short[run.run_id]} for run in runs]


def run_document(store: RunStore, run_id: str) -> dict[str, Any]:
    """A run with its task states (spec section 4 shape plus attempts), transitions, events and outcome.

    Raises:
        RunNotFoundError: no such run.
    """
    run, states, stored_transitions = store.read_run(run_id)
    tasks = [task.model_dump(mode="json") for task in states]
    transitions = [transition.model_dump(mode="json") for transition in stored_transitions]
    return {
        "run_id": run.run_id,
        "session_id": run.session_id,
        "goal": run.goal,
        "workflow": run.workflow,
        "loop_mode": run.loop_mode,
        "experiment": run.experiment,
        "arm": run.arm,
        "collections": run.collections,
        "status": run.status,
        "status_reason": run.status_reason,
        "summary": run.summary,
        "created_at": run.created_at.isoformat(),
        "outcome": task_outcome(task.validation.status for task in states),
        "tasks": tasks,
        "transitions": transitions,
        "events": [event.to_dict() for event in store.get_events(run_id)],
    }


def list_runs(*, db: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
    """The ``runs list`` rows of the store at ``db``, newest first (see :func:`run_rows`).

    Raises:
        StoreError: the store cannot be opened.
    """
    with open_store(db) as store:
        return run_rows(store, store.list_runs(limit=limit))


def show_run(*, db: str | None = None, run_id: str) -> dict[str, Any]:
    """The run document of one run of the store at ``db`` (``run_id``: its id or a unique prefix).

    Raises:
        RunNotFoundError: no such run (AmbiguousRunIdError: the prefix starts several).
        StoreError: the store cannot be opened.
    """
    with open_store(db) as store:
        return run_document(store, store.resolve_run_id(run_id))


__all__ = ["list_runs", "run_document", "run_rows", "run_summary_row", "show_run"]
