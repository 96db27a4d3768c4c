"""The composition root: the one place that opens MarsRAG's parts from resolved :class:`Settings`.

From one ``Settings`` it opens the project config, the LLM, the store, the knowledge base, the event sinks,
the workflow runner and the run executor (this process's event loop or threads, or the job queue's workers
when a broker is set), and closes them in the reverse order. The CLI, ``marsrag serve`` and ``marsrag worker`` open the
runtime here and nowhere else; the library below never reads the environment or the settings file itself.

Importing this module stays cheap: CrewAI and SQLAlchemy load when a runner or knowledge base is opened.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

from marsrag.errors import InputError, StoreError
from marsrag.events.otel import otel_sink_from_env
from marsrag.events.sinks import EventSink, JsonlSink
from marsrag.llm.boundary import supports_async
from marsrag.llm.resilient import CallPolicy
from marsrag.llm.select import resolve_llm
from marsrag.queue.app import QueueSettings
from marsrag.queue.executor import CeleryRunExecutor
from marsrag.queue.worker import check_broker, run_worker
from marsrag.rag.embedders.base import Embedder
from marsrag.rag.embedders.select import resolve_embedder
from marsrag.rag.knowledge import KnowledgeBase
from marsrag.rag.report import IngestReport
from marsrag.rag.service import ingest_paths, knowledge_base
from marsrag.rag.support import SimilarityScale
from marsrag.runtime.async_executor import DEFAULT_CONCURRENCY, AsyncRunExecutor
from marsrag.runtime.executor import EXECUTOR_KINDS, ExecutorKind, RunExecutor, ThreadRunExecutor
from marsrag.runtime.feedback import record_feedback
from marsrag.settings import Settings
from marsrag.state import TaskProgress
from marsrag.store import open_store as open_store_at
from marsrag.store import still_holds
from marsrag.store.base import RunStore
from marsrag.tasks.loader import load_config
from marsrag.urls import mask
from marsrag.views.document import list_runs as list_runs_at
from marsrag.views.document import run_document
from marsrag.views.document import show_run as show_run_at

#: Told of each task's progress while a run executes (a live display); see ``WorkflowRunner.watchers``.
Watcher = Callable[[TaskProgress], object]

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    from pathlib import Path

    from marsrag.runtime.actions import Action
    from marsrag.runtime.runner import WorkflowRunner

__all__ = [
    "act_on_task",
    "follow_run",
    "ingest",
    "kept",
    "list_runs",
    "open_executor",
    "open_embedder",
    "open_knowledge_base",
    "open_llm",
    "open_runner",
    "open_sinks",
    "open_store",
    "rate_run",
    "resume_run",
    "run_goal",
    "run_worker_process",
    "show_run",
    "similarity_scale",
]


def open_llm(settings: Settings) -> Any:
    """The LLM the settings name (with the call policy every LLM gets).

    Raises:
        InputError: the replay file cannot be used, or a call-policy variable is not a usable number.
    """
    return resolve_llm(
        settings.llm,
        base_url=settings.base_url,
        policy=CallPolicy.from_settings(settings.llm_calls),
        structured_output=settings.structured_output,
        max_tokens=settings.llm_calls.max_tokens,
        stream=settings.llm_calls.stream,
    )


def open_embedder(settings: Settings) -> Embedder | None:
    """The embedder the settings name (None: ``none``, keyword search only).

    Raises:
        InputError: the setting names no embedder, or an endpoint's URL is missing or not an HTTP URL.
    """
    return resolve_embedder(settings.embedder, base_url=settings.embedder_url, api_key=settings.embedder_key)


def open_store(settings: Settings) -> RunStore:
    """The run store at the settings' URL, created and migrated as needed (a context manager: it closes).

    Raises:
        StoreError: a bad URL or an unreachable database.
    """
    return open_store_at(settings.db)


def open_knowledge_base(settings: Settings) -> AbstractContextManager[KnowledgeBase]:
    """The knowledge base in the settings' store database (a context manager: it closes).

    Raises:
        StoreError: a bad URL, or a database that cannot be reached or migrated.
    """
    return knowledge_base(settings.db, embedder=open_embedder(settings), scale=similarity_scale(settings))


def similarity_scale(settings: Settings) -> SimilarityScale | None:
    """The embedder's similarity scale the settings give (``similarity_scale``), else None (the known one)."""
    return SimilarityScale(*settings.similarity_scale) if settings.similarity_scale is not None else None


