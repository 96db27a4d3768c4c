"""The run store interface: one seam, one implementation per database, one conformance test suite.

A store keeps runs, task states (with their attempts), transitions and events. Every write method is one
transaction: a task state is committed together with its attempts and the events describing it, so a crash
leaves either all of them or none. Implementations must be safe to use from several threads (CrewAI runs
guardrails and callbacks in worker threads) and, from issue 5 on, from several processes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from datetime import datetime

from marsrag.state import LoopEvent, RunRecord, RunStatus, TaskProgress, TaskState, TransitionRecord
from marsrag.store.queries import (
    ChunkHit,
    ChunkText,
    ChunkVectors,
    Claim,
    CollectionSummary,
    DocumentChange,
    DocumentKey,
    DocumentSummary,
    DocumentVersion,
    GroupedCounts,
    GroupKey,
    Holder,
    MetricTotals,
    OutcomeCount,
    Removal,
    TaskFailure,
    TermCounts,
    UnembeddedChunk,
    UnsupportedGoal,
)

#: The collection of the documents stored before documents had collections (migration 0008 put them there).
LEGACY_COLLECTION = "legacy"
#: Outcome counts per workflow, then per (workflow, task).
Rankings = tuple[list[OutcomeCount], list[OutcomeCount]]
#: Seconds a store operation whose connection keeps dropping is retried for, since its first try: a failover
#: takes about 15 s, and connections killed over and over for that long must not fail a run.
RETRY_BUDGET = 20.0
#: Seconds between those tries: doubling from 0.1 s (a single dropped connection costs a tenth of a second), then
#: every 2 s (a server back after a failover is found within 2 s), until :data:`RETRY_BUDGET` is spent. The
#: runtime rides out a brief outage of the whole store with the same schedule.
RETRY_DELAYS: tuple[float, ...] = (0.1, 0.2, 0.4, 0.8, 1.6, *(2.0,) * 9)


class RunStore(ABC):
    """Persistence for runs, task states, attempts, transitions and events."""

    #: The URL the store was opened with, with any password masked.
    url: str

    @abstractmethod
    def create_run(self, run: RunRecord, events: Sequence[LoopEvent] = ()) -> None:
        """Insert a new run (status ``pending`` or ``running``) with the events that describe it, in one transaction.

        Raises:
            AlreadyFollowedError: ``run.followed_from`` names a run that another run follows already (nothing is
                stored; the error carries that run's id). Of racing follows of one run, exactly one is stored.
        """

    @abstractmethod
    def set_run_status(
        self,
        run_id: str,
        status: RunStatus,
        *,
        reason: str | None = None,
        summary: str | None = None,
        owner: str | None = None,
        seen: RunRecord | None = None,
    ) -> bool:
        """Update a run's status (and its reason, summary and owner when given); bumps ``updated_at``; whether it did.

        ``completed`` clears the reason unless one is given (a finished run keeps no stale failure reason).
        With ``seen`` the update is a compare-and-set: it applies only while the run's status and owner are
        still as ``seen`` (what the writer read), so no writer overwrites what another wrote since; without it,
        it always applies. A write whose connection dropped is retried (see :data:`RETRY_DELAYS`).

        Raises:
            RunNotFoundError: no such run.
        """

    @abstractmethod
    def claim_run(self, run_id: str, owner: str, *, seen: RunRecord, trace: str | None = None) -> Claim:
        """Mark a run ``running`` under ``owner`` if it is still as ``seen`` (status and owner); whether it was.

        ``trace`` becomes the run's trace context when it has none yet (its first traced execution's span).

        A compare-and-set: of several processes that read the same pending (or abandoned) run and race to
        execute it, exactly one gets it. Refused (``busy``, naming the task and its holder) while an operator
        action that is not gone (:func:`marsrag.liveness.holder_gone`) holds one of the run's tasks: resume and
        recovery respect actions' claims as actions respect the run's. Bumps ``updated_at``.
        """

    @abstractmethod
    def heartbeat_runs(self, run_ids: Sequence[str], owner: str) -> set[str]:
        """Bump ``updated_at`` of those of ``run_ids`` that are ``running`` under ``owner``; the ids it bumped.

        The heartbeat of an executor (:mod:`marsrag.runtime.heartbeat`): between two task commits, which may be
        minutes apart, it shows the run's holder is alive (:func:`marsrag.liveness.is_stale`). A run that is
        not running under ``owner`` (finished, handed back, taken over, unknown) is left as it is. Changes
        nothing else of the run (no status, owner or metrics); safe to repeat, so a dropped connection is retried.
        """

    @abstractmethod
    def save_task(
        self,
        state: TaskState,
        events: Sequence[LoopEvent] = (),
        *,
        transition: TransitionRecord | None = None,
        transition_events: Sequence[LoopEvent] = (),
        holder: Holder | None = None,
    ) -> None:
        """Insert (or replace) one task state with its attempts and events, in one transaction.

        ``transition`` (the handoff out of this task) and its events join the same transaction, so a task is
        never stored without the transition planned from it. It may instead be the handoff into this task from
        an already stored one (a flow knows its next step only once it starts): stored as
        :meth:`save_transition` would store it, in this transaction. A task has at most one current outgoing
        transition: storing one marks its source's current one ``superseded`` (the row is kept). Also bumps the
        run's ``updated_at``: every committed task is a heartbeat of the process running it.

        ``holder`` makes the save conditional: it applies only while the run is ``running`` under
        ``holder.run_owner``, or while ``holder.task_claim`` still claims the task. A save whose connection
        dropped is retried on a fresh one (see :data:`RETRY_DELAYS`); when the lost commit's outcome is
        unknown, the retry first checks whether it landed, so nothing is written (or counted) twice.

        Raises:
            RunNotFoundError: the task's run does not exist.
            HolderLostError: ``holder`` no longer holds the run or the task (nothing is written).
        """

    @abstractmethod
    def save_transition(
        self, transition: TransitionRecord, events: Sequence[LoopEvent] = (), *, holder: Holder | None = None
    ) -> None:
        """Insert one transition with its events, in one transaction.

        Unless it is itself marked superseded, it supersedes its source task's current outgoing transition.
        ``holder`` makes it conditional as for :meth:`save_task`.

        Raises:
            RunNotFoundError: the transition's run does not exist.
            HolderLostError: ``holder`` no longer holds the run.
        """

    @abstractmethod
    def claim_task(self, run_id: str, task_id: str, owner: str, *, statuses: Sequence[str], seen: RunRecord) -> Claim:
        """Claim a task for an operator action, atomically; whether this caller got it, else why not.

        The claim is taken only when the task's validation status is one of ``statuses`` (else ``status``),
        the run is still as ``seen`` (status and owner: no resume or recovery took it since the caller read
        it; else ``changed``) and no other claim holds the task, unless its holder is gone (the liveness rule
        of runs, :func:`marsrag.liveness.holder_gone`, with the claim's start as its heartbeat; else ``busy``).
        Saving the task releases its claim (the row is replaced); :meth:`release_task` releases it otherwise.
        """

    @abstractmethod
    def release_task(self, run_id: str, task_id: str, owner: str) -> None:
        """Release ``owner``'s claim on a task (nothing when it holds none: the task was saved since)."""

    @abstractmethod
    def add_events(self, events: Sequence[LoopEvent]) -> None:
        """Insert events that describe no new state (e.g. ``loop.ui.rendered``)."""

    @abstractmethod
    def get_run(self, run_id: str) -> RunRecord:
        """One run.

        Raises:
            RunNotFoundError: no such run.
        """

    @abstractmethod
    def resolve_run_id(self, prefix: str) -> str:
        """The id of the one run whose id is ``prefix`` or starts with it (a short id, as ``runs list`` shows).

        Raises:
            RunNotFoundError: no run's id starts with ``prefix``.
            AmbiguousRunIdError: several do (and none is ``prefix`` itself).
        """

    @abstractmethod
    def short_run_ids(self, run_ids: Sequence[str], *, min_length: int = 8) -> dict[str, str]:
        """Each of ``run_ids`` shortened to its shortest prefix of at least ``min_length`` that no other run shares."""

    @abstractmethod
    def read_run(self, run_id: str) -> tuple[RunRecord, list[TaskState], list[TransitionRecord]]:
        """A run with its task states and transitions, from one consistent snapshot (what a run page shows).

        Raises:
            RunNotFoundError: no such run.
            IncompatibleRecordError: a record was made under another contract major version.
        """

    @abstractmethod
    def list_runs(
        self,
        *,
        limit: int | None = None,
        session_id: str | None = None,
        offset: int = 0,
        statuses: Sequence[RunStatus] | None = None,
    ) -> list[RunRecord]:
        """Runs, newest first (optionally only one session's, only in ``statuses``), skipping the first ``offset``."""

    @abstractmethod
    def get_tasks(self, run_id: str) -> list[TaskState]:
        """A run's task states with their attempts, in workflow order.

        Raises:
            IncompatibleRecordError: a record was made under another contract major version.
        """

    @abstractmethod
    def get_transitions(self, run_id: str) -> list[TransitionRecord]:
        """A run's transitions, in order (superseded ones included, marked)."""

    @abstractmethod
    def get_events(self, run_id: str) -> list[LoopEvent]:
        """A run's events, in the order they were stored."""

    # -- progress: what a task being written has so far (streamed answers), for viewers in any process ---------

    @abstractmethod
    def save_progress(self, progress: TaskProgress) -> int:
        """Store what a task being written has so far, replacing what its position had; the write's ``seq``.

        The ``seq`` is the run's next progress number (one more than any the run has), so a reader that saw
        number n asks :meth:`progress_since` for what changed after it. One process executes a run (its claim), so
        a run's progress has one writer. A write for a run that does not exist stores nothing and returns 0.
        """

    @abstractmethod
    def progress_since(self, run_id: str, after: int = 0) -> list[TaskProgress]:
        """The run's task progress written after number ``after``, one per task position, in ``seq`` order."""

    # -- read models: what metrics, the dashboard, Prometheus and retrieval ask of the store -------------------
    # Windows are runs created at or after ``since`` and before ``until`` (None: unbounded); each method is one
    # read and raises StoreError (its message naming the URL) when the database cannot be read. The metrics'
    # counts come from rollups the writes keep (their cost follows the number of workflows and days, not the
    # history); ``from_rows=True`` counts the raw rows instead, the reference the rollups must always equal.

    @abstractmethod
    def loop_counts(
        self,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        workflow: str | None = None,
        by: Sequence[GroupKey] = (),
        from_rows: bool = False,
        experiment: str | None = None,
    ) -> GroupedCounts:
        """The loop metrics' numerators, denominators and session depth histogram per group of runs.

        Groups are keyed by tuples in the order of ``by`` (``workflow``; ``day``, the UTC day a run was created,
        as a :class:`datetime.date`; ``arm``, the run's experiment arm, None outside an experiment); a group with
        no runs is absent. With no ``by`` there is always the one key ``()`` (all zeros when no run matches).
        ``experiment``: only the runs of that experiment. Session depth counts each session under the day and the
        arm of its first run (in the workflow, when grouped by or filtered to one), with all its runs: a window
        holds the sessions that started in it. The feedback counts (a run's latest rating per part) and the
        edited follows are counted under their run's group, its day among them.
        """

    @abstractmethod
    def session_depths(
        self,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        workflow: str | None = None,
        from_rows: bool = False,
        experiment: str | None = None,
    ) -> dict[int, int]:
        """Runs per session -> sessions with that many, for the sessions that started in the window (all workflows
        pooled unless ``workflow``; only those whose first run is in ``experiment``, if given)."""

    @abstractmethod
    def event_counts(self, *, from_rows: bool = False) -> dict[str, int]:
        """Stored events per event name, all history (a name with no event is absent)."""

    def metric_totals(self, *, from_rows: bool = False) -> MetricTotals:
        """All history's counts per workflow, session depths over every workflow and events per name, at once.

        What :meth:`loop_counts` by workflow, :meth:`session_depths` and :meth:`event_counts` return; a store
        may read them in one go (the SQL store: one query of the all-time rollup rows).
        """
        return MetricTotals(
            self.loop_counts(by=("workflow",), from_rows=from_rows),
            self.session_depths(from_rows=from_rows),
            self.event_counts(from_rows=from_rows),
        )

    @abstractmethod
    def task_failures(
        self,
        *,
        limit: int = 20,
        since: datetime | None = None,
        until: datetime | None = None,
        workflow: str | None = None,
    ) -> list[TaskFailure]:
        """The ``limit`` most recent tasks whose final validation is ``failed`` or ``partial``, newest first.

        The status is the task's stored one (what ``marsrag runs show`` reports); the message is the first
        error of its validation, else of its latest attempt that recorded one.
        """

    @abstractmethod
    def unsupported_goals(
        self,
        *,
        limit: int = 10,
        since: datetime | None = None,
        until: datetime | None = None,
        workflow: str | None = None,
    ) -> list[UnsupportedGoal]:
        """The ``limit`` most recent runs whose first task's support was ``none``, newest first: what users ask
        that the knowledge base lacks (runs created in the window, of ``workflow`` if given)."""

    @abstractmethod
    def repair_rankings(
        self, *, since: datetime | None = None, until: datetime | None = None, from_rows: bool = False
    ) -> Rankings:
        """Narrative task executions and those with an in-run repair, per workflow and per (workflow, task)."""

    @abstractmethod
    def fallback_rankings(
        self, *, since: datetime | None = None, until: datetime | None = None, from_rows: bool = False
    ) -> Rankings:
        """Current transitions and those in fallback mode, per workflow and per (workflow, source task)."""

    @abstractmethod
    def partial_counts(
        self, *, since: datetime | None = None, until: datetime | None = None, from_rows: bool = False
    ) -> dict[str, dict[str, int]]:
        """Per workflow: ``partial`` final task executions and ``fallbacks_after_partial`` transitions (absent: 0)."""

    @abstractmethod
    def workflow_names(self) -> set[str]:
        """The workflows of the stored runs."""

    @abstractmethod
    def rebuild_rollups(self) -> int:
        """Recount the metrics' rollups from the raw rows, in one transaction; the number of rollup rows written.

        Writers wait for it and then add to the rebuilt counts; readers go on reading the old ones meanwhile.
        """

    @abstractmethod
    def knowledge(self) -> KnowledgeStore:
        """The knowledge base kept in the same database (valid until the store is closed)."""

    # -- end of read models ------------------------------------------------------------------------------------

    @abstractmethod
    def close(self) -> None:
        """Release connections (idempotent)."""

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @abstractmethod
    def task_outcomes(self, run_ids: Sequence[str]) -> dict[str, dict[str, int]]:
        """How the tasks of each run ended: per run id, the count of tasks in each validation status.

        Every id given gets every status of :data:`~marsrag.state.VALIDATION_STATUSES` (zero when none, and
        all zero for an unknown run or one without tasks), whatever the number of runs: one query, not one
        per run (the runs list shows the outcome of each of its rows).
        """


class KnowledgeStore(ABC):
    """Documents and their chunks, searched by full text: the storage half of :class:`marsrag.rag.KnowledgeBase`."""

    #: The URL of the database, with any password masked.
    url: str

    @abstractmethod
    def known_hashes(self, *, chunker: int | None = None) -> dict[DocumentKey, str]:
        """(collection, path) -> the SHA-256 of its stored content, for every document.

        With ``chunker``, only the documents that chunker version cut (the others are to be cut again).
        """

    @abstractmethod
    def replace_document(
        self,
        document: DocumentVersion,
        pieces: Sequence[ChunkText],
        *,
        adopt_from: str | None = None,
        terms: Mapping[str, int] | None = None,
        vectors: ChunkVectors | None = None,
    ) -> DocumentChange:
        """Store a document and its chunks in one transaction, replacing an older version's.

        ``terms``: how many of ``pieces`` contain each term (the document's part of :meth:`term_counts`),
        replacing the older version's with its chunks; None stores none. ``vectors``: one per piece, stored
        with the chunks (None: the chunks have none until :meth:`set_vectors`).

        The document is the one stored under its collection and path; another collection's document of the same
        path is another document. Except: when the collection has none and ``adopt_from`` names a collection that
        has one, that one is moved into this collection (keeping its chunks and their ids), then compared and
        replaced as if it had been there. A stored version of the same content cut by another chunker version
        is replaced too (``rechunked``).

        Nothing is written when the document is stored with this ``sha256`` already (but an adopted one is moved,
        and takes this version's source), checked under the write lock, so concurrent ingests of one file write
        it once. A reader never sees a document half replaced.

        Raises:
            StoreError: the database fails.
        """

    @abstractmethod
    def term_counts(self, terms: Sequence[str], *, collections: Sequence[str] | None = None) -> TermCounts:
        """How many chunks the knowledge base holds, and how many contain each of ``terms`` (each once).

        ``collections``: count only the chunks of the documents in those collections (None: every collection).

        Raises:
            StoreError: the database fails.
        """

    @abstractmethod
    def search_chunks(
        self, words: Sequence[str], limit: int, *, collections: Sequence[str] | None = None
    ) -> list[ChunkHit]:
        """The chunks matching any of ``words`` (letters and digits only), best first, at most ``limit``.

        ``collections``: only chunks of the documents in those collections (None: every collection); the
        ``limit`` best of those, not the best overall filtered afterwards.

        Raises:
            StoreError: the database fails.
        """

    @abstractmethod
    def document_vectors(self, key: DocumentKey, embedder: str) -> dict[tuple[str, str], bytes]:
        """The stored document's chunk vectors made by ``embedder``, by (heading, text): what a new version of
        the document reuses for its unchanged chunks (empty when it is not stored or has none of ``embedder``).

        Raises:
            StoreError: the database fails.
        """

    @abstractmethod
    def unembedded(self, embedder: str, limit: int) -> list[UnembeddedChunk]:
        """At most ``limit`` chunks with no vector of ``embedder`` (none, or another embedder's), by id.

        Raises:
            StoreError: the database fails.
        """

    @abstractmethod
    def set_vectors(self, embedder: str, dimension: int, vectors: Mapping[int, bytes]) -> int:
        """Store each chunk's vector (chunk id -> vector) as ``embedder``'s, replacing any other; how many
        were stored (a chunk removed meanwhile is skipped). One transaction.

        Raises:
            StoreError: the database fails.
        """

    @abstractmethod
    def embedders(self, *, collections: Sequence[str] | None = None) -> dict[str, tuple[int, int]]:
        """Each embedder whose vectors are stored -> (their dimension, how many chunks have one).

        Raises:
            StoreError: the database fails.
        """

    @abstractmethod
    def search_vectors(
        self, vector: bytes, embedder: str, limit: int, *, collections: Sequence[str] | None = None
    ) -> list[ChunkHit]:
        """The chunks whose ``embedder`` vectors are most similar to ``vector`` (same embedder, same dimension),
        best first, at most ``limit``; the score is the cosine similarity. An exact scan: every vector of
        ``embedder`` (in ``collections``, None: all) is compared; chunks of no vector of it are never found.

        Raises:
            StoreError: the database fails.
        """

    @abstractmethod
    def collections(self) -> list[CollectionSummary]:
        """Every collection holding a document, by name, with its documents, chunks and latest ingest.

        Raises:
            StoreError: the database fails.
        """

    @abstractmethod
    def documents(self, *, collections: Sequence[str] | None = None) -> list[DocumentSummary]:
        """The stored documents (only those of ``collections`` when given), by collection then path.

        Raises:
            StoreError: the database fails.
        """

    @abstractmethod
    def remove_documents(self, keys: Sequence[DocumentKey] = (), *, collections: Sequence[str] = ()) -> Removal:
        """Remove the documents of ``keys`` and every document of ``collections``, in one transaction.

        All or nothing: when a key names no stored document, or a collection holds none, nothing is removed
        and the :class:`Removal` names what is missing. Else each document goes with its chunks, their
        full-text index entries and its term counts (what :meth:`term_counts` counts), so every read after
        it is as if the documents had never been ingested. Runs keep what they stored of the passages they
        retrieved and cited (the text, the path): those are copies, not references.

        Raises:
            StoreError: the database fails.
        """
