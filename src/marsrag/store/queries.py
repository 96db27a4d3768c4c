"""The plain records the store's read models return: counts for the metrics, failures, rankings, chunk hits.

Metrics, retrieval and the dashboard sit above the store: they ask it through :class:`marsrag.store.RunStore`
(and :class:`marsrag.store.KnowledgeStore`) with plain arguments and get these records back, never rows or
engines. Importing this module is cheap (no SQLAlchemy).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

__all__ = [
    "ChunkHit",
    "ChunkText",
    "Claim",
    "GroupKey",
    "GroupedCounts",
    "Holder",
    "LoopCounts",
    "OutcomeCount",
    "TaskFailure",
]

#: What the loop counts can be grouped by: the run's workflow, or the UTC day the run was created.
GroupKey = Literal["workflow", "day"]


@dataclass
class LoopCounts:
    """The numerators and denominators of the six loop metrics for one group of runs.

    ``depths`` is the session depth histogram: runs per session -> sessions with that many.
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


#: Group key (a tuple in the order of ``by``; days as :class:`datetime.date`) -> its counts.
GroupedCounts = dict[tuple[Any, ...], LoopCounts]


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
class OutcomeCount:
    """How many of ``total`` executions (or transitions) of a workflow, or of one task of it, had an outcome."""

    workflow: str
    task_id: str | None
    count: int
    total: int


@dataclass(frozen=True)
class ChunkText:
    """One chunk of a document to store: its position in the document, its heading path and its text."""

    position: int
    heading: str
    text: str


@dataclass(frozen=True)
class ChunkHit:
    """A stored chunk that matched a full-text search, with its backend's relevance score (higher is better)."""

    chunk_id: int
    document_path: str
    heading: str
    text: str
    score: float


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
