"""The plain records the store's read models return: counts for the metrics, failures, rankings, chunk hits.

Metrics, retrieval and the dashboard sit above the store: they ask it through :class:`marsrag.store.RunStore`
(and :class:`marsrag.store.KnowledgeStore`) with plain arguments and get these records back, never rows or
engines. Importing this module is cheap (no SQLAlchemy).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

__all__ = [
    "ChunkHit",
    "ChunkText",
    "Claim",
    "CollectionSummary",
    "DocumentChange",
    "DocumentKey",
    "DocumentOutcome",
    "DocumentSummary",
    "DocumentVersion",
    "GroupKey",
    "GroupedCounts",
    "Holder",
    "LoopCounts",
    "MetricTotals",
    "OutcomeCount",
    "Removal",
    "TaskFailure",
    "UnsupportedGoal",
]

#: What the loop counts can be grouped by: the run's workflow, the UTC day the run was created, or the
#: experiment arm its session was assigned (None outside an experiment).
GroupKey = Literal["workflow", "day", "arm"]


@dataclass
class LoopCounts:
    """The numerators and denominators of the six loop metrics for one group of runs.

    ``depths`` is the session depth histogram: runs per session -> sessions with that many.
    ``followed_edited`` counts the followed runs whose follow took the user's own edited goal (the rest of
    ``followed`` took the next action as suggested). The feedback counts are per completed-or-not run and
    rated part (``answer``, ``next_action``): a run's latest rating of a part counts once, ``*_votes`` all
    ratings, ``*_up`` the thumbs up. ``assessed`` counts the runs whose first task (position 0) had its support
    assessed (NULL before migration 0015: not counted), ``unsupported`` those among them whose level is ``none``.
    """

    executions: int = 0
    first_valid: int = 0
    repaired: int = 0
    transitions: int = 0
    fallbacks: int = 0
    completed: int = 0
    offering: int = 0
    followed: int = 0
    downstream: int = 0
    depths: dict[int, int] = field(default_factory=dict)
    followed_edited: int = 0
    answer_up: int = 0
    answer_votes: int = 0
    next_action_up: int = 0
    next_action_votes: int = 0
    assessed: int = 0
    unsupported: int = 0


#: Group key (a tuple in the order of ``by``; days as :class:`datetime.date`) -> its counts.
GroupedCounts = dict[tuple[Any, ...], LoopCounts]


@dataclass
class MetricTotals:
    """All history at once, what a Prometheus scrape exports: the counts per workflow (keys ``(workflow,)``), the
    session depth histogram over every workflow (a session spanning two counts once) and the events per name."""

    per_workflow: GroupedCounts = field(default_factory=dict)
    depths: dict[int, int] = field(default_factory=dict)
    events: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class TaskFailure:
    """A task whose final validation is ``failed`` or ``partial``, with its run's workflow and goal."""

    run_id: str
    task_id: str
    position: int
    status: str
    workflow: str
    goal: str
    run_status: str
    created_at: datetime
    message: str | None


@dataclass(frozen=True)
class UnsupportedGoal:
    """A run whose first task's retrieved passages did not support it (support ``none``): what was asked that the
    knowledge base lacks, with the asked words the best passage did not have (heaviest first)."""

    run_id: str
    task_id: str
    workflow: str
    goal: str
    run_status: str
    created_at: datetime
    missing: tuple[str, ...]


@dataclass(frozen=True)
class OutcomeCount:
    """How many of ``total`` executions (or transitions) of a workflow, or of one task of it, had an outcome."""

    workflow: str
    task_id: str | None
    count: int
    total: int


#: A document's identity: its collection, then its path (the short one citations show).
DocumentKey = tuple[str, str]
#: What storing a document did: it was new, it replaced an older version, or that version was there already.
DocumentOutcome = Literal["added", "updated", "unchanged"]


@dataclass(frozen=True)
class DocumentVersion:
    """A version of a document to store: its identity, its content's SHA-256 and size, the file it was read from."""

    collection: str
    path: str
    sha256: str
    size: int
    #: Where the content was read from (a resolved path); None when it came from elsewhere.
    source: str | None = None
    #: The version of the chunker that cut it (``marsrag.rag.chunking.CHUNKER_VERSION``); None: unknown.
    chunker: int | None = None

    @property
    def key(self) -> DocumentKey:
        """(collection, path): what makes this document itself."""
        return self.collection, self.path


