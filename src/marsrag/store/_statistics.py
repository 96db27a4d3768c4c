"""The knowledge base's term statistics (chunk count, chunks per term), kept in memory per generation.

Every search on PostgreSQL weighs its words by them and every task's support assessment reads them, but
counting the chunks scans the widest table (about 60 ms for 100,000 chunks on PostgreSQL, measured) and a
common term sums thousands of per-document rows. Every write to the knowledge base raises its generation
(:func:`marsrag.store._vectors.bump_generation`); the counts read are kept, per scope of collections, until the
generation a later read finds has moved, so they are always those of the knowledge base as it is.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection

from marsrag.store._vectors import read_generation
from marsrag.store.queries import TermCounts

__all__ = ["TermStatistics"]

#: Terms kept at most (per process and knowledge base): past it the cache starts over.
MAX_TERMS_KEPT = 100_000

Scope = tuple[str, ...] | None


class TermStatistics:
    """Chunk and term counts per scope, read through the given statements and kept while the generation holds."""

    def __init__(self, chunk_count: Any, scoped_chunk_count: Any, term_counts: Any, scoped_term_counts: Any) -> None:
        """The statements: count the chunks (all, and of ``:collections``); sum each of ``:terms``' chunks."""
        self._statements = (chunk_count, scoped_chunk_count, term_counts, scoped_term_counts)
        self._lock = threading.Lock()
        self._generation: int | None = None
        self._sizes: dict[Scope, int] = {}
        self._terms: dict[tuple[Scope, str], int] = {}

    def counts(self, connection: Connection, terms: Sequence[str], collections: Sequence[str] | None) -> TermCounts:
        """How many chunks (of ``collections``; None: all) there are, and how many contain each of ``terms``."""
        wanted = list(dict.fromkeys(terms))
        scope: Scope = tuple(collections) if collections is not None else None
        generation = read_generation(connection)  # before reading: a write meanwhile makes the next read again
        with self._lock:
            if generation != self._generation:
                self._generation, self._sizes, self._terms = generation, {}, {}
            size = self._sizes.get(scope)
            known = {term: self._terms[(scope, term)] for term in wanted if (scope, term) in self._terms}
        chunk_count, scoped_chunk_count, term_counts, scoped_term_counts = self._statements
        parameters = {} if scope is None else {"collections": list(scope)}
        if size is None:
            size = int(
                connection.execute(chunk_count if scope is None else scoped_chunk_count, parameters).scalar_one()
            )
        missing = [term for term in wanted if term not in known]
        if missing:
            statement = term_counts if scope is None else scoped_term_counts
            found = dict(connection.execute(statement, {"terms": missing, **parameters}).all())
            known.update({term: int(found.get(term) or 0) for term in missing})
        with self._lock:
            if generation == self._generation:
                if len(self._terms) + len(missing) > MAX_TERMS_KEPT:
                    self._terms = {}
                self._sizes[scope] = size
                self._terms.update({(scope, term): known[term] for term in missing})
        return TermCounts(size, {term: known[term] for term in wanted})
