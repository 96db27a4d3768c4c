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
from pathlib import Path
from types import TracebackType
from typing import Any

from marsrag.rag._discover import Found, discover
from marsrag.rag._query import terms
from marsrag.rag.chunking import CHUNKER_VERSION, chunk_blocks, cite
from marsrag.rag.identity import check_collection
from marsrag.rag.readers import NotTextError, decode, parse
from marsrag.rag.report import IngestReport, ReplacedDocument, SkippedFile
from marsrag.store import (
    LEGACY_COLLECTION,
    ChunkHit,
    ChunkText,
    DocumentChange,
    DocumentKey,
    DocumentVersion,
    KnowledgeStore,
    RunStore,
    TermCounts,
    open_store,
)
from marsrag.tokens import stems

__all__ = ["MAX_FILE_BYTES", "PER_DOCUMENT", "KnowledgeBase", "ProgressCallback"]

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


class KnowledgeBase:
    """Documents and their chunks in a MarsRAG database; :meth:`search` makes it a runtime ``Retriever``."""

    def __init__(self, store: RunStore, *, on_close: Callable[[], None] | None = None) -> None:
        """Use the knowledge base kept in an open run store's database (:meth:`RunStore.knowledge`)."""
        self._documents: KnowledgeStore = store.knowledge()
        self.url = self._documents.url
        self._on_close = on_close
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
    def open(cls, url: str | None = None) -> KnowledgeBase:
        """Open the knowledge base in the database at ``url`` (default: the run store's), migrating it as needed.

        Raises:
            StoreError: a bad URL, or a database that cannot be reached or migrated.
        """
        store = open_store(url)
        return cls(store, on_close=store.close)

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

        Raises:
            InputError: a path does not exist, or ``collection`` cannot name a collection.
            StoreError: the database fails (files already ingested stay ingested).
        """
        if collection is not None:
            check_collection(collection)
        found = discover(paths, collection=collection)
        report = IngestReport(ignored=found.ignored, skipped=list(found.skipped))
        report.collections = list(dict.fromkeys(item.collection for item in found.files))
        known = self._known_hashes()
        for done, item in enumerate(found.files, start=1):
            self._ingest_file(item, known, report)
            if progress is not None:
                progress(done, len(found.files))
        for skipped in report.skipped:
            logger.warning("skipped %s: %s", skipped.path, skipped.reason)
        return report

    def search(self, query: str, limit: int = 5, *, per_document: int | None = PER_DOCUMENT) -> list[dict[str, Any]]:
        """The chunks that best match ``query`` (free text; any string is safe), best first.

        Each hit is ``{"chunk_id", "source", "heading", "text", "score"}``; ``source`` is ``path#heading``,
        ready to cite. A query with no searchable word gives no hits.

        ``per_document``: at most this many chunks of one document while others match (None: no cap). Every
        chunk's heading path starts with its document's title, so a document whose title matches the query
        would otherwise fill every place; the cap makes room for the runbook beside the incident. When fewer
        documents match than the cap leaves room for, the places left go to the next best chunks in rank order.

        Raises:
            ValueError: a negative limit.
            StoreError: the database fails.
        """
        if limit < 0:
            raise ValueError(f"limit must be >= 0, got {limit}")
        words = terms(query)
        if not words or limit == 0:
            return []
        pool = self._documents.search_chunks(
            words, limit if per_document is None else limit * _POOL_FACTOR, collections=self.collections
        )
        hits = pool[:limit] if per_document is None else _spread(pool, limit, per_document)
        return [
            {
                "chunk_id": hit.chunk_id,
                "source": cite(hit.document_path, hit.heading),
                "heading": hit.heading,
                "text": hit.text,
                "score": hit.score,
            }
            for hit in hits
        ]

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

    def _ingest_file(self, item: Found, known: dict[DocumentKey, str], report: IngestReport) -> None:
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
        change = self._documents.replace_document(
            version, pieces, adopt_from=LEGACY_COLLECTION, terms=chunk_terms(pieces)
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


def chunk_terms(pieces: Iterable[ChunkText]) -> dict[str, int]:
    """How many of a document's chunks contain each term (heading and text; a term counts once per chunk)."""
    counts: Counter[str] = Counter()
    for piece in pieces:
        counts.update(set(stems(f"{piece.heading}\n{piece.text}")))
    return dict(counts)


def _spread(pool: list[ChunkHit], limit: int, per_document: int) -> list[ChunkHit]:
    """The best ``limit`` hits of ``pool`` with at most ``per_document`` per document, topped up in rank order."""
    kept: list[ChunkHit] = []
    counts: dict[str, int] = {}
    for hit in pool:
        if counts.get(hit.document_path, 0) < per_document:
            kept.append(hit)
            counts[hit.document_path] = counts.get(hit.document_path, 0) + 1
            if len(kept) == limit:
                break
    if len(kept) < limit:
        chosen = {hit.chunk_id for hit in kept}
        kept.extend([hit for hit in pool if hit.chunk_id not in chosen][: limit - len(kept)])
    order = {hit.chunk_id: position for position, hit in enumerate(pool)}
    return sorted(kept, key=lambda hit: order[hit.chunk_id])


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