@dataclass(frozen=True)
class DocumentChange:
    """What storing a document did, and what it found stored: the source of that version, whether it was adopted."""

    outcome: DocumentOutcome
    #: Where the version found stored (replaced or unchanged) was read from; None for a new or a legacy document.
    previous_source: str | None = None
    #: The document was taken over from another collection (``adopt_from``) rather than found in its own.
    adopted: bool = False
    #: Its content was unchanged but another chunker version had cut it: it was cut again.
    rechunked: bool = False


@dataclass(frozen=True)
class ChunkText:
    """One chunk of a document to store: its position in the document, its heading path and its text."""

    position: int
    heading: str
    text: str


@dataclass(frozen=True)
class ChunkVectors:
    """The vectors of a document's chunks, as one embedder made them: one per chunk, in the chunks' order.

    Each vector is float32 little-endian bytes of ``dimension`` numbers, unit length.
    """

    embedder: str
    dimension: int
    vectors: Sequence[bytes]


@dataclass(frozen=True)
class UnembeddedChunk:
    """A stored chunk that has no vector of some embedder yet: what re-embedding reads."""

    chunk_id: int
    heading: str
    text: str


@dataclass(frozen=True)
class TermCounts:
    """The knowledge base's term statistics for some terms: its size in chunks, and how many contain each term."""

    chunks: int
    #: Term -> the number of chunks containing it (0 for a term no chunk has).
    counts: dict[str, int]


@dataclass(frozen=True)
class ChunkHit:
    """A stored chunk that matched a full-text search, with its backend's relevance score (higher is better)."""

    chunk_id: int
    document_path: str
    heading: str
    text: str
    score: float


@dataclass(frozen=True)
class CollectionSummary:
    """A collection of the knowledge base: its name, how many documents and chunks it holds, its latest ingest."""

    name: str
    documents: int
    chunks: int
    #: When its most recently ingested document was (UTC).
    ingested_at: datetime


@dataclass(frozen=True)
class DocumentSummary:
    """A stored document: its identity, its chunk count, its size, the file it was read from and when (UTC)."""

    collection: str
    #: The path citations show (``kb/doc.md``).
    path: str
    chunks: int
    size: int
    #: The resolved file its content was read from; None for documents stored before sources were kept.
    source: str | None
    ingested_at: datetime

    @property
    def key(self) -> DocumentKey:
        """(collection, path): what makes this document itself."""
        return self.collection, self.path


@dataclass(frozen=True)
class Removal:
    """What removing documents did: the documents removed (with their chunk counts), or what was not there.

    When anything asked for is missing, nothing is removed: ``documents`` is empty.
    """

    documents: tuple[DocumentSummary, ...] = ()
    #: Documents asked for by key that are not stored.
    missing_documents: tuple[DocumentKey, ...] = ()
    #: Collections asked for that hold no document.
    missing_collections: tuple[str, ...] = ()

    @property
    def chunks(self) -> int:
        """The chunks removed with the documents."""
        return sum(document.chunks for document in self.documents)

    @property
    def complete(self) -> bool:
        """Whether everything asked for was there (and so was removed)."""
        return not self.missing_documents and not self.missing_collections


#: Why a claim was refused: the run is no longer as the caller read it, someone alive holds it (or one of its
#: tasks), the task is not in a status the claim applies to, or there is no such task.
ClaimRefusal = Literal["changed", "busy", "status", "missing"]


@dataclass(frozen=True)
class Claim:
    """The answer to a claim on a run or a task: taken, or refused with the reason (true only when taken)."""

    ok: bool
    refusal: ClaimRefusal | None = None
    #: Who holds it instead (``busy``), and which task (a run's claim refused for a task an action holds).
    holder: str | None = None
    task_id: str | None = None

    def __bool__(self) -> bool:
        return self.ok


@dataclass(frozen=True)
class Holder:
    """On whose behalf a write is made; the store applies it only while they still hold what they hold.

    ``run_owner``: the executor of the run (``host:pid``), which holds it while the run is ``running`` under
    that owner. ``task_claim``: an operator action's claim on the task it saves.
    """

    run_owner: str | None = None
    task_claim: str | None = None
