"""The knowledge base's term statistics are read once per generation and follow every write, on both backends."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event

from marsrag.store import open_store
from marsrag.store.base import KnowledgeStore
from marsrag.store.queries import ChunkText, DocumentVersion, TermCounts
from marsrag.store.sql import SqlRunStore
from marsrag.tokens import stems


@pytest.fixture
def observed(db_url: str) -> Iterator[tuple[KnowledgeStore, list[str]]]:
    """A knowledge store and the SQL statements its store's engine runs from now on (watched, not changed)."""
    with open_store(db_url) as store:
        assert isinstance(store, SqlRunStore)
        statements: list[str] = []

        def seen(connection: Any, cursor: Any, statement: str, *args: Any) -> None:
            statements.append(statement)

        event.listen(store.engine, "before_cursor_execute", seen)
        try:
            yield store.knowledge(), statements
        finally:
            event.remove(store.engine, "before_cursor_execute", seen)


def _ingest(knowledge: KnowledgeStore, path: str, texts: list[str]) -> None:
    pieces = [ChunkText(i, "Doc", text) for i, text in enumerate(texts)]
    terms = Counter[str]()
    for piece in pieces:
        terms.update(set(stems(f"{piece.heading}\n{piece.text}")))
    version = DocumentVersion("kb", path, f"sha-{path}-{len(texts)}", 10, f"/srv/{path}", 3)
    knowledge.replace_document(version, pieces, terms=dict(terms))


def test_counts_are_read_once_per_generation_and_follow_every_write(
    observed: tuple[KnowledgeStore, list[str]],
) -> None:
    knowledge, statements = observed
    _ingest(knowledge, "a.md", ["heater fuse", "heater line"])
    assert knowledge.term_counts(["heater", "fuse"]) == TermCounts(2, {"heater": 2, "fuse": 1})
    statements.clear()
    assert knowledge.term_counts(["heater", "fuse"]) == TermCounts(2, {"heater": 2, "fuse": 1})
    reads = [text for text in statements if text.lstrip().upper().startswith("SELECT")]
    assert len(reads) == 1 and "generation" in reads[0]  # nothing was written since: nothing counted again
    assert knowledge.term_counts(["line"]) == TermCounts(2, {"line": 1})  # a new term is read, the size is kept
    _ingest(knowledge, "b.md", ["oxygen fuse"])
    assert knowledge.term_counts(["heater", "fuse"]) == TermCounts(3, {"heater": 2, "fuse": 2})
    assert knowledge.term_counts(["fuse"], collections=["kb"]) == TermCounts(3, {"fuse": 2})
    assert knowledge.term_counts(["fuse"], collections=["other"]) == TermCounts(0, {"fuse": 0})
    knowledge.remove_documents([("kb", "a.md")])
    assert knowledge.term_counts(["heater", "fuse"]) == TermCounts(1, {"heater": 0, "fuse": 1})


def test_a_write_from_another_store_is_seen_by_the_next_read(db_url: str) -> None:
    """Two processes' stores (two engines): the one that did not write reads the new counts all the same."""
    with open_store(db_url) as first, open_store(db_url) as second:
        _ingest(first.knowledge(), "a.md", ["heater fuse"])
        assert second.knowledge().term_counts(["heater"]) == TermCounts(1, {"heater": 1})
        _ingest(first.knowledge(), "b.md", ["heater line", "heater oxygen"])
        assert second.knowledge().term_counts(["heater"]) == TermCounts(3, {"heater": 3})
