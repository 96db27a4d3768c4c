"""Free text to the words of a full-text query that cannot fail (the store quotes each and ORs them together).

A task's query is prose (its hook and the run's goal), not search syntax, and FTS5 rejects much of prose
(``"``, ``*``, ``NEAR(``, a bare ``AND``). So only the words of :mod:`marsrag.tokens` survive, stopwords go
(they would match nearly every chunk and slow the query down without changing the ranking much), and each
word is quoted, so no input can become an operator. Any word may match (OR): the ranking, not the filter,
rewards matching many.
"""

from __future__ import annotations

from marsrag.tokens import words

#: Words kept from one query at most: a 10 KB query still makes a bounded search.
MAX_TERMS = 32
#: Longer "words" are noise (hashes, base64) and would never match an indexed token anyway.
MAX_TERM_CHARS = 40


def terms(query: str) -> list[str]:
    """The words of ``query`` worth searching for: lower-cased, deduplicated, in order, at most MAX_TERMS."""
    found: dict[str, None] = {}
    for word in words(query):
        if len(word) > MAX_TERM_CHARS or (len(word) == 1 and not word.isdigit()):
            continue
        found.setdefault(word)
        if len(found) == MAX_TERMS:
            break
    return list(found)
