"""Managing the knowledge base: what it holds (collections, then documents), removing documents, and the
collections a run may keep to.

A document to remove is named as ``marsrag kb list`` and citations show it (its path, ``kb/doc.md``, or a folder
of such paths, ``kb``), or by the file or folder it was ingested from (``docs/kb/doc.md``, resolved as
``marsrag ingest`` resolves it). A removal is all or nothing: a name that matches no document, or matches
documents of several collections when none is named, removes nothing.

Importing this module stays cheap; SQLAlchemy loads when a store is opened.
"""

from __future__ import annotations

import difflib
import os
import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from marsrag.errors import InputError
from marsrag.store import CollectionSummary, DocumentSummary, KnowledgeStore, open_store

__all__ = [
    "KnowledgeListing",
    "RemovalReport",
    "check_collections",
    "list_knowledge",
    "listing",
    "remove_knowledge",
    "removal",
]

#: Close names suggested for an unknown collection, at most.
_SUGGESTIONS = 3


@dataclass(frozen=True)
class KnowledgeListing:
    """What the knowledge base holds: its collections, then its documents (by collection, then path)."""

    collections: list[CollectionSummary] = field(default_factory=list)
    documents: list[DocumentSummary] = field(default_factory=list)
    #: The embedders whose vectors are stored (of the collection listed) -> (dimension, chunks with one).
    embedders: dict[str, tuple[int, int]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """``{"collections": [...], "documents": [...], "embeddings": [...]}``, times as ISO 8601 in UTC
        (``kb list --format json``); ``embeddings`` lists each embedder's dimension and chunks embedded."""
        return {
            "embeddings": [
                {"embedder": name, "dimension": dimension, "chunks": chunks}
                for name, (dimension, chunks) in sorted(self.embedders.items())
            ],
            "collections": [
                {
                    "name": item.name,
                    "documents": item.documents,
                    "chunks": item.chunks,
                    "ingested_at": item.ingested_at.isoformat(),
                }
                for item in self.collections
            ],
            "documents": [_document(item) for item in self.documents],
        }


@dataclass(frozen=True)
class RemovalReport:
    """The documents a removal took out of the knowledge base, each with its chunk count."""

    documents: list[DocumentSummary] = field(default_factory=list)

    @property
    def chunks(self) -> int:
        """The chunks removed with the documents."""
        return sum(item.chunks for item in self.documents)

    def summary(self) -> str:
        """``2 documents, 7 chunks``."""
        count = len(self.documents)
        return f"{count} document{'' if count == 1 else 's'}, {self.chunks} chunk{'' if self.chunks == 1 else 's'}"

    def to_dict(self) -> dict[str, Any]:
        """``{"removed": {"documents": n, "chunks": n}, "documents": [...]}`` (``kb remove --format json``)."""
        return {
            "removed": {"documents": len(self.documents), "chunks": self.chunks},
            "documents": [_document(item) for item in self.documents],
        }


def listing(*, db: str | None = None, collection: str | None = None) -> KnowledgeListing:
    """What the knowledge base at ``db`` (default: the run store's database) holds; only ``collection``'s if given.

    Raises:
        InputError: ``collection`` holds no document (close names are suggested).
        StoreError: a bad URL, or the database cannot be reached or read.
    """
    with open_store(db) as store:
        return list_knowledge(store.knowledge(), collection=collection)


def list_knowledge(knowledge: KnowledgeStore, *, collection: str | None = None) -> KnowledgeListing:
    """What ``knowledge`` holds; only ``collection``'s if given (see :func:`listing`)."""
    collections = knowledge.collections()
    if collection is None:
        return KnowledgeListing(collections, knowledge.documents(), knowledge.embedders())
    check_collections([collection], [item.name for item in collections])
    return KnowledgeListing(
        [item for item in collections if item.name == collection],
        knowledge.documents(collections=[collection]),
        knowledge.embedders(collections=[collection]),
    )


def removal(paths: Sequence[str | Path] = (), *, db: str | None = None, collection: str | None = None) -> RemovalReport:
    """Remove documents from the knowledge base at ``db`` (default: the run store's database); what was removed.

    See :func:`remove_knowledge`.

    Raises:
        InputError: nothing to remove was named, a path matches no document or documents of several
            collections, or ``collection`` holds none (nothing is removed).
        StoreError: a bad URL, or the database cannot be reached or written.
    """
    with open_store(db) as store:
        return remove_knowledge(store.knowledge(), paths, collection=collection)


def remove_knowledge(
    knowledge: KnowledgeStore, paths: Sequence[str | Path] = (), *, collection: str | None = None
) -> RemovalReport:
    """Remove the documents ``paths`` name (within ``collection`` when given), or without paths all of
    ``collection``'s: each with its chunks, its full-text index entries and its term counts, in one transaction.

    A path is a document's path as cited (``kb/doc.md``) or a folder of them (``kb``), or the file or folder
    it was ingested from. Runs keep the passages they retrieved and cited: they stored copies.

    Raises:
        InputError: as :func:`removal` says (nothing is removed).
        StoreError: the database fails.
    """
    if not paths and collection is None:
        raise InputError("name the documents to remove (PATH...) or a collection (--collection NAME)")
    if collection is not None:
        check_collections([collection], [item.name for item in knowledge.collections()])
    if not paths:
        assert collection is not None
        done = knowledge.remove_documents(collections=[collection])
    else:
        stored = knowledge.documents(collections=None if collection is None else [collection])
        keys = [document.key for path in paths for document in _named(str(path), stored, collection)]
        done = knowledge.remove_documents(keys)
    if not done.complete:
        # Removed meanwhile by another process (the names matched a moment ago): the rest stays, as asked.
        gone = [f"{name}:{path}" for name, path in done.missing_documents] + list(done.missing_collections)
        raise InputError(f"{', '.join(map(repr, gone))} changed meanwhile: nothing was removed; try again")
    return RemovalReport(list(done.documents))


def check_collections(names: Iterable[str], known: Sequence[str]) -> list[str]:
    """``names`` (each once, in order) when every one is a collection of ``known``.

    Raises:
        InputError: one is not (the message names it, suggests close names, and lists the known ones).
    """
    wanted = list(dict.fromkeys(names))
    for name in wanted:
        if name in known:
            continue
        if not known:
            raise InputError(
                f"unknown collection {name!r}: the knowledge base has no collections yet; "
                "add documents with marsrag ingest PATH --collection NAME"
            )
        close = difflib.get_close_matches(name, known, n=_SUGGESTIONS, cutoff=0.6)
        hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
        raise InputError(f"unknown collection {name!r}{hint} (known: {', '.join(map(repr, known))})")
    return wanted


def _named(path: str, stored: Sequence[DocumentSummary], collection: str | None) -> list[DocumentSummary]:
    """The documents ``path`` names: those read from that file or folder, else those cited as it (or under it).

    Raises:
        InputError: none, or documents of several collections while ``collection`` is not given.
    """
    found = _by_source(path, stored) or _by_citation(path, stored)
    if not found:
        where = f" in collection {collection!r}" if collection is not None else ""
        raise InputError(f"no document matches {path!r}{where}: nothing was removed (marsrag kb list shows them)")
    names = sorted({document.collection for document in found})
    if len(names) > 1 and collection is None:
        raise InputError(
            f"{path!r} matches documents of {len(names)} collections ({', '.join(map(repr, names))}): "
            "name one with --collection; nothing was removed"
        )
    return found


def _by_source(path: str, stored: Sequence[DocumentSummary]) -> list[DocumentSummary]:
    """The documents read from the file ``path`` or from files under the folder ``path`` (resolved as ingest does)."""
    real = os.path.realpath(path)
    under = real.rstrip(os.sep) + os.sep
    return [d for d in stored if d.source is not None and (d.source == real or d.source.startswith(under))]


def _by_citation(path: str, stored: Sequence[DocumentSummary]) -> list[DocumentSummary]:
    """The documents whose cited path is ``path``, or is under the folder ``path`` (POSIX separators)."""
    cited = posixpath.normpath(path.replace(os.sep, "/")).strip("/")
    if cited in ("", "."):
        return []
    return [d for d in stored if d.path == cited or d.path.startswith(cited + "/")]


def _document(item: DocumentSummary) -> dict[str, Any]:
    return {
        "collection": item.collection,
        "path": item.path,
        "chunks": item.chunks,
        "size": item.size,
        "source": item.source,
        "ingested_at": item.ingested_at.isoformat(),
    }
