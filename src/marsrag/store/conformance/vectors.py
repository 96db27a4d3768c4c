"""The conformance kit's vector cases: chunk vectors stored with their embedder, searched exactly, never mixed.

The vectors here are tiny (4 dimensions) and chosen so that the nearest of each query is known by hand; the
exact scan must find them in that order, keep to collections, forget removed and replaced chunks, and never
compare vectors of another embedder or dimension. A second store opened on the same database sees every write
(the in-memory matrix of an exact scan is reloaded when the knowledge base's generation moves).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence

from marsrag.store import open_store
from marsrag.store.base import RunStore
from marsrag.store.queries import ChunkText, ChunkVectors, DocumentVersion

__all__ = ["VectorConformance", "packed"]

#: The embedder the cases store as, and another one whose vectors must never be compared with its.
EMBEDDER = "test/axes-4"
OTHER = "test/other-4"


def packed(values: Sequence[float]) -> bytes:
    """``values`` scaled to unit length, as float32 little-endian bytes: how vectors are stored."""
    norm = math.sqrt(sum(value * value for value in values)) or 1.0
    return struct.pack(f"<{len(values)}f", *(value / norm for value in values))


def _store(store: RunStore, collection: str, path: str, pieces: Sequence[tuple[str, Sequence[float]]]) -> None:
    chunks = [ChunkText(position, path, text) for position, (text, _) in enumerate(pieces)]
    vectors = ChunkVectors(EMBEDDER, 4, [packed(vector) for _, vector in pieces])
    version = DocumentVersion(collection, path, f"sha-{collection}-{path}-{len(pieces)}", 10, None, 3)
    store.knowledge().replace_document(version, chunks, vectors=vectors)


def _fill(store: RunStore) -> None:
    _store(store, "handbook", "kb/east.md", [("east", (1, 0, 0, 0)), ("north-east", (1, 1, 0, 0))])
    _store(store, "handbook", "kb/north.md", [("north", (0, 1, 0, 0))])
    _store(store, "runbooks", "kb/up.md", [("up", (0, 0, 1, 0)), ("east-up", (1, 0, 1, 0))])


def _texts(store: RunStore, query: Sequence[float], limit: int = 10, **options: object) -> list[str]:
    hits = store.knowledge().search_vectors(packed(query), EMBEDDER, limit, **options)  # type: ignore[arg-type]
    return [hit.text for hit in hits]


class VectorConformance:
    """What every store's knowledge base must do with chunk vectors."""

    def test_vectors_are_searched_nearest_first_with_cosine_scores(self, store: RunStore) -> None:
        _fill(store)
        hits = store.knowledge().search_vectors(packed((1, 0.1, 0, 0)), EMBEDDER, 3)
        assert [hit.text for hit in hits] == ["east", "north-east", "east-up"]
        assert [hit.document_path for hit in hits] == ["kb/east.md", "kb/east.md", "kb/up.md"]
        assert 0.99 < hits[0].score <= 1.0 + 1e-6 and hits[0].score > hits[1].score > hits[2].score
        # Ties (here every chunk, orthogonal to the query) go to the older chunk, as in the keyword search.
        orthogonal = store.knowledge().search_vectors(packed((0, 0, 0, 1)), EMBEDDER, 10)
        assert [hit.text for hit in orthogonal] == ["east", "north-east", "north", "up", "east-up"]
        assert {hit.score for hit in orthogonal} == {0.0}

    def test_another_store_on_the_same_database_sees_every_write(self, store: RunStore) -> None:
        _fill(store)
        with open_store(store.knowledge().url) as other:
            assert _texts(other, (1, 0, 0, 0), 1) == ["east"]  # loaded into the other's memory
            _store(store, "handbook", "kb/east.md", [("west", (-1, 0, 0, 0))])
            assert _texts(other, (1, 0, 0, 0), 1) == ["east-up"]
            store.knowledge().remove_documents([("runbooks", "kb/up.md")])
            assert _texts(other, (1, 0, 0, 0), 10) == ["north", "west"]

    def test_vector_search_keeps_to_collections_and_to_its_embedder_and_dimension(self, store: RunStore) -> None:
        _fill(store)
        assert _texts(store, (1, 0, 0, 0), 2, collections=["runbooks"]) == ["east-up", "up"]
        assert _texts(store, (1, 0, 0, 0), 2, collections=[]) == []
        assert store.knowledge().search_vectors(packed((1, 0, 0, 0)), OTHER, 5) == []
        assert store.knowledge().search_vectors(packed((1, 0, 0)), EMBEDDER, 5) == []  # another dimension
        assert store.knowledge().embedders() == {EMBEDDER: (4, 5)}
        assert store.knowledge().embedders(collections=["runbooks"]) == {EMBEDDER: (4, 2)}

    def test_replacing_and_removing_documents_replaces_and_removes_their_vectors(self, store: RunStore) -> None:
        _fill(store)
        assert _texts(store, (1, 0, 0, 0), 1) == ["east"]  # the exact scan has loaded them
        _store(store, "handbook", "kb/east.md", [("west", (-1, 0, 0, 0))])
        assert _texts(store, (1, 0, 0, 0), 1) == ["east-up"]
        assert _texts(store, (-1, 0, 0, 0), 1) == ["west"]
        store.knowledge().remove_documents(collections=["runbooks"])
        assert _texts(store, (1, 0, 0, 0), 10) == ["north", "west"]
        assert store.knowledge().embedders() == {EMBEDDER: (4, 2)}

    def test_a_document_s_vectors_are_read_back_by_chunk_for_reuse(self, store: RunStore) -> None:
        _fill(store)
        stored = store.knowledge().document_vectors(("handbook", "kb/east.md"), EMBEDDER)
        assert stored == {
            ("kb/east.md", "east"): packed((1, 0, 0, 0)),
            ("kb/east.md", "north-east"): packed((1, 1, 0, 0)),
        }
        assert store.knowledge().document_vectors(("handbook", "kb/east.md"), OTHER) == {}
        assert store.knowledge().document_vectors(("handbook", "kb/absent.md"), EMBEDDER) == {}

    def test_chunks_without_a_vector_of_an_embedder_are_listed_and_set_then_never_mixed(self, store: RunStore) -> None:
        _fill(store)
        version = DocumentVersion("handbook", "kb/plain.md", "sha-plain", 10, None, 3)
        store.knowledge().replace_document(version, [ChunkText(0, "Plain", "no vector yet")])
        [plain] = store.knowledge().unembedded(EMBEDDER, 10)
        assert (plain.heading, plain.text) == ("Plain", "no vector yet")
        assert len(store.knowledge().unembedded(OTHER, 10)) == 6
        assert len(store.knowledge().unembedded(OTHER, 2)) == 2
        assert store.knowledge().set_vectors(EMBEDDER, 4, {plain.chunk_id: packed((0, 0, 0, 1))}) == 1
        assert _texts(store, (0, 0, 0, 1), 1) == ["no vector yet"]
        assert store.knowledge().unembedded(EMBEDDER, 10) == []
        # Another embedder's vector replaces the chunk's: one vector per chunk, searched only as that embedder's.
        assert store.knowledge().set_vectors(OTHER, 4, {plain.chunk_id: packed((0, 0, 0, 1))}) == 1
        assert "no vector yet" not in _texts(store, (0, 0, 0, 1), 10)
        assert [hit.text for hit in store.knowledge().search_vectors(packed((0, 0, 0, 1)), OTHER, 5)] == [
            "no vector yet"
        ]
        assert store.knowledge().embedders() == {EMBEDDER: (4, 5), OTHER: (4, 1)}
        assert store.knowledge().set_vectors(EMBEDDER, 4, {10**9: packed((1, 0, 0, 0))}) == 0  # no such chunk
