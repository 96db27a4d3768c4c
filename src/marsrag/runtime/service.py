"""Library functions behind the run commands: each takes the same keyword arguments as its CLI flags."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from marsrag.paths import data_dir


def _open(db: str | None) -> Any:
    from marsrag.store import open_store

    return open_store(db)


def run_goal(
    goal: str,
    *,
    workflow: str | None = None,
    config: str | Path | None = None,
    llm: str | None = None,
    db: str | None = None,
    session: str | None = None,
    base_url: str | None = None,
) -> dict[str, Any]:
    """Run a workflow for a goal and return the run document (as ``runs show`` prints it).

    Raises:
        ConfigError, InputError, StoreError: bad config, LLM spec or database (nothing is run).
    """
    from marsrag.events.sinks import JsonlSink
    from marsrag.llm.select import resolve_llm
    from marsrag.runtime.runner import WorkflowRunner
    from marsrag.runtime.views import run_document
    from marsrag.tasks.loader import load_config

    project = load_config(config)
    project.workflow(workflow)  # a bad workflow name is an error before anything is stored
    model = resolve_llm(llm, base_url=base_url)
    with _open(db) as store:
        runner = WorkflowRunner(store, project, model, sinks=[JsonlSink(data_dir() / "events.jsonl")])
        record = runner.run(goal, workflow=workflow, session_id=session)
        return run_document(store, record.run_id)


def list_runs(*, db: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
    """The ``runs list`` rows, newest first."""
    from marsrag.runtime.views import run_summary_row

    with _open(db) as store:
        return [run_summary_row(run) for run in store.list_runs(limit=limit)]


def show_run(run_id: str, *, db: str | None = None) -> dict[str, Any]:
    """The run document of one run.

    Raises:
        RunNotFoundError: no such run.
    """
    from marsrag.runtime.views import run_document

    with _open(db) as store:
        return run_document(store, run_id)
