"""Knowledge base fixtures: the run store's fresh databases per backend (SQLite file, PostgreSQL schema)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from marsrag.rag import KnowledgeBase
from tests.store.conftest import db_url, postgres_admin, postgres_url

__all__ = ["db_url", "postgres_admin", "postgres_url", "write"]


@pytest.fixture
def kb(db_url: str) -> Iterator[KnowledgeBase]:
    """An open knowledge base on a fresh database of each backend."""
    with KnowledgeBase.open(db_url) as opened:
        yield opened


def write(root: Path, relative: str, content: str | bytes) -> Path:
    """Write a file under ``root`` (making its folders); its path."""
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path
