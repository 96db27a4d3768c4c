"""The retrieval step: every task gets a query shaped by its hook (spec section 4: hook shapes retrieval).

The knowledge base plugs in behind :class:`Retriever`; until one is configured :class:`NoRetriever`
answers nothing, and the query is still built and stored.
"""

from __future__ import annotations

from typing import Any, Protocol


class Retriever(Protocol):
    """Searches a knowledge base."""

    def search(self, query: str, limit: int = 5) -> list[dict[str, Any]]:
        """The best passages for ``query``: dicts with at least ``source`` and ``text``."""
        ...


class NoRetriever:
    """The retriever of a run without a knowledge base: always empty."""

    def search(self, query: str, limit: int = 5) -> list[dict[str, Any]]:
        """Nothing."""
        return []


def retrieval_query(hook: str | None, goal: str) -> str:
    """The query for a task: its hook first (the intent to pursue), then the goal for grounding."""
    if not hook:
        return goal.strip()
    return f"{hook.strip()} {goal.strip()}"
