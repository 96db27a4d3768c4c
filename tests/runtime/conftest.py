"""Fixtures for runner tests: a real SQLite store file and projects built from the shipped sample."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from marsrag.store import RunStore
from marsrag.tasks import ProjectConfig, WorkflowConfig, load_config, sample_config_dir
from tests.store.conftest import postgres_admin, postgres_url  # noqa: F401 - shared PostgreSQL fixtures


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    """A real SQLite store in a fresh file."""
    from marsrag.store import open_store

    with open_store(f"sqlite:///{tmp_path / 'runs.db'}") as opened:
        yield opened


@pytest.fixture(scope="session")
def sample() -> ProjectConfig:
    """The shipped sample config."""
    return load_config(sample_config_dir())


def project_with(sample: ProjectConfig, tasks: list[str], mode: str = "hard", **extra_tasks: object) -> ProjectConfig:
    """The sample project with one workflow ``flow`` running ``tasks`` (extra task configs may be added)."""
    all_tasks = {**sample.tasks, **extra_tasks}
    workflow = WorkflowConfig(name="flow", kind="user_facing", loop_mode=mode, tasks=tasks)  # type: ignore[arg-type]
    return sample.model_copy(update={"tasks": all_tasks, "workflows": {"flow": workflow, **sample.workflows}})
