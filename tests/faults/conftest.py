"""Fault fixtures: runners on real stores (a SQLite file, a fresh PostgreSQL schema) with a fault LLM."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from marsrag.llm.boundary import make_resilient
from marsrag.llm.resilient import CallPolicy
from marsrag.store import RunStore, open_store
from marsrag.tasks import ProjectConfig, load_config, sample_config_dir
from tests.faults.fault_llm import FaultLLM
from tests.runtime.conftest import project_with
from tests.store.conftest import db_url, postgres_admin, postgres_url  # noqa: F401 - shared store fixtures

#: Short limits so a fault ends a run quickly: they bound waits, nothing asserts how long anything took.
POLICY = CallPolicy(timeout=0.5, retries=1, backoff=0.01)


@pytest.fixture(scope="session")
def project() -> ProjectConfig:
    """The shipped sample's narrative tasks diagnose -> recommend as workflow ``flow`` (hard mode)."""
    return project_with(load_config(sample_config_dir()), ["diagnose", "recommend"])


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[RunStore]:
    """A real SQLite store in a fresh file."""
    with open_store(f"sqlite:///{tmp_path / 'runs.db'}") as opened:
        yield opened


@pytest.fixture
def any_store(db_url: str) -> Iterator[RunStore]:  # noqa: F811 - the shared fixture
    """A real store on each backend (a SQLite file, a fresh PostgreSQL schema)."""
    with open_store(db_url) as opened:
        yield opened


@pytest.fixture
def released() -> Iterator[list[FaultLLM]]:
    """Fault LLMs to release at the end of the test, so no hanging call outlives it."""
    llms: list[FaultLLM] = []
    yield llms
    for llm in llms:
        llm.release()


def runner(store: RunStore, project: ProjectConfig, llm: FaultLLM, policy: CallPolicy = POLICY) -> Any:
    """A workflow runner whose LLM is ``llm`` under ``policy``, as ``resolve_llm`` gives every LLM."""
    from marsrag.runtime.runner import WorkflowRunner

    return WorkflowRunner(store, project, make_resilient(llm, policy))
