"""The retrieval step: every task gets a query shaped by its hook (spec section 4: hook shapes retrieval).

The knowledge base plugs in behind :class:`Retriever`; until one is configured :class:`NoRetriever`
answers nothing, and the query is still built and stored. :func:`retrieve` is the step itself, the same for
a run's tasks, a Flow's steps and an operator's re-run: the query, the passages, and how well they support
what the task was asked (:mod:`marsrag.rag.support`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from marsrag.chain.numbering import SourceNumbers
from marsrag.errors import InputError
from marsrag.rag.manage import check_collections
from marsrag.rag.support import asked_terms, assess
from marsrag.state import Retrieval
from marsrag.store import TermCounts
from marsrag.tracing import semconv
from marsrag.tracing.spans import NO_SPAN, Span, start_retrieval


class Retriever(Protocol):
    """Searches a knowledge base."""

    def search(self, query: str, limit: int = 5) -> list[dict[str, Any]]:
        """The best passages for ``query``: dicts with at least ``source`` and ``text``."""
        ...


class Finder(Protocol):
    """A retriever that says which retrievers answered and why one did not (the knowledge base does)."""

    def find(self, query: str, limit: int = 5) -> Any:
        """Results (``.results``), the retrievers fused (``.retrievers``), why one was skipped (``.skipped``)."""
        ...


class TermStatistics(Protocol):
    """A retriever that keeps term statistics (the knowledge base does): support weighs terms by them."""

    def term_counts(self, terms: Sequence[str]) -> TermCounts:
        """How many chunks there are, and how many contain each term."""
        ...


class NoRetriever:
    """The retriever of a run without a knowledge base: always empty."""

    def search(self, query: str, limit: int = 5) -> list[dict[str, Any]]:
        """Nothing."""
        return []


def run_scope(
    retriever: Retriever, requested: Sequence[str] | None, default: Sequence[str] | None = None
) -> list[str] | None:
    """The collections a new run keeps to: ``requested`` (a run's flag or request), else ``default`` (its
    workflow's ``collections:``); None when neither names any (every collection).

    Raises:
        InputError: a name is not a collection of the knowledge base (the message names it and lists the
            known ones), or the retriever cannot keep to collections.
    """
    chosen = requested if requested is not None else default
    if chosen is None:
        return None
    if not list(chosen):
        raise InputError("no collection named: name at least one, or none to search every collection")
    if not (callable(getattr(retriever, "scoped", None)) and callable(getattr(retriever, "collection_names", None))):
        raise InputError(
            f"this runner's retriever ({type(retriever).__name__}) cannot keep to collections "
            f"({', '.join(map(repr, chosen))}): only the knowledge base can"
        )
    return check_collections(chosen, retriever.collection_names())  # type: ignore[attr-defined]


def scoped_retriever(retriever: Retriever, collections: Sequence[str] | None) -> Retriever:
    """``retriever`` kept to ``collections`` (None: as it is): what a run's tasks and tools search.

    Raises:
        InputError: collections are named and the retriever cannot keep to them.
    """
    if collections is None:
        return retriever
    scoped = getattr(retriever, "scoped", None)
    if not callable(scoped):
        raise InputError(f"this runner's retriever ({type(retriever).__name__}) cannot keep to collections")
    result: Retriever = scoped(collections)
    return result


def retrieval_query(hook: str | None, goal: str) -> str:
    """The query for a task: its hook first (the intent to pursue), then the goal for grounding."""
    if not hook:
        return goal.strip()
    return f"{hook.strip()} {goal.strip()}"


def retrieve(
    retriever: Retriever,
    hook: str | None,
    goal: str,
    limit: int,
    *,
    numbers: SourceNumbers | None = None,
    span: Span = NO_SPAN,
) -> Retrieval:
    """A task's retrieval: the query its hook shapes, the passages found, and their support of the task.

    A retriever without term statistics (one of the user's own) has its support measured with every term
    weighed alike. ``numbers``: the run's sources (:mod:`marsrag.chain.numbering`); the passages are then
    one per section, each with its run-wide ``ref``, before support is assessed on them. Traced as a
    ``retrieval`` span under ``span`` (the task's; by default the current span).
    """
    query = retrieval_query(hook, goal)
    traced = start_retrieval(span, query, limit=limit)
    try:
        retrievers: list[str] = []
        skipped: str | None = None
        if callable(getattr(retriever, "find", None)):
            found = retriever.find(query, limit)  # type: ignore[attr-defined]
            results, retrievers, skipped = found.results, list(found.retrievers), found.skipped
        else:
            results = retriever.search(query, limit)
        if numbers is not None:
            results = numbers.number(results)
        counts = None
        if isinstance(retriever, NoRetriever):
            counts = TermCounts(0, {})
        elif callable(getattr(retriever, "term_counts", None)):
            counts = retriever.term_counts(asked_terms(goal, hook))  # type: ignore[attr-defined]
        retrieval = Retrieval(
            query=query,
            results=results,
            support=assess(goal, hook, results, counts, scale=getattr(retriever, "similarity_scale", None)),
            retrievers=retrievers,
            skipped=skipped,
        )
    except BaseException as error:
        traced.fail(error)
        traced.end()
        raise
    level = retrieval.support.level if retrieval.support is not None else None
    traced.set({semconv.RETRIEVAL_RESULTS: len(results), semconv.SUPPORT: level})
    traced.end()
    return retrieval
