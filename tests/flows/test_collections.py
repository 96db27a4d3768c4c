"""A LoopFlow kept to collections: its steps retrieve from them alone; an unknown one runs no step (real store,
real CrewAI Flow kickoffs, replay LLM)."""

from __future__ import annotations

from pathlib import Path

import pytest

from marsrag.errors import InputError
from marsrag.rag import KnowledgeBase
from marsrag.store import RunStore
from marsrag.tasks import ProjectConfig
from tests.conftest import REPO
from tests.flows.triage import TO_ROLLOUT, TriageFlow, answer
from tests.rag.conftest import write

pytestmark = pytest.mark.crewai

GOAL = "API latency SLO breaches after the cache restart"


def flow_for(store: RunStore, sample: ProjectConfig, kb: KnowledgeBase, collections: list[str]) -> TriageFlow:
    from marsrag.llm.boundary import make_resilient
    from marsrag.llm.replay import ReplayLLM

    llm = make_resilient(ReplayLLM.from_outputs([answer(), answer(loop=TO_ROLLOUT), answer()]))
    return TriageFlow(
        store=store, llm=llm, project=sample, retriever=kb, collections=collections, suppress_flow_events=True
    )


def test_a_flow_kept_to_a_collection_retrieves_from_it_alone(
    store: RunStore, sample: ProjectConfig, tmp_path: Path
) -> None:
    """Every step's passages are the notes'; the run records its collections; an unknown one stores nothing."""
    write(tmp_path / "notes", "latency.md", "# Latency\n\nAPI latency SLO breaches follow a cold cache restart.\n")
    kb = KnowledgeBase(store)
    kb.ingest([REPO / "examples" / "knowledge_base"], collection="handbook")
    kb.ingest([tmp_path / "notes"], collection="notes")
    flow = flow_for(store, sample, kb, ["notes"])
    flow.kickoff(inputs={"goal": GOAL})
    run = flow.run
    assert run is not None and run.status == "completed" and run.collections == ["notes"]
    assert store.get_run(run.run_id).collections == ["notes"]
    for task in store.get_tasks(run.run_id):
        assert task.retrieval is not None and task.retrieval.results
        assert {str(r["source"]).split("#")[0] for r in task.retrieval.results} == {"notes/latency.md"}
    with pytest.raises(InputError, match="unknown collection 'note'"):
        flow_for(store, sample, kb, ["note"]).kickoff(inputs={"goal": GOAL})
    assert len(store.list_runs()) == 1