def ingest(
    settings: Settings, paths: Iterable[str | Path], *, progress: bool = True, collection: str | None = None
) -> IngestReport:
    """Ingest files and folders into the settings' knowledge base (see :func:`marsrag.rag.service.ingest_paths`).

    Raises:
        InputError: a path does not exist, or ``collection`` cannot name a collection.
        StoreError: a bad URL, or the database cannot be reached, migrated or written.
        EmbeddingError: the embedder failed (the files ingested before it stay ingested).
    """
    embedder = open_embedder(settings)
    return ingest_paths(paths, db=settings.db, progress=progress, collection=collection, embedder=embedder)


@contextmanager
def open_sinks(settings: Settings, extra: Sequence[EventSink] = ()) -> Iterator[list[EventSink]]:
    """The event sinks: ``events.jsonl`` in the data directory, OpenTelemetry when ``OTEL_*`` configures it, ``extra``.

    On exit the OpenTelemetry sink sends its batched records, even when the body raised.
    """
    otel = otel_sink_from_env()
    sinks: list[EventSink] = [JsonlSink(settings.data_dir / "events.jsonl"), *([otel] if otel else []), *extra]
    try:
        yield sinks
    finally:
        if otel is not None:
            otel.shutdown()


@contextmanager
def open_runner(
    settings: Settings,
    *,
    workflow: str | None = None,
    sinks: Sequence[EventSink] = (),
    watchers: Sequence[Watcher] = (),
) -> Iterator[WorkflowRunner]:
    """A workflow runner on the settings' project, LLM and store, with the configured sinks and ``sinks``, and
    ``watchers`` told of each task's progress (see :attr:`WorkflowRunner.watchers`).

    Checks come cheapest first (config, workflow name, LLM spec, database), so bad input is reported before
    anything is opened or stored. The knowledge base lives in the run store's database: the retrieval step
    searches it there.

    Raises:
        ConfigError, InputError, StoreError: bad config, workflow, LLM spec or database.
    """
    from marsrag.runtime.runner import WorkflowRunner  # lazy: CrewAI

    project = load_config(settings.config)
    if workflow is not None:
        project.workflow(workflow)
    model = open_llm(settings)
    embedder = open_embedder(settings)
    with open_sinks(settings, sinks) as opened, open_store(settings) as store:
        retriever = KnowledgeBase(store, embedder=embedder, scale=similarity_scale(settings))
        yield WorkflowRunner(store, project, model, sinks=opened, retriever=retriever, watchers=watchers)


