"""Runs kept to collections and runs after a removal, on real stores (both backends) and real CrewAI crews.

The offline composer answers over the sample knowledge base (collection ``sample``) and a folder of garden notes
(collection ``garden``). A run never cites a removed document, and an older run still shows what it cited; a run
kept to collections retrieves from them alone, and keeps to them when followed or resumed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from marsrag.errors import InputError
from marsrag.rag import KnowledgeBase
from marsrag.rag.manage import remove_knowledge
from marsrag.state import TaskState
from marsrag.store import RunStore, open_store
from marsrag.tasks import ProjectConfig, WorkflowConfig, load_config
from marsrag.views.document import run_document
from marsrag.views.viewmodel import read_run_view
from tests.conftest import REPO
from tests.rag.conftest import marsrag, write
from tests.runtime.test_grounding import GARDEN
from tests.store.conftest import db_url  # noqa: F401 - the fixture, on both backends

pytestmark = pytest.mark.crewai

GARDEN_PATHS = {"garden/tomatoes.md", "garden/soil.md", "garden/pests.md"}
GOAL = "Checkout latency breached its SLO in three regions right after cache nodes restarted. What should we do?"


@pytest.fixture
def kept(db_url: str, tmp_path: Path) -> Iterator[tuple[RunStore, KnowledgeBase]]:  # noqa: F811
    """A store on each backend whose knowledge base holds ``sample`` and ``garden``."""
    for relative, text in GARDEN.items():
        write(tmp_path, relative, text)
    with open_store(db_url) as store:
        kb = KnowledgeBase(store)
        kb.ingest([REPO / "examples" / "knowledge_base"], collection="sample")
        kb.ingest([tmp_path / "garden"], collection="garden")
        yield store, kb


def runner_on(store: RunStore, kb: KnowledgeBase, project: ProjectConfig | None = None) -> Any:
    from marsrag.llm.composer import OfflineComposer
    from marsrag.runtime.runner import WorkflowRunner

    project = project or load_config(None)
    return WorkflowRunner(store, project, OfflineComposer(model="offline-composer"), retriever=kb)


def paths(task: TaskState) -> set[str]:
    """The documents a task retrieved and cited (the path part of each source)."""
    results = task.retrieval.results if task.retrieval is not None else []
    sources = [str(result["source"]) for result in results] + [citation.source for citation in task.citations]
    return {source.split("#", 1)[0] for source in sources}


def test_a_run_after_a_removal_never_cites_the_removed_document(kept: tuple[RunStore, KnowledgeBase]) -> None:
    """The document the first run cited most is removed: the next run never retrieves or cites it, and the
    first run still shows its text and path."""
    store, kb = kept
    runner = runner_on(store, kb)
    first = runner.run(GOAL)
    tasks = store.get_tasks(first.run_id)
    cited = [citation for task in tasks for citation in task.citations]
    assert cited, "the first run cited nothing: the test would prove nothing"
    removed = cited[0].source.split("#", 1)[0]
    quoted = next(
        r["text"] for t in tasks for r in (t.retrieval.results if t.retrieval else []) if r["source"] == cited[0].source
    )
    report = remove_knowledge(store.knowledge(), [removed], collection="sample")
    assert [document.path for document in report.documents] == [removed]

    second = runner.run(GOAL)
    assert second.status == "completed"
    for task in store.get_tasks(second.run_id):
        assert removed not in paths(task), f"{task.task_id} still retrieves or cites {removed}"
        assert task.retrieval is not None and task.retrieval.results  # it found other passages

    # Runs keep the text they cited: copies, read back whole after the document is gone.
    document = run_document(store, first.run_id)
    results = [r for t in document["tasks"] for r in (t["retrieval"] or {}).get("results", [])]
    assert any(r["source"] == cited[0].source and r["text"] == quoted for r in results)
    view = read_run_view(store, first.run_id)
    assert any(source.source == cited[0].source for task in view.tasks for source in task.sources)


def test_a_run_kept_to_a_collection_retrieves_from_it_alone(kept: tuple[RunStore, KnowledgeBase]) -> None:
    """``collections=["garden"]`` on a question of the sample's: only garden passages; recorded with the run and
    kept by its follow."""
    store, kb = kept
    runner = runner_on(store, kb)
    run = runner.run(GOAL, collections=["garden"])
    assert run.collections == ["garden"] and store.get_run(run.run_id).collections == ["garden"]
    assert run_document(store, run.run_id)["collections"] == ["garden"]
    for task in store.get_tasks(run.run_id):
        assert paths(task) <= GARDEN_PATHS
        # Support is measured against what the run could retrieve: the garden's chunks alone.
        assert task.retrieval is not None and task.retrieval.support is not None
        assert task.retrieval.support.chunks == kb.scoped(["garden"]).term_counts([]).chunks
    # Operator actions build their crew's tools on the same view of the knowledge base.
    assert runner.retriever_for(store.get_run(run.run_id)).collections == ("garden",)
    followed = runner.follow(run.run_id)
    assert followed.collections == ["garden"]
    # A pending run executed by resume (what a worker or a server's sweep does) keeps to its stored collections.
    pending = runner.start(GOAL, collections=["garden"])
    resumed = runner.resume(pending.run_id)
    assert resumed.status == "completed"
    assert all(paths(task) <= GARDEN_PATHS for task in store.get_tasks(resumed.run_id))
    everywhere = runner.run(GOAL)
    assert everywhere.collections is None
    assert any(
        path.startswith("runbooks/") or "/" in path for t in store.get_tasks(everywhere.run_id) for path in paths(t)
    )


def test_a_workflow_keeps_to_its_collections_unless_the_run_names_others(
    kept: tuple[RunStore, KnowledgeBase],
) -> None:
    """A workflow's ``collections:`` is the default; a run's own list overrides it."""
    store, kb = kept
    sample = load_config(None)
    default = sample.workflow()
    scoped = default.model_copy(update={"collections": ["garden"]})
    project = sample.model_copy(update={"workflows": {**sample.workflows, default.name: scoped}})
    runner = runner_on(store, kb, project)
    assert runner.start(GOAL).collections == ["garden"]
    assert runner.start(GOAL, collections=["sample", "garden"]).collections == ["sample", "garden"]
    with pytest.raises(ValueError, match="at least 1"):
        WorkflowConfig(name="w", tasks=["t"], collections=[])


def test_an_unknown_collection_is_refused_and_nothing_is_stored(kept: tuple[RunStore, KnowledgeBase]) -> None:
    """The error names the collection, suggests the close one and lists the known; no run is stored."""
    store, kb = kept
    runner = runner_on(store, kb)
    with pytest.raises(
        InputError, match=r"unknown collection 'gardn'; did you mean 'garden'\? \(known: 'garden', 'sample'\)"
    ):
        runner.start(GOAL, collections=["sample", "gardn"])
    assert store.list_runs() == []


def test_run_collection_on_the_command_line(tmp_path: Path) -> None:
    """``--collection`` keeps the run to it (json); an unknown one exits 2 with one line and stores nothing."""
    db = f"sqlite:///{tmp_path / 'cli.db'}"
    write(tmp_path, "garden/tomatoes.md", GARDEN["garden/tomatoes.md"])
    assert marsrag("ingest", "garden", "--collection", "garden", "--db", db, cwd=tmp_path).returncode == 0
    refused = marsrag("run", GOAL, "--collection", "gardn", "--db", db, cwd=tmp_path)
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.splitlines() == [
        "marsrag: error: unknown collection 'gardn'; did you mean 'garden'? (known: 'garden')"
    ]
    assert json.loads(marsrag("runs", "list", "--db", db, "--format", "json", cwd=tmp_path).stdout) == []
    tomatoes = "My tomatoes have black rotten patches"
    done = marsrag("run", tomatoes, "--collection", "garden", "--db", db, "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["collections"] == ["garden"]
    sources = {r["source"] for t in document["tasks"] for r in (t["retrieval"] or {}).get("results", [])}
    assert sources and all(source.startswith("garden/") for source in sources)


def test_a_retriever_that_cannot_keep_to_collections_refuses_them(kept: tuple[RunStore, KnowledgeBase]) -> None:
    """A user's own retriever (no collections) runs unscoped runs; one naming collections is refused, unstored."""
    from marsrag.llm.composer import OfflineComposer
    from marsrag.runtime.retrieval import NoRetriever
    from marsrag.runtime.runner import WorkflowRunner

    store, _ = kept
    runner = WorkflowRunner(
        store, load_config(None), OfflineComposer(model="offline-composer"), retriever=NoRetriever()
    )
    with pytest.raises(InputError, match="cannot keep to collections"):
        runner.start(GOAL, collections=["garden"])
    assert store.list_runs() == []
    assert runner.start(GOAL).collections is None
