"""What an ingest did: counts per outcome, the chunks written, every document replaced and every file skipped, why."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["IngestReport", "ReplacedDocument", "SkippedFile"]


@dataclass(frozen=True)
class SkippedFile:
    """A file ingest did not read (binary, not UTF-8, unreadable, a symlink leading outside the roots...)."""

    path: str
    reason: str


@dataclass(frozen=True)
class ReplacedDocument:
    """A stored document that ingest replaced with a new version: its path and collection, and why."""

    path: str
    collection: str
    reason: str


@dataclass
class IngestReport:
    """The outcome of one ingest: files added, updated, unchanged and skipped, and chunks written."""

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    #: Files passed over without a word because ingest does not read their type (``.pdf``, ``.png``...).
    ignored: int = 0
    chunks_written: int = 0
    skipped: list[SkippedFile] = field(default_factory=list)
    #: The collections the files found belong to, in the order met.
    collections: list[str] = field(default_factory=list)
    #: One entry per update: which document was replaced, and why.
    replaced: list[ReplacedDocument] = field(default_factory=list)
    #: The embedder that embedded the chunks (its identity); None: keyword search only, nothing embedded.
    embedder: str | None = None
    #: Chunks embedded (new or changed chunks, and stored chunks with no vector of the embedder).
    embedded: int = 0
    #: Chunks of a changed document that kept the vector of the version replaced (their text is unchanged).
    reused: int = 0

    def lines(self) -> list[str]:
        """One line per replaced document, for people: ``updated kb/doc.md in /srv/one: content changed``."""
        return [f"updated {item.path} in {item.collection}: {item.reason}" for item in self.replaced]

    def summary(self) -> str:
        """One line for people: ``2 added, 1 updated, 5 unchanged, 1 skipped; 14 chunks written, 14 embedded
        with wordllama/l2_supercat-256``."""
        counts = f"{self.added} added, {self.updated} updated, {self.unchanged} unchanged, {len(self.skipped)} skipped"
        ignored = f" ({self.ignored} other files ignored)" if self.ignored else ""
        embedded = f", {self.embedded} embedded with {self.embedder}" if self.embedder else ""
        return f"{counts}{ignored}; {self.chunks_written} chunks written{embedded}"

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (for ``--format json``)."""
        return asdict(self)
