"""The knowledge base: ingest Markdown, text and HTML files as chunks; search them as a runtime ``Retriever``.

``ingest_paths`` serves the CLI and ``knowledge_base`` the runner; :mod:`marsrag.rag.manage` lists and removes
what the knowledge base holds. Importing this package stays cheap: each name loads its module on first use (so
``marsrag kb list`` loads the listing, not the readers and chunker), and SQLAlchemy loads only when a knowledge
base is opened (the store opens it).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from marsrag.rag.chunking import Chunk, chunk_blocks
    from marsrag.rag.knowledge import KnowledgeBase
    from marsrag.rag.readers import SUPPORTED_SUFFIXES, Block, NotTextError, read_blocks
    from marsrag.rag.report import IngestReport, ReplacedDocument, SkippedFile
    from marsrag.rag.service import ingest_paths, knowledge_base

#: Each public name, and the module it is loaded from on first use.
_LAZY = {
    "Chunk": "marsrag.rag.chunking",
    "chunk_blocks": "marsrag.rag.chunking",
    "KnowledgeBase": "marsrag.rag.knowledge",
    "SUPPORTED_SUFFIXES": "marsrag.rag.readers",
    "Block": "marsrag.rag.readers",
    "NotTextError": "marsrag.rag.readers",
    "read_blocks": "marsrag.rag.readers",
    "IngestReport": "marsrag.rag.report",
    "ReplacedDocument": "marsrag.rag.report",
    "SkippedFile": "marsrag.rag.report",
    "ingest_paths": "marsrag.rag.service",
    "knowledge_base": "marsrag.rag.service",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'marsrag.rag' has no attribute {name!r}")
    value = getattr(import_module(_LAZY[name]), name)
    globals()[name] = value  # the next access is a plain attribute
    return value


__all__ = [
    "SUPPORTED_SUFFIXES",
    "Block",
    "Chunk",
    "IngestReport",
    "KnowledgeBase",
    "NotTextError",
    "ReplacedDocument",
    "SkippedFile",
    "chunk_blocks",
    "ingest_paths",
    "knowledge_base",
    "read_blocks",
]