def open_executor(
    runner: WorkflowRunner,
    settings: Settings,
    *,
    threads: int = 2,
    executor: ExecutorKind = "auto",
    concurrency: int = DEFAULT_CONCURRENCY,
) -> RunExecutor:
    """The executor for ``runner``: the job queue's workers when the settings name a broker, else this process's.

    In this process, ``executor`` chooses: ``async`` runs up to ``concurrency`` runs as tasks on one event loop
    (:class:`AsyncRunExecutor`, waiting on the LLM without a thread each), ``thread`` runs ``threads`` at once
    on threads (:class:`ThreadRunExecutor`), ``auto`` is ``async`` when the runner's LLM answers ``acall``
    itself (:func:`supports_async`: CrewAI's LLMs, the composer, the replay LLM), else ``thread``.

    Raises:
        InputError: the broker URL is not one the queue can use, or ``executor`` is not a known kind.
    """
    if settings.broker:
        return CeleryRunExecutor(QueueSettings.from_settings(settings))
    if executor not in EXECUTOR_KINDS:
        raise InputError(f"unknown executor {executor!r}: expected one of {', '.join(EXECUTOR_KINDS)}")
    from marsrag.runtime.actions import apply_action  # lazy: CrewAI

    def act(action: Action, run_id: str, task_id: str) -> Any:
        return apply_action(runner, action, run_id, task_id)

    # resume executes a pending run from its start and a stale one from its last committed task.
    if executor == "async" or (executor == "auto" and supports_async(runner.llm)):
        return AsyncRunExecutor(runner.aresume, act, concurrency, stopping=runner.stopping)
    return ThreadRunExecutor(runner.resume, act, threads, stopping=runner.stopping)


def run_worker_process(settings: Settings, *, concurrency: int = 1) -> None:
    """``marsrag worker``: open the runtime and execute the queue's jobs on it until stopped.

    Raises:
        InputError: no broker, or a queue setting that is not usable (checked before anything is opened).
        QueueUnavailableError: the broker cannot be reached (checked within a few seconds, before the runtime opens).
        ConfigError, StoreError: bad config, LLM spec or database (nothing starts).
    """
    if not settings.broker:
        raise InputError("no broker: give --broker redis://host:6379/0 or set MARSRAG_BROKER")
    queue = QueueSettings.from_settings(settings)
    check_broker(queue.broker)
    with open_runner(settings) as runner:
        run_worker(runner, queue, concurrency=concurrency)


def run_goal(
    settings: Settings,
    goal: str,
    *,
    workflow: str | None = None,
    session: str | None = None,
    sinks: Sequence[EventSink] = (),
    collections: Sequence[str] | None = None,
    watchers: Sequence[Watcher] = (),
) -> dict[str, Any]:
    """Run a workflow for a goal and return the run document (as ``runs show`` prints it).

    ``collections``: the knowledge base collections its retrieval keeps to (default: the workflow's, else all).

    Raises:
        ConfigError, InputError, StoreUnavailableError: bad config, workflow, LLM spec, collection or database
            (nothing is run).
        StoreError: the store failed during the run, or no longer holds it after (see :func:`kept`).
    """
    with open_runner(settings, workflow=workflow, sinks=sinks, watchers=watchers) as runner:
        _warn_when_empty(settings, runner.store)
        record = runner.run(goal, workflow=workflow, session_id=session, collections=collections)
        return kept(settings, run_document(runner.store, record.run_id))


def _warn_when_empty(settings: Settings, store: RunStore) -> None:
    """Warn (the CLI prints it on one line) that a run will find nothing: the knowledge base holds no document."""
    if store.knowledge().term_counts(()).chunks:
        return
    how = "marsrag ingest" if settings.knowledge is not None else "marsrag ingest PATH"
    logger.warning(
        "the knowledge base is empty (%s): answers will say it does not cover the goal; add documents with %s",
        settings.where(brief=True),
        how,
    )


def resume_run(
    settings: Settings, run_id: str, *, sinks: Sequence[EventSink] = (), watchers: Sequence[Watcher] = ()
) -> dict[str, Any]:
    """Finish a stopped run (``run_id``: its id or a unique prefix) without redoing its committed tasks.

    Returns its run document.

    Raises:
        RunNotFoundError: no such run (AmbiguousRunIdError: the prefix starts several).
        ConfigError, InputError, StoreError: bad config, LLM spec or database.
    """
    with open_runner(settings, sinks=sinks, watchers=watchers) as runner:
        # An unknown or ambiguous id is an error before anything else.
        record = runner.resume(runner.store.resolve_run_id(run_id))
        return kept(settings, run_document(runner.store, record.run_id))


