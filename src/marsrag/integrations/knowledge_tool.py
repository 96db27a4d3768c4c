"""The knowledge base as a CrewAI tool, ``search_knowledge_base(query)``: any agent's ``tools: [knowledge_base]``.

The tool searches the run's knowledge base (the runner's retriever) and answers with the passages as the
briefing shows them, each numbered and headed by its citation (``[N] path#heading``), so the agent cites
them exactly as it cites the sources it was given. The numbers continue the task's own: a passage the task
was shown keeps its number, a new one takes the next, and the runner stores the new ones on the task after
its own retrieval results (:mod:`marsrag.integrations.passages`), where the citations check resolves them.

A search that fails (the database is down) answers with what went wrong instead of raising: the agent can
go on without it, and the task still ends in a contract answer.

Importing this module imports CrewAI (through :mod:`marsrag.integrations.crewai`, which keeps it offline).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Final, Protocol

from marsrag.integrations.crewai_env import prepare_crewai_environment

prepare_crewai_environment()

from crewai.context import get_current_task_id  # noqa: E402 - must follow the environment set-up above
from crewai.tools import BaseTool  # noqa: E402
from pydantic import BaseModel, Field  # noqa: E402

from marsrag.chain.briefing import passage  # noqa: E402
from marsrag.integrations.passages import PASSAGES, PassageJournal  # noqa: E402

logger = logging.getLogger(__name__)
logger.addHandler(logging.NullHandler())

#: The tool's name as the model calls it.
TOOL_NAME: Final = "search_knowledge_base"
#: Longest query searched (characters): a model pasting its whole context as a query gets its start searched.
MAX_QUERY_CHARS: Final = 500
#: The passages' end line (the briefing ends its sources the same way).
PASSAGES_END: Final = "(end of passages)"


class Searcher(Protocol):
    """What the tool searches: the runtime's ``Retriever`` (a :class:`~marsrag.rag.KnowledgeBase`), by shape."""

    def search(self, query: str, limit: int = 5) -> list[dict[str, Any]]:
        """The best passages for ``query``: dicts with at least ``source`` and ``text``."""
        ...


class SearchKnowledgeBaseInput(BaseModel):
    """The tool's argument."""

    query: str = Field(description="What to look for: a few keywords or a short question.")


def _never_cache(_arguments: Any = None, _result: Any = None) -> bool:
    # CrewAI's per-agent tool cache would answer a repeated query without running the tool, and the
    # passages would then not be recorded on the task asking again.
    return False


class KnowledgeBaseTool(BaseTool):
    """``search_knowledge_base(query)``: numbered passages from the run's knowledge base, each with its citation."""

    name: str = TOOL_NAME
    description: str = (
        "Search the knowledge base (runbooks, incident notes, documentation) for passages about a query. "
        "Returns numbered passages, each headed by its source (path#heading). Cite a passage by its number "
        "in brackets, like [3], right after the sentence it supports."
    )
    args_schema: type[BaseModel] = SearchKnowledgeBaseInput
    cache_function: Any = _never_cache
    #: The knowledge base searched (None: the run has none; the tool then says so).
    searcher: Any = Field(default=None, exclude=True)
    #: Passages per search.
    limit: int = Field(default=5, ge=1)
    #: Where the passages found are numbered and recorded per task (the process's journal unless given).
    journal: Any = Field(default=None, exclude=True)

    def _run(self, query: str) -> str:
        """Search for ``query``; the passages numbered for the task running, as text the model can cite."""
        query = " ".join(str(query).split())[:MAX_QUERY_CHARS]
        if not query:
            return "Give a query: a few keywords or a short question to look for in the knowledge base."
        if self.searcher is None:
            return "No knowledge base is configured for this run: answer from what you were given."
        try:
            hits = list(self.searcher.search(query, self.limit))
        except Exception as error:  # noqa: BLE001 - the agent goes on without the search; the log says why
            logger.warning("search_knowledge_base(%r) failed: %s: %s", query, type(error).__name__, error)
            return f"The knowledge base could not be searched ({type(error).__name__}): answer from what you have."
        if not hits:
            return (
                f'No passage of the knowledge base matches "{query}": try other keywords, or answer from what you have.'
            )
        found = [{**hit, "via": TOOL_NAME, "query": query} for hit in hits]
        journal: PassageJournal = self.journal if self.journal is not None else PASSAGES
        numbers = journal.found(get_current_task_id(), found)
        heading = (
            f'Passages found for "{query}". Cite a passage by its number in brackets, like [{numbers[0]}], '
            "right after the sentence it supports; cite only numbers you were given:"
        )
        entries = [passage(number, hit) for number, hit in zip(numbers, found, strict=True)]
        return "\n\n".join([heading, *entries, PASSAGES_END])

    async def _arun(self, query: str) -> str:
        """:meth:`_run` off the event loop (the search is a database query); CrewAI's task id goes along."""
        return await asyncio.to_thread(self._run, query)


def knowledge_tool(searcher: Searcher | None, limit: int = 5) -> KnowledgeBaseTool:
    """A fresh ``search_knowledge_base`` tool over ``searcher`` (CrewAI counts a tool's uses on the object)."""
    return KnowledgeBaseTool(searcher=searcher, limit=limit)


__all__ = [
    "MAX_QUERY_CHARS",
    "TOOL_NAME",
    "KnowledgeBaseTool",
    "SearchKnowledgeBaseInput",
    "Searcher",
    "knowledge_tool",
]
