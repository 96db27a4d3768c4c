"""Hybrid retrieval in a run (issue 43): the first task's passages say which retriever found each and its rank
in each; an embedder that fails leaves the keyword list to answer, and the task records why.

Real crews with the offline composer over the sample knowledge base, embedded with the embedded default.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from marsrag.rag.embedders.endpoint import EndpointEmbedder
from marsrag.rag.embedders.wordllama import WordLlamaEmbedder
from marsrag.rag.knowledge import KnowledgeBase
from marsrag.store import RunStore, open_store
from tests._net import free_port

pytestmark = pytest.mark.crewai

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "knowledge_base"
#: Paraphrased: the sample knowledge base says "payments gateway" and "payment provider", never "card processor".
GOAL = "The card processor keeps rejecting charges: what is our playbook?"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunStore]:
    with open_store(f"sqlite:///{tmp_path_factory.mktemp('hybrid')}/runs.db") as opened:
        KnowledgeBase(opened, embedder=WordLlamaEmbedder()).ingest([SAMPLE])
        yield opened


def run(store: RunStore, kb: KnowledgeBase, goal: str) -> str:
    from marsrag.llm.composer import OfflineComposer
    from marsrag.runtime.runner import WorkflowRunner
    from marsrag.tasks import load_config

    runner = WorkflowRunner(store, load_config(None), OfflineComposer(model="offline-composer"), retriever=kb)
    record = runner.run(goal)
    assert record.status == "completed", record.status_reason
    return record.run_id


def test_each_passage_says_which_retrievers_found_it_and_its_rank_in_each(store: RunStore) -> None:
    run_id = run(store, KnowledgeBase(store, embedder=WordLlamaEmbedder()), GOAL)
    first = store.get_tasks(run_id)[0]
    assert first.retrieval is not None
    assert first.retrieval.retrievers == ["keyword", "vector"] and first.retrieval.skipped is None
    results = first.retrieval.results
    assert results and all(result["retrievers"] for result in results)
    assert all(set(result["retrievers"]) <= {"keyword", "vector"} for result in results)
    assert all(isinstance(rank, int) and rank >= 1 for result in results for rank in result["retrievers"].values())
    assert any("vector" in result["retrievers"] for result in results)
    assert any("payments" in result["source"] for result in results)


def test_an_embedder_that_is_down_leaves_the_keywords_to_answer_and_the_task_says_why(store: RunStore) -> None:
    down = EndpointEmbedder("m", f"http://127.0.0.1:{free_port()}/v1", provider="custom", timeout=5)
    run_id = run(store, KnowledgeBase(store, embedder=down), GOAL)
    for task in store.get_tasks(run_id):
        assert task.retrieval is not None and task.retrieval.retrievers == ["keyword"]
        assert (task.retrieval.skipped or "").startswith("vector search skipped: cannot reach the embeddings endpoint")
        assert all(result["retrievers"].keys() == {"keyword"} for result in task.retrieval.results)


def test_a_paraphrase_the_knowledge_base_answers_is_supported_by_similarity_not_none(store: RunStore) -> None:
    """Keyword evidence alone finds it unsupported; the passage's similarity lifts it (the composer answers it)."""
    goal = "Why the mean response time hides the slow tail"
    hybrid = store.get_tasks(run(store, KnowledgeBase(store, embedder=WordLlamaEmbedder()), goal))[0]
    keyword = store.get_tasks(run(store, KnowledgeBase(store), goal))[0]
    assert keyword.retrieval is not None and keyword.retrieval.support is not None
    assert keyword.retrieval.support.level == "none" and keyword.retrieval.support.similarity is None
    assert hybrid.retrieval is not None and hybrid.retrieval.support is not None
    support = hybrid.retrieval.support
    assert support.level != "none" and support.similarity is not None and support.method == "terms-1+similarity"
    best = hybrid.retrieval.results[(support.best or 0) - 1]
    assert "latency-percentiles" in best["source"] and round(best["similarity"], 3) == support.similarity
    assert hybrid.loop_output is not None and "does not cover" not in hybrid.loop_output.grip