def follow_run(
    settings: Settings,
    run_id: str,
    *,
    workflow: str | None = None,
    goal: str | None = None,
    sinks: Sequence[EventSink] = (),
    watchers: Sequence[Watcher] = (),
) -> dict[str, Any]:
    """Follow a run's next action (``run_id``: its id or a unique prefix): the next run of its session.

    The workflow is ``workflow`` when given, else the one the final loop routed to when it is registered,
    else the followed run's. ``goal``, when given and not the next action itself, is the user's edit of it
    (an ``edited`` follow; see :meth:`WorkflowRunner.start_follow`). Records ``loop.action.followed`` on the
    followed run.

    Raises:
        RunNotFoundError: no such run (AmbiguousRunIdError: the prefix starts several).
        InputError: the run has no loop to follow, or ``goal`` breaks the goal rules.
    """
    with open_runner(settings, workflow=workflow, sinks=sinks, watchers=watchers) as runner:
        record = runner.follow(runner.store.resolve_run_id(run_id), workflow=workflow, goal=goal)
        return kept(settings, run_document(runner.store, record.run_id))


def rate_run(settings: Settings, run_id: str, *, on: str, rating: str, comment: str | None = None) -> dict[str, Any]:
    """Record a rating of a run's answer or next action (``run_id``: its id or a unique prefix); the stored event.

    The event goes to the configured sinks too (``events.jsonl``, OpenTelemetry).

    Raises:
        RunNotFoundError: no such run (AmbiguousRunIdError: the prefix starts several).
        InputError: a bad ``on``, ``rating`` or comment; ActionConflictError: the run has not finished, or
            has no next action to rate (see :func:`marsrag.runtime.feedback.record_feedback`).
    """
    with open_sinks(settings) as sinks, open_store(settings) as store:
        event = record_feedback(store, store.resolve_run_id(run_id), on=on, rating=rating, comment=comment, sinks=sinks)
        return event.to_dict()


def act_on_task(settings: Settings, action: str, run_id: str, task_id: str) -> dict[str, Any]:
    """Run an operator action (``repair`` or ``regenerate``) on a stored task; return the run document.

    ``run_id`` is the run's id or a unique prefix of it.

    Raises:
        RunNotFoundError, TaskNotFoundError: no such run or task (AmbiguousRunIdError: the prefix starts several).
        ActionConflictError: the action does not apply to the task (valid, no contract, run still executing).
    """
    from marsrag.runtime.actions import apply_action  # lazy: CrewAI

    with open_runner(settings) as runner:
        run_id = runner.store.resolve_run_id(run_id)
        apply_action(runner, "repair" if action == "repair" else "regenerate", run_id, task_id)
        return kept(settings, run_document(runner.store, run_id))


def kept(settings: Settings, document: dict[str, Any]) -> dict[str, Any]:
    """``document`` when the settings' store, read afresh, holds its run (else its state was not kept).

    Raises:
        StoreError: the store no longer has the run, e.g. its SQLite file was removed while the run went on
            (the open connections kept writing to the removed file).
    """
    if not still_holds(settings.db, document["run_id"]):
        raise StoreError(
            f"run {document['run_id']} ended {document['status']}, but its state could not be kept: "
            f"{mask(settings.db)} no longer holds it (was the database removed or replaced meanwhile?)"
        )
    return document


def list_runs(settings: Settings, *, limit: int | None = None) -> list[dict[str, Any]]:
    """The ``runs list`` rows, newest first, each with its ``short_id`` (a unique prefix every command accepts)."""
    return list_runs_at(db=settings.db, limit=limit)


def show_run(settings: Settings, run_id: str) -> dict[str, Any]:
    """The run document of one run (``run_id``: its id or a unique prefix).

    Raises:
        RunNotFoundError: no such run (AmbiguousRunIdError: the prefix starts several).
    """
    return show_run_at(db=settings.db, run_id=run_id)
