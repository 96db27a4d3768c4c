"""The knowledge base: files ingested as chunks into the run store's database, searched by full text.

It lives in the same database as the run store, behind the store's :class:`marsrag.store.KnowledgeStore`
(:meth:`marsrag.store.RunStore.knowledge`), opened the same way from a URL. This module decides what is stored
and searched (files found, read, hashed, chunked; a query's words); the store keeps it. A document is its
collection and path (:mod:`marsrag.rag.identity`); citations show the path. Ingest writes one transaction per
changed file, so a reader never sees a document half replaced; an unchanged file (same SHA-256) costs a read and
a hash, no write. A document stored before collections existed (collection ``legacy``) is taken over by the
first collection that ingests its path, so upgrading and ingesting again adds no duplicate. Search ranks with
BM25 on SQLite (FTS5) and ``ts_rank_cd`` on PostgreSQL, headings weighing 2.5 times the text on both.
"""

from __future__ import annotations

import copy
import hashlib
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from marsrag.rag._discover import Found as FoundFile
from marsrag.rag._discover import discover
from marsrag.rag._query import terms
from marsrag.rag.chunking import CHUNKER_VERSION, chunk_blocks, cite
from marsrag.rag.embedders.base import Embedder, EmbeddingError
from marsrag.rag.fusion import Fused, fuse
from marsrag.rag.identity import check_collection
from marsrag.rag.readers import NotTextError, decode, parse
from marsrag.rag.report import IngestReport, ReplacedDocument, SkippedFile
from marsrag.rag.support import SIMILARITY_SCALES, SimilarityScale
from marsrag.store import (
    LEGACY_COLLECTION,
    ChunkHit,
    ChunkText,
    ChunkVectors,
    DocumentChange,
    DocumentKey,
    DocumentVersion,
    KnowledgeStore,
    RunStore,
    TermCounts,
    open_store,
)
from marsrag.tokens import stems

__all__ = ["KEYWORD", "MAX_FILE_BYTES", "PER_DOCUMENT", "VECTOR", "Found", "KnowledgeBase", "ProgressCallback"]

logger = logging.getLogger(__name__)
# A library reports through its loggers but leaves output to the application: no "last resort" stderr lines.
logger.addHandler(logging.NullHandler())

#: Called after each file with (files done, files in all).
ProgressCallback = Callable[[int, int], None]

#: Larger files are skipped: no document worth citing is this big, and it would all sit in memory at once.
MAX_FILE_BYTES = 16 * 1024 * 1024
#: The default cap of chunks per document in one search's results (see :meth:`KnowledgeBase.search`).
PER_DOCUMENT = 2
# Candidates read per place when the cap applies: enough for the cap to find other documents.
_POOL_FACTOR = 4
# Stored chunks embedded per batch when re-embedding: one read, one embedder call, one write.
_EMBED_BATCH = 256
#: The retrievers' names, in ``retrievers`` of each result: full-text search, and the embedder's vectors.
KEYWORD = "keyword"
VECTOR = "vector"


@dataclass(frozen=True)
class Found:
    """What a search found: the results, the retrievers whose lists were fused, and why one was skipped."""

    results: list[dict[str, Any]]
    #: The retrievers that answered, in fusion order (``keyword``, then ``vector`` when an embedder answered).
    retrievers: list[str]
    #: Why the vector search did not answer (the embedder failed, no vector of it stored); None: it did or
    #: there is no embedder.
    skipped: str | None = None


