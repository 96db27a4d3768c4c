"""The conformance kit's knowledge base management cases: listing, removing, and keeping to collections.

Every derived table must follow a removal: the full-text index (search finds nothing of a removed document) and
the term counts (equal to a recount from the chunks left, what :func:`recount` computes through the interface).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from marsrag.store.base import KnowledgeStore, RunStore
from marsrag.store.queries import ChunkText, DocumentVersion, Removal, TermCounts
from marsrag.tokens import stems

__all__ = ["KnowledgeConformance", "recount"]

#: (collection, path, chunks): the documents every case here starts from.
_DOCUMENTS: tuple[tuple[str, str, tuple[ChunkText, ...]], ...] = (
    (
        "handbook",
        "kb/heater.md",
        (
            ChunkText(0, "Heater", "Restart the scrubber heater after a cold start"),
            ChunkText(1, "Heater > Checks", "Check the heater fuse and the oxygen line"),
        ),
    ),
    ("handbook", "kb/filters.md", (ChunkText(0, "Filters", "Filters clog when the oxygen line freezes"),)),
    ("runbooks", "kb/heater.md", (ChunkText(0, "Heater runbook", "Page the heater on-call engineer"),)),
    ("runbooks", "ops/empty.md", ()),
)


def recount(knowledge: KnowledgeStore, terms: Sequence[str], collections: Sequence[str] | None = None) -> TermCounts:
    """The term counts the documents still listed make, recounted from their chunks as the cases stored them
    (never from the counts the store keeps)."""
    counts: Counter[str] = Counter()
    total = 0
    for document in knowledge.documents(collections=collections):
        for hit in _chunks_of(document.collection, document.path):
            counts.update(set(stems(f"{hit.heading}\n{hit.text}")))
            total += 1
    return TermCounts(total, {term: counts.get(term, 0) for term in dict.fromkeys(terms)})


def _chunks_of(collection: str, path: str) -> list[ChunkText]:
    return [piece for name, where, pieces in _DOCUMENTS if (name, where) == (collection, path) for piece in pieces]


def _fill(knowledge: KnowledgeStore) -> None:
    for collection, path, pieces in _DOCUMENTS:
        terms = Counter[str]()
        for piece in pieces:
            terms.update(set(stems(f"{piece.heading}\n{piece.text}")))
        version = DocumentVersion(collection, path, f"sha-{collection}-{path}", 100, f"/srv/{collection}/{path}", 3)
        knowledge.replace_document(version, list(pieces), terms=dict(terms))


_TERMS = ("heater", "oxygen", "filter", "engin", "absent")


class KnowledgeConformance:
    """What every store's knowledge base must do to be listed, pruned and kept to collections."""

    def test_an_empty_knowledge_base_lists_nothing(self, store: RunStore) -> None:
        """No collections, no documents; removing anything finds it missing."""
        knowledge = store.knowledge()
        assert knowledge.collections() == [] and knowledge.documents() == []
        assert knowledge.remove_documents([("handbook", "kb/a.md")]) == Removal(
            missing_documents=(("handbook", "kb/a.md"),)
        )
        assert knowledge.remove_documents(collections=["handbook"]) == Removal(missing_collections=("handbook",))

    def test_collections_and_documents_are_listed_with_their_chunk_counts(self, store: RunStore) -> None:
        """Collections by name with documents and chunks; documents by collection then path, a chunkless one at 0."""
        knowledge = store.knowledge()
        before = datetime.now(UTC) - timedelta(seconds=5)
        _fill(knowledge)
        listed = [(c.name, c.documents, c.chunks) for c in knowledge.collections()]
        assert listed == [("handbook", 2, 3), ("runbooks", 2, 1)]
        documents = knowledge.documents()
        assert [(d.collection, d.path, d.chunks) for d in documents] == [
            ("handbook", "kb/filters.md", 1),
            ("handbook", "kb/heater.md", 2),
            ("runbooks", "kb/heater.md", 1),
            ("runbooks", "ops/empty.md", 0),
        ]
        assert documents[0].source == "/srv/handbook/kb/filters.md" and documents[0].size == 100
        assert all(d.ingested_at.tzinfo is not None and d.ingested_at >= before for d in documents)
        assert all(c.ingested_at.tzinfo is not None for c in knowledge.collections())
        only = knowledge.documents(collections=["runbooks"])
        assert [d.path for d in only] == ["kb/heater.md", "ops/empty.md"]
        assert knowledge.documents(collections=[]) == [] and knowledge.documents(collections=["nope"]) == []

    def test_removing_documents_removes_their_chunks_index_entries_and_term_counts(self, store: RunStore) -> None:
        """The removed document is never found again; the other collection's same path stays; counts recount."""
        knowledge = store.knowledge()
        _fill(knowledge)
        removal = knowledge.remove_documents([("handbook", "kb/heater.md")])
        assert removal.complete and removal.chunks == 2
        assert [(d.collection, d.path, d.chunks) for d in removal.documents] == [("handbook", "kb/heater.md", 2)]
        assert [hit.heading for hit in knowledge.search_chunks(["heater"], 10)] == ["Heater runbook"]
        assert [hit.text for hit in knowledge.search_chunks(["fuse"], 10)] == []
        assert knowledge.term_counts(_TERMS) == recount(knowledge, _TERMS)
        assert knowledge.term_counts(_TERMS).counts["heater"] == 1
        assert ("handbook", "kb/heater.md") not in knowledge.known_hashes()
        assert [(c.name, c.documents, c.chunks) for c in knowledge.collections()] == [
            ("handbook", 1, 1),
            ("runbooks", 2, 1),
        ]

    def test_a_removal_is_all_or_nothing(self, store: RunStore) -> None:
        """One missing key (or empty collection) among several: nothing removed, the missing ones named."""
        knowledge = store.knowledge()
        _fill(knowledge)
        removal = knowledge.remove_documents(
            [("handbook", "kb/heater.md"), ("handbook", "kb/gone.md")], collections=["runbooks", "nope"]
        )
        assert removal == Removal(missing_documents=(("handbook", "kb/gone.md"),), missing_collections=("nope",))
        assert len(knowledge.documents()) == 4
        assert len(knowledge.search_chunks(["heater"], 10)) == 3

    def test_removing_a_collection_removes_all_its_documents(self, store: RunStore) -> None:
        """Every document of it, chunkless ones too; the other collection untouched; counts recount."""
        knowledge = store.knowledge()
        _fill(knowledge)
        removal = knowledge.remove_documents(collections=["runbooks"])
        assert [(d.path, d.chunks) for d in removal.documents] == [("kb/heater.md", 1), ("ops/empty.md", 0)]
        assert [c.name for c in knowledge.collections()] == ["handbook"]
        assert knowledge.term_counts(_TERMS) == recount(knowledge, _TERMS)
        assert knowledge.search_chunks(["engineer"], 10) == []
        # Ingesting it again afterwards adds it anew.
        version = DocumentVersion("runbooks", "kb/heater.md", "sha-again", 10, None, 3)
        assert knowledge.replace_document(version, [ChunkText(0, "Heater", "Page the engineer")]).outcome == "added"
        assert [hit.text for hit in knowledge.search_chunks(["engineer"], 10)] == ["Page the engineer"]

    def test_a_rare_word_outranks_a_common_word_said_often(self, store: RunStore) -> None:
        """Search weighs each word by how rare it is: the one chunk naming the rare word of the query beats a
        chunk repeating its most common word (BM25 on SQLite; on PostgreSQL, ``ts_rank_cd`` weighted by it)."""
        knowledge = store.knowledge()
        pieces = [
            ChunkText(0, "Changes", "Every change needs a change ticket, a change window and a change owner"),
            *(ChunkText(i, f"Changes > Step {i}", f"Record the change in step {i} of the log") for i in range(1, 7)),
            ChunkText(7, "Caching", "Resolvers kept the old record for hours"),
        ]
        terms = Counter[str]()
        for piece in pieces:
            terms.update(set(stems(f"{piece.heading}\n{piece.text}")))
        version = DocumentVersion("handbook", "kb/changes.md", "sha-changes", 100, "/srv/kb/changes.md", 3)
        knowledge.replace_document(version, pieces, terms=dict(terms))
        hits = knowledge.search_chunks(["change", "resolvers"], 3)
        assert [hit.heading for hit in hits][:2] == ["Caching", "Changes"]

    def test_search_and_term_counts_keep_to_collections(self, store: RunStore) -> None:
        """Only the collections' chunks are ranked (the limit applies among them), and only they are counted."""
        knowledge = store.knowledge()
        _fill(knowledge)
        runbooks = knowledge.search_chunks(["heater"], 1, collections=["runbooks"])
        assert [hit.heading for hit in runbooks] == ["Heater runbook"]
        handbook = knowledge.search_chunks(["heater", "engineer"], 10, collections=["handbook"])
        assert sorted(hit.heading for hit in handbook) == ["Heater", "Heater > Checks"]
        both = knowledge.search_chunks(["heater"], 10, collections=["handbook", "runbooks"])
        assert len(both) == 3 and both == knowledge.search_chunks(["heater"], 10)
        assert knowledge.search_chunks(["heater"], 10, collections=["nope"]) == []
        assert knowledge.search_chunks(["heater"], 10, collections=[]) == []
        assert knowledge.term_counts(_TERMS, collections=["handbook"]) == recount(knowledge, _TERMS, ["handbook"])
        assert knowledge.term_counts(_TERMS, collections=["runbooks"]) == TermCounts(
            1, {"heater": 1, "oxygen": 0, "filter": 0, "engin": 1, "absent": 0}
        )
        assert knowledge.term_counts(_TERMS, collections=["nope"]) == TermCounts(0, dict.fromkeys(_TERMS, 0))
