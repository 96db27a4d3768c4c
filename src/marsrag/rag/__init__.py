"""The knowledge base: ingest Markdown, text and HTML files as chunks; search them as a runtime ``Retriever``.

``ingest_paths`` serves the CLI and ``knowledge_base`` the runner. Importing this package stays cheap:
SQLAlchemy loads when a knowledge base is opened (or :class:`KnowledgeBase` is first looked up).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from marsrag.rag.chunking import Chunk, chunk_blocks
from marsrag.rag.readers import SUPPORTED_SUFFIXES, Block, NotTextError, read_blocks
from marsrag.rag.report import IngestReport, SkippedFile
from marsrag.rag.service import ingest_paths, knowledge_base

if TYPE_CHECKING:
    from marsrag.rag.knowledge import KnowledgeBase

__all__ = [
    "SUPPORTED_SUFFIXES",
    "Block",
    "Chunk",
    "IngestReport",
    "KnowledgeBase",
    "NotTextError",
    "SkippedFile",
    "chunk_blocks",
    "ingest_paths",
    "knowledge_base",
    "read_blocks",
]


def __getattr__(name: str) -> object:
    # KnowledgeBase is imported on first use: its module loads SQLAlchemy.
    if name == "KnowledgeBase":
        from marsrag.rag.knowledge import KnowledgeBase

        return KnowledgeBase
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
