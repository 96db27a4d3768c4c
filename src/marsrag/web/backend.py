"""What the routes call: one server process's store, runner and run executor, over the library.

Every operation here is a library call; the routes only parse requests and render what comes back.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import ExitStack
from typing import Any

from marsrag.chain.planner import asked_before
from marsrag.compose import open_executor, open_runner
from marsrag.errors import AlreadyFollowedError
from marsrag.rag.manage import KnowledgeListing, list_knowledge
from marsrag.runtime.actions import Action
from marsrag.runtime.commit import record_events
from marsrag.runtime.executor import RunExecutor
from marsrag.runtime.feedback import record_feedback
from marsrag.runtime.recovery import Sweeper
from marsrag.runtime.runner import WorkflowRunner
from marsrag.state import LoopEvent, RunRecord, TaskState
from marsrag.store.base import RunStore
from marsrag.tasks.config import ProjectConfig
from marsrag.tracing import semconv
from marsrag.tracing.spans import submitting
from marsrag.views.ask import WorkflowChoice, answering_llm, workflow_choices
from marsrag.views.document import run_document, run_rows
from marsrag.views.viewmodel import RunView, read_run_view, run_view
from marsrag.web.settings import WebSettings

log = logging.getLogger(__name__)


class Backend:
    """The store, runner and executor of one server process (stateless across processes: all state is stored).

    Raises (on construction):
        ConfigError, InputError, StoreError: bad config, LLM spec or database (the server does not start).
    """

    def __init__(self, settings: WebSettings) -> None:
        self.settings = settings
        self._stack = ExitStack()
        try:
            self.runner: WorkflowRunner = self._stack.enter_context(open_runner(settings.settings))
            self.executor: RunExecutor = open_executor(
                self.runner,
                settings.settings,
                threads=settings.run_threads,
                executor=settings.executor,
                concurrency=settings.concurrent_runs,
            )
            workflows = self.runner.project.workflows
            self.sweeper = Sweeper(
                self.store,
                self.executor,
                interval=settings.sweep_seconds or 0.0,
                runnable=lambda run: run.workflow in workflows,
            )
            # The runs a dead process left unfinished are handed over now; the sweep then keeps at it.
            self.recovered = self.sweeper.sweep()
            self.sweeper.start()
        except BaseException:
            self._stack.close()
            raise

    @property
    def store(self) -> RunStore:
        """The run store."""
        return self.runner.store

    @property
    def project(self) -> ProjectConfig:
        """The loaded project config."""
        return self.runner.project

    def workflow_names(self) -> list[str]:
        """Workflows to offer on the ask page: user-facing ones first (the default first), then the rest."""
        return [choice.name for choice in self.workflow_choices()]

    def workflow_choices(self) -> list[WorkflowChoice]:
        """The ask page's workflows, in :meth:`workflow_names` order, each with its description."""
        return workflow_choices(self.project.workflows.values())

    def answering_llm(self) -> str:
        """Who answers this server's runs, in words (the configured ``--llm``, or the offline composer)."""
        return answering_llm(self.settings.settings.llm, self.settings.settings.base_url)

    def start_run(
        self,
        goal: str,
        *,
        workflow: str | None = None,
        session_id: str | None = None,
        collections: Sequence[str] | None = None,
    ) -> RunRecord:
        """Record a pending run (its retrieval kept to ``collections``, see :meth:`WorkflowRunner.start`) and
        queue it; returns at once.

        Raises:
            ConfigError: no such workflow (nothing is stored).
            InputError: an unknown collection (nothing is stored).
        """
        # The trace starts here: whichever process executes the run continues it (the context is stored with it).
        with submitting() as span:
            run = self.runner.start(goal, workflow=workflow, session_id=session_id, collections=collections)
            span.set({semconv.RUN_ID: run.run_id})
            self.executor.submit(run.run_id)
        return run

    def follow(self, run_id: str, *, goal: str | None = None) -> tuple[RunRecord, bool]:
        """Follow the run's next action: record the follow and the next run, pending, and queue it; returns at once.

        ``goal`` is the user's edit of the next action (see :meth:`WorkflowRunner.start_follow`). A run's next
        action is followed at most once: a repeated follow (a double click, racing requests) returns the run
        that follows it already, and False.

        Raises:
            RunNotFoundError: no such run.
            ActionConflictError: the run is executing or has no next action.
            InputError: ``goal`` breaks the goal rules.
        """
        with submitting() as span:
            try:
                run = self.runner.start_follow(run_id, goal=goal)
            except AlreadyFollowedError as already:
                return self.store.get_run(already.run_id), False
            span.set({semconv.RUN_ID: run.run_id})
            self.executor.submit(run.run_id)
        return run, True

    def rate(self, run_id: str, *, on: str, rating: str, comment: str | None = None) -> LoopEvent:
        """Record a rating of the run's answer or next action (stored, then given to the sinks); its event.

        Raises:
            RunNotFoundError: no such run.
            InputError: a bad ``on``, ``rating`` or comment.
            ActionConflictError: the run has not finished, or has no next action to rate.
        """
        return record_feedback(self.store, run_id, on=on, rating=rating, comment=comment, sinks=self.runner.sinks)

    def act(self, action: Action, run_id: str, task_id: str) -> TaskState:
        """Run an operator action on a stored task on the executor and return its new state (seconds: the LLM)."""
        return self.executor.act(action, run_id, task_id)

    def knowledge(self, *, collection: str | None = None) -> KnowledgeListing:
        """What the knowledge base holds (``kb list``); only ``collection``'s if given.

        Raises:
            InputError: ``collection`` holds no document.
        """
        return list_knowledge(self.store.knowledge(), collection=collection)

    def run_view(self, run_id: str) -> RunView:
        """The run page's view model.

        Raises:
            RunNotFoundError: no such run.
        """
        return read_run_view(self.store, run_id)

    def session_views(self, session_id: str) -> list[RunView]:
        """The runs of a session as a chain, oldest first (empty for an unknown session)."""
        runs = list(reversed(self.store.list_runs(session_id=session_id)))
        views = []
        for run in runs:
            stored, tasks, transitions = self.store.read_run(run.run_id)
            views.append(run_view(stored, tasks, transitions, asked=asked_before(runs, stored)))
        return views

    def run_rows(self, *, limit: int, offset: int = 0, session_id: str | None = None) -> list[dict[str, Any]]:
        """``runs list`` rows, newest first."""
        return run_rows(self.store, self.store.list_runs(limit=limit, offset=offset, session_id=session_id))

    def run_document(self, run_id: str) -> dict[str, Any]:
        """The run as ``marsrag runs show --format json`` prints it."""
        return run_document(self.store, run_id)

    def record_rendered(self, view: RunView) -> None:
        """Record ``loop.ui.rendered`` for each contract task a served run page showed."""
        events = [
            LoopEvent(
                name="loop.ui.rendered",
                run_id=view.run_id,
                task_id=task.task_id,
                loop_contract_version=task.loop_contract_version,
                loop_mode=view.loop_mode,
                validation_status=task.badge.status,
                transition_mode=task.transition_in.mode if task.transition_in else None,
            )
            for task in view.tasks
            if task.badge.status != "skipped"
        ]
        record_events(self.store, events, self.runner.sinks)

    def close(self) -> None:
        """Stop sweeping, give executing runs the grace period to reach a commit point, close the store and sinks.

        Queued runs stay ``pending`` and executing ones stop after their current task (see
        :meth:`ThreadRunExecutor.shutdown`, :meth:`AsyncRunExecutor.shutdown`): the next server's sweep resumes them.
        """
        self.sweeper.stop()
        self.executor.shutdown(grace=self.settings.shutdown_grace)
        self._stack.close()
