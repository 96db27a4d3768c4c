"""The knowledge base: files ingested as chunks into the run store's database, searched by full text.

It lives in the same database as the run store (migration 0002 made its tables), opened the same way from a
URL. Ingest writes one transaction per changed file, so a reader never sees a document half replaced; an
unchanged file (same SHA-256) costs a read and a hash, no write. Search ranks with BM25 on SQLite (FTS5) and
``ts_rank_cd`` on PostgreSQL, headings weighing 2.5 times the text on both.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from sqlalchemy import Connection, Engine, bindparam, delete, insert, select, text, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from marsrag.errors import StoreError
from marsrag.rag import _query
from marsrag.rag._discover import Found, discover
from marsrag.rag.chunking import Chunk, chunk_blocks, cite
from marsrag.rag.readers import NotTextError, decode, parse
from marsrag.rag.report import IngestReport, SkippedFile
from marsrag.store import open_store
from marsrag.store._engine import WRITE_OPTION, one_line
from marsrag.store.schema import chunks, documents

__all__ = ["MAX_FILE_BYTES", "KnowledgeBase", "ProgressCallback"]

logger = logging.getLogger(__name__)
# A library reports through its loggers but leaves output to the application: no "last resort" stderr lines.
logger.addHandler(logging.NullHandler())

#: Called after each file with (files done, files in all).
ProgressCallback = Callable[[int, int], None]

#: Larger files are skipped: no document worth citing is this big, and it would all sit in memory at once.
MAX_FILE_BYTES = 16 * 1024 * 1024

# FOR UPDATE (PostgreSQL; SQLite's BEGIN IMMEDIATE already serializes writers): a second ingest of the same
# changed file waits for the first, then finds it unchanged instead of colliding on chunk positions.
_SHA = select(documents.c.sha256).where(documents.c.path == bindparam("path")).with_for_update()
_INSERT_DOCUMENT = insert(documents)
_UPDATE_DOCUMENT = update(documents).where(documents.c.path == bindparam("b_path"))
_DELETE_CHUNKS = delete(chunks).where(chunks.c.document_path == bindparam("path"))
_INSERT_CHUNKS = insert(chunks)

# The inner query ranks inside the FTS index and keeps `limit` rowids; only those are joined to their text.
_SEARCH_SQLITE = text(
    "SELECT c.id, c.document_path, c.heading, c.text, -f.rank AS score FROM ("
    " SELECT rowid AS id, bm25(chunks_fts, 2.5, 1.0) AS rank FROM chunks_fts"
    " WHERE chunks_fts MATCH :query ORDER BY rank, rowid LIMIT :limit"
    ") AS f JOIN chunks AS c ON c.id = f.id ORDER BY f.rank, c.id"
)
# Normalization 1 divides by 1 + log(length), as BM25 discounts long chunks; weights A (heading) 1.0, B 0.4.
_SEARCH_POSTGRES = text(
    "SELECT c.id, c.document_path, c.heading, c.text, ts_rank_cd(c.fts, q.query, 1) AS score"
    " FROM chunks AS c, to_tsquery('english', :query) AS q(query)"
    " WHERE c.fts @@ q.query ORDER BY score DESC, c.id LIMIT :limit"
)


class KnowledgeBase:
    """Documents and their chunks in a MarsRAG database; :meth:`search` makes it a runtime ``Retriever``."""

    def __init__(self, engine: Engine, *, on_close: Callable[[], None] | None = None) -> None:
        """Use the engine of an open run store (``SqlRunStore.engine``: migrated, with its connection setup)."""
        self.url = engine.url.render_as_string(hide_password=True)
        self._engine = engine
        self._writer = engine.execution_options(**{WRITE_OPTION: True})
        self._search = _SEARCH_POSTGRES if engine.dialect.name == "postgresql" else _SEARCH_SQLITE
        self._format = _query.tsquery if engine.dialect.name == "postgresql" else _query.fts5_query
        self._on_close = on_close

    @classmethod
    def open(cls, url: str | None = None) -> KnowledgeBase:
        """Open the knowledge base in the database at ``url`` (default: the run store's), migrating it as needed.

        Raises:
            StoreError: a bad URL, or a database that cannot be reached or migrated.
        """
        from marsrag.store.sql import SqlRunStore

        store = open_store(url)
        assert isinstance(store, SqlRunStore)  # open_store makes nothing else
        return cls(store.engine, on_close=store.close)

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine."""
        return self._engine

    def close(self) -> None:
        """Release the connections of a knowledge base made by :meth:`open` (idempotent)."""
        if self._on_close is not None:
            self._on_close()

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def ingest(self, paths: Iterable[str | Path], progress: ProgressCallback | None = None) -> IngestReport:
        """Ingest files and folders (recursively): new files added, changed ones replaced, unchanged ones left.

        Files of other types are ignored; binary, non-UTF-8, unreadable and oversized files, and symlinks
        leading outside ``paths``, are skipped: named in the report and logged as warnings.

        Raises:
            InputError: a path does not exist.
            StoreError: the database fails (files already ingested stay ingested).
        """
        found = discover(paths)
        report = IngestReport(ignored=found.ignored, skipped=list(found.skipped))
        known = self._known_hashes()
        for done, item in enumerate(found.files, start=1):
            self._ingest_file(item, known, report)
            if progress is not None:
                progress(done, len(found.files))
        for skipped in report.skipped:
            logger.warning("skipped %s: %s", skipped.path, skipped.reason)
        return report

    def search(self, query: str, limit: int = 5) -> list[dict[str, Any]]:
        """The chunks that best match ``query`` (free text; any string is safe), best first.

        Each hit is ``{"chunk_id", "source", "heading", "text", "score"}``; ``source`` is ``path#heading``,
        ready to cite. A query with no searchable word gives no hits.

        Raises:
            ValueError: a negative limit.
            StoreError: the database fails.
        """
        if limit < 0:
            raise ValueError(f"limit must be >= 0, got {limit}")
        words = _query.terms(query)
        if not words or limit == 0:
            return []
        with self._errors("search the knowledge base"), self._engine.connect() as connection:
            rows = connection.execute(self._search, {"query": self._format(words), "limit": limit}).all()
        return [
            {"chunk_id": id_, "source": cite(path, heading), "heading": heading, "text": body, "score": float(score)}
            for id_, path, heading, body, score in rows
        ]

    def _known_hashes(self) -> dict[str, str]:
        # One read up front lets unchanged files skip the write transaction (and its lock) entirely.
        with self._errors("read the knowledge base"), self._engine.connect() as connection:
            return {path: sha256 for path, sha256 in connection.execute(select(documents.c.path, documents.c.sha256))}

    def _ingest_file(self, item: Found, known: dict[str, str], report: IngestReport) -> None:
        try:
            data = _read(item.path)
        except OSError as error:
            report.skipped.append(SkippedFile(str(item.path), f"cannot read: {error.strerror or error}"))
            return
        sha256 = hashlib.sha256(data).hexdigest()
        if known.get(item.key) == sha256:
            report.unchanged += 1
            return
        try:
            blocks = parse(decode(data), item.path.suffix)
        except NotTextError as error:
            report.skipped.append(SkippedFile(str(item.path), str(error)))
            return
        pieces = chunk_blocks(item.key, blocks)
        with self._errors(f"ingest {item.path}"):
            outcome = self._write(item.key, sha256, len(data), pieces)
        if outcome == "added":
            report.added += 1
        elif outcome == "updated":
            report.updated += 1
        else:
            report.unchanged += 1
        if outcome != "unchanged":
            report.chunks_written += len(pieces)

    def _write(self, key: str, sha256: str, size: int, pieces: list[Chunk]) -> str:
        try:
            with self._writer.begin() as connection:
                return self._replace(connection, key, sha256, size, pieces)
        except IntegrityError:
            # A new document has no row to lock: a concurrent ingest may insert it first. Once more, then it is
            # there to compare with.
            with self._writer.begin() as connection:
                return self._replace(connection, key, sha256, size, pieces)

    @staticmethod
    def _replace(connection: Connection, key: str, sha256: str, size: int, pieces: list[Chunk]) -> str:
        # Checked again under the write lock: another process may have ingested the same file meanwhile.
        current = connection.execute(_SHA, {"path": key}).scalar()
        if current == sha256:
            return "unchanged"
        now = datetime.now(UTC)
        if current is None:
            connection.execute(_INSERT_DOCUMENT, [{"path": key, "sha256": sha256, "size": size, "ingested_at": now}])
        else:
            connection.execute(_DELETE_CHUNKS, {"path": key})
            connection.execute(_UPDATE_DOCUMENT, {"b_path": key, "sha256": sha256, "size": size, "ingested_at": now})
        if pieces:
            rows = [
                {"document_path": key, "position": p.position, "heading": p.heading, "text": p.text} for p in pieces
            ]
            connection.execute(_INSERT_CHUNKS, rows)
        return "added" if current is None else "updated"

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        try:
            yield
        except SQLAlchemyError as error:
            detail = one_line(getattr(error, "orig", None) or error)
            raise StoreError(f"cannot {action} in {self.url}: {detail}") from error


def _read(path: Path) -> bytes:
    with path.open("rb") as file:
        data = file.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise OSError(f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
    return data
