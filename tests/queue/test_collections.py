"""A run kept to collections executes on a real ``marsrag worker`` process (real Redis) within them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from marsrag.compose import open_runner
from marsrag.queue.executor import CeleryRunExecutor
from marsrag.rag import KnowledgeBase
from marsrag.runtime.runner import WorkflowRunner
from marsrag.settings import resolve_settings
from tests.conftest import REPO
from tests.queue.conftest import REDIS_URL, Process, wait_for
from tests.rag.conftest import write

pytestmark = pytest.mark.crewai


@pytest.fixture
def db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'runs.db'}"


@pytest.fixture
def runner(db: str) -> Iterator[WorkflowRunner]:
    """The test's own runner on the shared store: it records runs; the worker executes them."""
    with open_runner(resolve_settings(llm="composer", db=db)) as opened:
        yield opened


def test_a_queued_run_keeps_to_its_collections_on_the_worker(
    tmp_path: Path, db: str, runner: WorkflowRunner, queue_env: dict[str, str], spawn: Callable[..., Process]
) -> None:
    """The collections are stored with the run: the worker, reading only its id, retrieves from them alone."""
    write(tmp_path / "notes", "cache.md", "# Cache restart\n\nPre-warm the cache tier before checkout traffic.\n")
    with KnowledgeBase.open(db) as kb:
        kb.ingest([REPO / "examples" / "knowledge_base"], collection="handbook")
        kb.ingest([tmp_path / "notes"], collection="notes")
    worker = spawn("worker", "--db", db, "--llm", "composer")
    executor = CeleryRunExecutor.from_url(REDIS_URL)
    try:
        run = runner.start("Checkout latency breached its SLO after the cache restart", collections=["notes"])
        executor.submit(run.run_id)
        wait_for(
            lambda: runner.store.get_run(run.run_id).status in ("completed", "failed"),
            "the run to finish on the worker",
            worker.output,
        )
    finally:
        executor.shutdown()
    done = runner.store.get_run(run.run_id)
    assert done.status == "completed", done.status_reason
    assert done.owner is not None and done.owner.endswith(f":{worker.proc.pid}")
    for task in runner.store.get_tasks(run.run_id):
        assert task.retrieval is not None and task.retrieval.results
        assert {str(r["source"]).split("#")[0] for r in task.retrieval.results} == {"notes/cache.md"}