class KnowledgeBase:
    """Documents and their chunks in a MarsRAG database; :meth:`search` makes it a runtime ``Retriever``."""

    def __init__(
        self,
        store: RunStore,
        *,
        embedder: Embedder | None = None,
        scale: SimilarityScale | None = None,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        """Use the knowledge base kept in an open run store's database (:meth:`RunStore.knowledge`).

        ``embedder``: what embeds chunks at ingest and queries at search, making search hybrid (keyword and
        vector lists fused); None: keyword search only (vectors stored by others are left as they are).
        ``scale``: the embedder's similarity scale for the support signal, as the user calibrated it (``marsrag
        kb calibrate``); None: the one known for its identity, if any (:data:`SIMILARITY_SCALES`).
        """
        self._documents: KnowledgeStore = store.knowledge()
        self.url = self._documents.url
        self._on_close = on_close
        self.embedder = embedder
        self.scale = scale
        #: The collections searched and counted (None: all of them); see :meth:`scoped`.
        self.collections: tuple[str, ...] | None = None

    def scoped(self, collections: Sequence[str] | None) -> KnowledgeBase:
        """This knowledge base kept to ``collections`` for :meth:`search` and :meth:`term_counts` (None: all).

        A view sharing this one's connections: closing it closes nothing. The names are not checked here
        (see :func:`marsrag.rag.manage.check_collections`): an unknown one just holds nothing.
        """
        view = copy.copy(self)
        view._on_close = None
        view.collections = None if collections is None else tuple(dict.fromkeys(collections))
        return view

    def collection_names(self) -> list[str]:
        """The names of the collections holding documents, sorted.

        Raises:
            StoreError: the database fails.
        """
        return [collection.name for collection in self._documents.collections()]

    @classmethod
    def open(
        cls, url: str | None = None, *, embedder: Embedder | None = None, scale: SimilarityScale | None = None
    ) -> KnowledgeBase:
        """Open the knowledge base in the database at ``url`` (default: the run store's), migrating it as needed.

        Raises:
            StoreError: a bad URL, or a database that cannot be reached or migrated.
        """
        store = open_store(url)
        return cls(store, embedder=embedder, scale=scale, on_close=store.close)

    def close(self) -> None:
        """Release the connections of a knowledge base made by :meth:`open` (idempotent)."""
        if self._on_close is not None:
            self._on_close()

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def ingest(
        self, paths: Iterable[str | Path], progress: ProgressCallback | None = None, *, collection: str | None = None
    ) -> IngestReport:
        """Ingest files and folders (recursively): new files added, changed ones replaced, unchanged ones left.

        The documents go into ``collection``, else each root's default collection (the resolved folder their
        paths start in), so same-named folders elsewhere never replace each other's documents. Each
        replacement is in the report with its reason. Files of other types are ignored; binary, non-UTF-8,
        unreadable and oversized files, and symlinks leading outside ``paths``, are skipped: named in the
        report and logged as warnings.

        With an :attr:`embedder`, each changed document's chunks are embedded with it (a chunk unchanged from
        the version replaced keeps its vector), then every stored chunk without a vector of it is embedded:
        chunks ingested before, or by another embedder (re-embedded, never mixed: one vector per chunk).

        Raises:
            InputError: a path does not exist, or ``collection`` cannot name a collection.
            StoreError: the database fails (files already ingested stay ingested).
            EmbeddingError: the embedder failed (files already ingested stay ingested, with their vectors).
        """
        if collection is not None:
            check_collection(collection)
        found = discover(paths, collection=collection)
        report = IngestReport(ignored=found.ignored, skipped=list(found.skipped))
        report.collections = list(dict.fromkeys(item.collection for item in found.files))
        report.embedder = self.embedder.identity if self.embedder is not None else None
        known = self._known_hashes()
        for done, item in enumerate(found.files, start=1):
            self._ingest_file(item, known, report)
            if progress is not None:
                progress(done, len(found.files))
        for skipped in report.skipped:
            logger.warning("skipped %s: %s", skipped.path, skipped.reason)
        self._embed_missing(report)
        return report

    def embed_missing(self) -> int:
        """Embed every stored chunk with no vector of :attr:`embedder` (none, or another embedder's); how many.

        Raises:
            StoreError: the database fails.
            EmbeddingError: the embedder failed (the chunks embedded before it stay embedded).
        """
        report = IngestReport()
        self._embed_missing(report)
        return report.embedded

    def search(self, query: str, limit: int = 5, *, per_document: int | None = PER_DOCUMENT) -> list[dict[str, Any]]:
        """The chunks that best match ``query`` (free text; any string is safe), best first.

        Each hit is ``{"chunk_id", "source", "heading", "text", "score", "retrievers"}``; ``source`` is
        ``path#heading``, ready to cite; ``retrievers`` names each retriever that found it with its rank there
        (``{"keyword": 1, "vector": 3}``). With an :attr:`embedder`, the keyword and vector lists are fused by
        reciprocal rank (:mod:`marsrag.rag.fusion`) and ``score`` is the fused score; else ``score`` is the
        keyword search's. A query with no searchable word gives no keyword hits. A vector search that cannot
        answer (the embedder fails, no vector of it is stored) leaves the keyword list alone: see :meth:`find`.

        ``per_document``: at most this many chunks of one document while others match (None: no cap). Every
        chunk's heading path starts with its document's title, so a document whose title matches the query
        would otherwise fill every place; the cap makes room for the runbook beside the incident. When fewer
        documents match than the cap leaves room for, the places left go to the next best chunks in rank order.

        Raises:
            ValueError: a negative limit.
            StoreError: the database fails.
        """
        return self.find(query, limit, per_document=per_document).results

    def find(
        self,
        query: str,
        limit: int = 5,
        *,
        per_document: int | None = PER_DOCUMENT,
        retrievers: Sequence[str] = (KEYWORD, VECTOR),
    ) -> Found:
        """:meth:`search`'s results, with which retrievers answered and why one did not (see :class:`Found`).

        ``retrievers``: the lists to fuse (the vector list only with an :attr:`embedder`); one of them alone
        measures what it finds by itself.

        Raises:
            ValueError: a negative limit.
            StoreError: the database fails.
        """
        if limit < 0:
            raise ValueError(f"limit must be >= 0, got {limit}")
        words = terms(query) if KEYWORD in retrievers else []
        vectors = self.embedder is not None and VECTOR in retrievers
        if limit == 0 or (not words and not vectors):
            return Found([], [name for name in (KEYWORD, VECTOR) if name in retrievers and (name != VECTOR or vectors)])
        size = limit if per_document is None else limit * _POOL_FACTOR
        lists: dict[str, list[ChunkHit]] = {}
        if KEYWORD in retrievers:
            lists[KEYWORD] = self._documents.search_chunks(words, size, collections=self.collections) if words else []
        skipped = None
        if vectors:
            vector, skipped = self._vector_search(query, size)
            if skipped is None:
                lists[VECTOR] = vector
        fused = fuse(lists)
        if len(lists) == 1:  # one list: its own scores (BM25, ts_rank_cd or cosine), as before fusion existed
            for entry in fused:
                entry.score = entry.hit.score
        chosen = fused[:limit] if per_document is None else _spread(fused, limit, per_document)
        similarity = {hit.chunk_id: hit.score for hit in lists.get(VECTOR, [])}
        results = [
            {
                "chunk_id": entry.hit.chunk_id,
                "source": cite(entry.hit.document_path, entry.hit.heading),
                "heading": entry.hit.heading,
                "text": entry.hit.text,
                "score": round(entry.score, 6),
                "retrievers": dict(entry.ranks),
                # Its cosine to the query, when the vector list found it: the support signal's similarity evidence.
                **(
                    {"similarity": round(similarity[entry.hit.chunk_id], 4)} if entry.hit.chunk_id in similarity else {}
                ),
            }
            for entry in chosen
        ]
        return Found(results, list(lists), skipped)

    def _vector_search(self, query: str, size: int) -> tuple[list[ChunkHit], str | None]:
        """The vector list for ``query``, or why there is none (the embedder failed, no vector of it stored)."""
        assert self.embedder is not None
        identity = self.embedder.identity
        try:
            vector = self.embedder.embed([query])[0]
        except EmbeddingError as error:
            logger.warning("vector search skipped: %s", error)
            return [], f"vector search skipped: {error}"
        hits = self._documents.search_vectors(vector.tobytes(), identity, size, collections=self.collections)
        if hits:
            return hits, None
        stored = self._documents.embedders(collections=self.collections)
        if identity in stored and stored[identity][0] == len(vector):
            return [], None  # its vectors are there: none in this scope is near enough to count
        if identity in stored:
            return [], (
                f"vector search skipped: the knowledge base's vectors of {identity} have {stored[identity][0]} "
                f"dimensions, the embedder now answers {len(vector)}: ingest again to re-embed it"
            )
        if stored:
            return [], (
                f"vector search skipped: the knowledge base was embedded with {', '.join(sorted(stored))}, not "
                f"{identity}: ingest again with this embedder to re-embed it"
            )
        if self._documents.term_counts([], collections=self.collections).chunks:
            return [], f"vector search skipped: no chunk has a vector of {identity}: ingest again to embed them"
        return [], None  # an empty knowledge base: nothing to find either way

    @property
    def similarity_scale(self) -> SimilarityScale | None:
        """The :attr:`embedder`'s calibrated similarity scale for the support signal: :attr:`scale`, else the one
        known for its identity (None: no embedder, or none is known: similarity is then no evidence)."""
        if self.embedder is None:
            return None
        return self.scale if self.scale is not None else SIMILARITY_SCALES.get(self.embedder.identity)

    def term_counts(self, terms: Sequence[str]) -> TermCounts:
        """How many chunks the knowledge base holds, and how many contain each term (a stem of
        :func:`marsrag.tokens.stems`): what :mod:`marsrag.rag.support` weighs a question's terms by. Kept
        to :attr:`collections`, as :meth:`search` is: support is measured against what the run can retrieve.

        Raises:
            StoreError: the database fails.
        """
        return self._documents.term_counts(terms, collections=self.collections)

    def _known_hashes(self) -> dict[DocumentKey, str]:
        # One read up front lets unchanged files skip the write transaction (and its lock) entirely.
        return self._documents.known_hashes(chunker=CHUNKER_VERSION)

    def _ingest_file(self, item: FoundFile, known: dict[DocumentKey, str], report: IngestReport) -> None:
        try:
            data = _read(item.path)
        except OSError as error:
            report.skipped.append(SkippedFile(str(item.path), f"cannot read: {error.strerror or error}"))
            return
        sha256 = hashlib.sha256(data).hexdigest()
        if known.get((item.collection, item.key)) == sha256:
            report.unchanged += 1
            return
        try:
            blocks = parse(decode(data), item.path.suffix)
        except NotTextError as error:
            report.skipped.append(SkippedFile(str(item.path), str(error)))
            return
        pieces = [ChunkText(p.position, p.heading, p.text) for p in chunk_blocks(item.key, blocks)]
        version = DocumentVersion(item.collection, item.key, sha256, len(data), str(item.real), CHUNKER_VERSION)
        vectors = self._vectors((item.collection, item.key), pieces, report)
        change = self._documents.replace_document(
            version, pieces, adopt_from=LEGACY_COLLECTION, terms=chunk_terms(pieces), vectors=vectors
        )
        if change.outcome == "added":
            report.added += 1
        elif change.outcome == "updated":
            report.updated += 1
            report.replaced.append(ReplacedDocument(item.key, item.collection, _why(change, version)))
        else:
            report.unchanged += 1
        if change.outcome != "unchanged":
            report.chunks_written += len(pieces)

    def _vectors(self, key: DocumentKey, pieces: Sequence[ChunkText], report: IngestReport) -> ChunkVectors | None:
        """The pieces' vectors by :attr:`embedder`: the stored version's for unchanged chunks, the rest embedded."""
        if self.embedder is None or not pieces:
            return None
        identity = self.embedder.identity
        stored = self._documents.document_vectors(key, identity)
        wanted = [piece for piece in pieces if (piece.heading, piece.text) not in stored]
        made = self.embedder.embed([embedding_text(piece.heading, piece.text) for piece in wanted]) if wanted else None
        fresh = {(p.heading, p.text): made[i].tobytes() for i, p in enumerate(wanted)} if made is not None else {}
        vectors = [stored.get((p.heading, p.text)) or fresh[(p.heading, p.text)] for p in pieces]
        sizes = {len(vector) for vector in vectors}
        if len(sizes) != 1:  # the stored ones came from the same identity at another dimension: embed all anew
            made = self.embedder.embed([embedding_text(p.heading, p.text) for p in pieces])
            vectors, wanted = [row.tobytes() for row in made], list(pieces)
        report.embedded += len(wanted)
        report.reused += len(pieces) - len(wanted)
        return ChunkVectors(identity, len(vectors[0]) // 4, vectors)

    def _embed_missing(self, report: IngestReport) -> None:
        """Embed the stored chunks with no vector of :attr:`embedder`, a batch at a time (see :meth:`embed_missing`)."""
        if self.embedder is None:
            return
        identity = self.embedder.identity
        while batch := self._documents.unembedded(identity, _EMBED_BATCH):
            made = self.embedder.embed([embedding_text(chunk.heading, chunk.text) for chunk in batch])
            stored = self._documents.set_vectors(
                identity, int(made.shape[1]), {chunk.chunk_id: made[i].tobytes() for i, chunk in enumerate(batch)}
            )
            report.embedded += stored
            if stored == 0:  # every chunk of the batch was removed meanwhile: the next read has others
                continue


def embedding_text(heading: str, text: str) -> str:
    """What a chunk's vector is made of: its heading path (the document's title first), then its text."""
    return f"{heading}\n{text}" if heading else text


def chunk_terms(pieces: Iterable[ChunkText]) -> dict[str, int]:
    """How many of a document's chunks contain each term (heading and text; a term counts once per chunk)."""
    counts: Counter[str] = Counter()
    for piece in pieces:
        counts.update(set(stems(f"{piece.heading}\n{piece.text}")))
    return dict(counts)


def _spread(pool: list[Fused], limit: int, per_document: int) -> list[Fused]:
    """The best ``limit`` hits of ``pool`` with at most ``per_document`` per document, topped up in rank order."""
    kept: list[Fused] = []
    counts: dict[str, int] = {}
    for entry in pool:
        path = entry.hit.document_path
        if counts.get(path, 0) < per_document:
            kept.append(entry)
            counts[path] = counts.get(path, 0) + 1
            if len(kept) == limit:
                break
    if len(kept) < limit:
        chosen = {entry.hit.chunk_id for entry in kept}
        kept.extend([entry for entry in pool if entry.hit.chunk_id not in chosen][: limit - len(kept)])
    order = {entry.hit.chunk_id: position for position, entry in enumerate(pool)}
    return sorted(kept, key=lambda entry: order[entry.hit.chunk_id])


def _why(change: DocumentChange, version: DocumentVersion) -> str:
    """Why a stored document was replaced: its content changed, and where the version replaced came from."""
    if change.rechunked:
        return "cut again: the stored chunks came from an older chunker (content unchanged)"
    if change.adopted:
        return f"content changed; it replaces the document of that path in {LEGACY_COLLECTION!r} (before collections)"
    if change.previous_source is not None and change.previous_source != version.source:
        return f"content changed; the version replaced was read from {change.previous_source}"
    return "content changed"


def _read(path: Path) -> bytes:
    with path.open("rb") as file:
        data = file.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise OSError(f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
    return data
