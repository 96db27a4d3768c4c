"""Knowledge base fixtures: the run store's fresh databases per backend (SQLite file, PostgreSQL schema)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import Engine

from marsrag.rag import KnowledgeBase
from marsrag.store import open_store
from marsrag.store.sql import SqlRunStore
from tests.store.conftest import db_url, postgres_admin, postgres_url

__all__ = ["db_url", "postgres_admin", "postgres_url", "sql_engine", "write"]


@contextmanager
def sql_engine(kb: KnowledgeBase) -> Iterator[Engine]:
    """The SQL store's own engine on the knowledge base's database, to look at its tables from outside.

    Through a store of its own (its connection setup: SQLite's enforced foreign keys), not the knowledge base,
    which exposes no engine: these checks are of the SQL backend's tables.
    """
    with open_store(kb.url) as store:
        assert isinstance(store, SqlRunStore)  # the SQL backend is the one whose tables are checked
        yield store.engine


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


def marsrag(*args: str | Path, cwd: Path, columns: int = 200) -> subprocess.CompletedProcess[str]:
    """The real CLI in a subprocess (its stdin closed, so nothing can wait on a terminal), ``columns`` wide."""
    return subprocess.run(
        [sys.executable, "-m", "marsrag", *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
        cwd=cwd,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": str(columns)},
    )
