"""Library functions behind the run commands: each takes the same keyword arguments as its CLI flags."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from marsrag.paths import data_dir


def _open(db: str | None) -> Any:
    from marsrag.store import open_store

    return open_store(db)


@contextmanager
def open_runner(
    config: str | Path | None,
    llm: str | None,
    db: str | None,
    base_url: str | None,
    workflow: str | None = None,
    progress: bool = False,
) -> Iterator[Any]:
    """A workflow runner on the project, LLM and store given, with the configured event sinks.

    Checks come cheapest first (config, workflow name, LLM spec, database), so bad input is reported before
    anything is opened or stored.
    """
    from marsrag.events.otel import otel_sink_from_env
    from marsrag.events.sinks import EventSink, JsonlSink
    from marsrag.llm.select import resolve_llm
    from marsrag.runtime.runner import WorkflowRunner
    from marsrag.tasks.loader import load_config

    project = load_config(config)
    if workflow is not None:
        project.workflow(workflow)
    model = resolve_llm(llm, base_url=base_url)
    otel = otel_sink_from_env()
    sinks: list[EventSink] = [JsonlSink(data_dir() / "events.jsonl"), *([otel] if otel is not None else [])]
    if progress:
        from marsrag.render_text import ProgressSink

        sinks.append(ProgressSink())
    from marsrag.rag.knowledge import KnowledgeBase

    try:
        with _open(db) as store:
            # The knowledge base lives in the run store's database: the retrieval step searches it there.
            yield WorkflowRunner(store, project, model, sinks=sinks, retriever=KnowledgeBase(store.engine))
    finally:
        if otel is not None:
            otel.shutdown()  # sends the batched records before the CLI exits, even when the run raised


def run_goal(
    goal: str,
    *,
    workflow: str | None = None,
    config: str | Path | None = None,
    llm: str | None = None,
    db: str | None = None,
    session: str | None = None,
    base_url: str | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Run a workflow for a goal and return the run document (as ``runs show`` prints it).

    Raises:
        ConfigError, InputError, StoreError: bad config, workflow, LLM spec or database (nothing is run).
    """
    from marsrag.views.document import run_document

    with open_runner(config, llm, db, base_url, workflow, progress) as runner:
        record = runner.run(goal, workflow=workflow, session_id=session)
        return run_document(runner.store, record.run_id)


def resume_run(
    run_id: str,
    *,
    config: str | Path | None = None,
    llm: str | None = None,
    db: str | None = None,
    base_url: str | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Finish a stopped run without redoing its committed tasks; return its run document.

    Raises:
        RunNotFoundError: no such run.
        ConfigError, InputError, StoreError: bad config, LLM spec or database.
    """
    from marsrag.views.document import run_document

    with open_runner(config, llm, db, base_url, progress=progress) as runner:
        runner.store.get_run(run_id)  # an unknown id is an error before anything else
        record = runner.resume(run_id)
        return run_document(runner.store, record.run_id)


def follow_run(
    run_id: str,
    *,
    workflow: str | None = None,
    config: str | Path | None = None,
    llm: str | None = None,
    db: str | None = None,
    base_url: str | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Follow a run's next action: start the next run of its session with its final loop as the goal.

    The workflow is ``workflow`` when given, else the one the final loop routed to when it is registered,
    else the followed run's. Records ``loop.action.followed`` on the followed run.

    Raises:
        RunNotFoundError: no such run.
        InputError: the run has no loop to follow.
    """
    from marsrag.views.document import run_document

    with open_runner(config, llm, db, base_url, workflow, progress) as runner:
        record = runner.follow(run_id, workflow=workflow)
        return run_document(runner.store, record.run_id)


def act_on_task(
    action: str,
    run_id: str,
    task_id: str,
    *,
    config: str | Path | None = None,
    llm: str | None = None,
    db: str | None = None,
    base_url: str | None = None,
) -> dict[str, Any]:
    """Run an operator action (``repair`` or ``regenerate``) on a stored task; return the run document.

    Raises:
        RunNotFoundError, TaskNotFoundError: no such run or task.
        ActionConflictError: the action does not apply to the task (valid, no contract, run still executing).
    """
    from marsrag.runtime.actions import apply_action
    from marsrag.views.document import run_document

    with open_runner(config, llm, db, base_url) as runner:
        apply_action(runner, "repair" if action == "repair" else "regenerate", run_id, task_id)
        return run_document(runner.store, run_id)


def list_runs(*, db: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
    """The ``runs list`` rows, newest first."""
    from marsrag.views.document import run_rows

    with _open(db) as store:
        return run_rows(store, store.list_runs(limit=limit))


def show_run(run_id: str, *, db: str | None = None) -> dict[str, Any]:
    """The run document of one run.

    Raises:
        RunNotFoundError: no such run.
    """
    from marsrag.views.document import run_document

    with _open(db) as store:
        return run_document(store, run_id)
