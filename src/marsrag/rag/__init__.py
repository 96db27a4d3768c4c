"""The knowledge base: ingest Markdown, text and HTML files as chunks; search them as a runtime ``Retriever``.

``ingest_paths`` serves the CLI and ``knowledge_base`` the runner. Importing this package stays cheap:
SQLAlchemy loads only when a knowledge base is opened (the store opens it).
"""

from __future__ import annotations

from marsrag.rag.chunking import Chunk, chunk_blocks
from marsrag.rag.knowledge import KnowledgeBase
from marsrag.rag.readers import SUPPORTED_SUFFIXES, Block, NotTextError, read_blocks
from marsrag.rag.report import IngestReport, ReplacedDocument, SkippedFile
from marsrag.rag.service import ingest_paths, knowledge_base

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
