"""PostgreSQL's keyword ranking with inverse document frequency: each query word's ``ts_rank_cd`` weighted.

``ts_rank_cd`` ranks by how often and how close the query's words occur, but every word counts alike: a chunk
that says "change" five times outranks the one that says "resolvers" once, though "change" is in a tenth of the
knowledge base and "resolvers" in one chunk. SQLite's BM25 weighs each word by its rarity; so, here, does
PostgreSQL: the score is the sum over the query's words of ``idf(word) * ts_rank_cd(chunk, word)``, with BM25's
inverse document frequency (:func:`idf`) over the chunk counts the knowledge base keeps per term
(``document_terms``, the support signal's statistics), read in the search's own transaction.

The statement is built per number of words (at most 32: :data:`marsrag.rag._query.MAX_TERMS`) and kept; the
words and their weights are bound parameters, never spelled into SQL.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import cache

from sqlalchemy import TextClause, bindparam, text

from marsrag.tokens import stems

__all__ = ["idf", "term_of", "weighted_search", "weights"]


def idf(found: int, size: int) -> float:
    """BM25's inverse document frequency of a term found in ``found`` of ``size`` chunks (always > 0)."""
    found = min(max(found, 0), size)
    return math.log(1 + (size - found + 0.5) / (found + 0.5))


def term_of(word: str) -> str | None:
    """The term ``document_terms`` counts ``word`` under (its stem), or None: a word it keeps no count of."""
    found = stems(word)
    return found[0] if found else None


def weights(words: Sequence[str], size: int, counts: Mapping[str, int]) -> list[float]:
    """Each word's :func:`idf` from the chunk ``counts`` of its term, among ``size`` chunks.

    A word with no term (two letters, or too long to count) weighs the mean of the others: neither the most
    telling word of the query nor nothing.
    """
    known = {word: idf(counts.get(term, 0), size) for word in words if (term := term_of(word)) is not None}
    neutral = sum(known.values()) / len(known) if known else 1.0
    return [known.get(word, neutral) for word in words]


@cache
def weighted_search(count: int, *, scoped: bool) -> TextClause:
    """The search statement for ``count`` words: parameters ``query`` (every word OR-ed), ``t0``.. (each word
    quoted for ``to_tsquery``), ``w0``.. (their weights), ``rest`` (every word but the most common, OR-ed; with
    one word, that word), ``common`` (the most common word's weight), ``limit`` and, when ``scoped``,
    ``collections``.

    Most matching chunks hold only the query's most common word: their score is that word's weight times one
    ``ts_rank_cd`` of the whole query (which, with one word present, ranks that word alone), so only the chunks
    holding a rarer word pay a rank per word. Normalization 1 divides each rank by 1 + log(length), as BM25
    discounts long chunks; the tsvector weighs headings (A) 1.0 and text (B) 0.4.

    The queries are parsed once, in a subquery kept apart by ``OFFSET 0``: psycopg prepares a statement run
    often, and PostgreSQL's generic plan for it would otherwise pull the subquery up and parse every
    ``to_tsquery`` again for each matching chunk (twice the time at 100,000 chunks, measured).
    """
    queries = ", ".join(f"to_tsquery('english', :t{i}) AS t{i}" for i in range(count))
    score = " + ".join(f"CAST(:w{i} AS double precision) * ts_rank_cd(c.fts, q.t{i}, 1)" for i in range(count))
    scope = " AND d.collection IN :collections" if scoped else ""
    statement = text(
        f"SELECT c.id, d.path, c.heading, c.text, CASE WHEN c.fts @@ q.rest THEN {score}"
        " ELSE CAST(:common AS double precision) * ts_rank_cd(c.fts, q.query, 1) END AS score"
        " FROM (SELECT to_tsquery('english', :query) AS query, to_tsquery('english', :rest) AS rest,"
        f" {queries} OFFSET 0) AS q,"
        " chunks AS c JOIN documents AS d ON d.id = c.document_id"
        f" WHERE c.fts @@ q.query{scope} ORDER BY score DESC, c.id LIMIT :limit"
    )
    return statement.bindparams(bindparam("collections", expanding=True)) if scoped else statement
