"""Fixtures for LoopFlow tests: a real SQLite store file and the shipped sample project's agents."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from marsrag.store import RunStore
from marsrag.tasks import ProjectConfig, load_config, sample_config_dir


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    """A real SQLite store in a fresh file."""
    from marsrag.store import open_store

    with open_store(f"sqlite:///{tmp_path / 'runs.db'}") as opened:
        yield opened


@pytest.fixture(scope="session")
def sample() -> ProjectConfig:
    """The shipped sample config (its agents run the flows' steps)."""
    return load_config(sample_config_dir())
