"""Grounded, correctly cited answers: numbered sources end to end, on real ingests and real crew kickoffs.

The offline composer answers over the sample knowledge base and over a folder of notes written here; every
sentence it quotes from a passage carries that passage's number, every marker resolves to a stored
citation whose source and chunk id are those of the task's retrieval result, the passage retrieval ranked
first is used, and a followed chain of five runs never offers the same next action twice.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from marsrag.chain.briefing import briefing
from marsrag.chain.citations import resolve
from marsrag.rag import KnowledgeBase
from tests.conftest import REPO
from tests.llm.test_composer import assert_grounded
from tests.rag.conftest import write

pytestmark = pytest.mark.crewai

SAMPLE_GOALS = (
    "Checkout latency breached its SLO in three regions right after cache nodes restarted. What should we do?",
    "Payments started failing with TLS handshake errors this morning",
    "The order queue backlog keeps growing during the sale",
    "Retries from checkout are overloading the payments gateway",
    "How should we roll out a risky config change?",
    "Our error budget for checkout is nearly spent",
)
GARDEN = {
    "garden/tomatoes.md": "# Tomato growing notes\n\nTomatoes want six to eight hours of sun a day.\n\n"
    "## Blossom end rot\n\nBlack rotten patches at the bottom of the fruit are blossom end rot. "
    "It comes from uneven watering, which stops calcium reaching the fruit. Water deeply twice a week and "
    "mulch the bed to keep the soil evenly moist.\n\n"
    "## Watering\n\nWater at the base of the plant in the morning. Wet leaves invite blight.\n",
    "garden/soil.md": "# Soil\n\n## Calcium\n\nMost garden soils hold enough calcium; a soil test tells. "
    "Add garden lime only when the test shows a calcium shortage.\n\n"
    "## Mulch\n\nA five centimetre layer of straw mulch keeps moisture even and the roots cool.\n",
    "garden/pests.md": "# Pests\n\n## Aphids\n\nAphids cluster under young leaves. Spray them off with water "
    "or release ladybirds.\n",
}
GARDEN_GOALS = ("My tomatoes have black rotten patches", "How often should I water tomatoes?")


@pytest.fixture(scope="module")
def knowledge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    root = tmp_path_factory.mktemp("kb")
    for relative, text in GARDEN.items():
        write(root, relative, text)
    with KnowledgeBase.open(f"sqlite:///{root}/kb.db") as kb:
        kb.ingest([REPO / "examples" / "knowledge_base"])
        kb.ingest([root / "garden"])
        yield kb


@pytest.mark.parametrize("goal", SAMPLE_GOALS + GARDEN_GOALS)
def test_every_quoted_sentence_is_cited_with_its_passage(knowledge: KnowledgeBase, goal: str) -> None:
    """Over real retrieval, each quoted sentence carries its passage's marker and the top result is used."""
    from marsrag.llm.composition import compose

    results = knowledge.search(goal, 5)
    assert results
    answer = compose(briefing(goal, None, results), "diagnose")
    assert_grounded(answer, results)
    citations, _ = resolve(answer, results)
    assert "1" in {citation.ref for citation in citations}, "the passage retrieval ranked first is not used"


def test_a_short_section_is_read_under_its_own_heading(knowledge: KnowledgeBase) -> None:
    """The blossom-end-rot section is retrieved, quoted and cited under its own heading."""
    from marsrag.llm.composition import compose

    results = knowledge.search(GARDEN_GOALS[0], 5)
    assert results[0]["source"].endswith("#Tomato growing notes > Blossom end rot")
    answer = compose(briefing(GARDEN_GOALS[0], None, results), "diagnose")
    cited = {citation.source for citation in resolve(answer, results)[0]}
    assert results[0]["source"] in cited
    assert "Water deeply twice a week" in answer["payoff"]


def _run_store(tmp_path: Path) -> tuple[object, object]:
    from marsrag.llm.composer import OfflineComposer
    from marsrag.runtime.runner import WorkflowRunner
    from marsrag.store import open_store
    from marsrag.tasks import load_config

    store = open_store(f"sqlite:///{tmp_path}/runs.db")
    kb = KnowledgeBase(store)
    kb.ingest([REPO / "examples" / "knowledge_base"])
    runner = WorkflowRunner(store, load_config(None), OfflineComposer(model="offline-composer"), retriever=kb)
    return store, runner


def test_stored_citations_match_the_markers_and_the_retrieval(tmp_path: Path) -> None:
    """A real kickoff stores, per task, citations whose source and chunk id are its retrieval results' (by the
    run's number, ``ref``)."""
    store, runner = _run_store(tmp_path)
    try:
        run = runner.run(SAMPLE_GOALS[0])  # type: ignore[attr-defined]
        for task in store.get_tasks(run.run_id):  # type: ignore[attr-defined]
            assert task.retrieval is not None and task.citations
            assert task.citation_warnings == []
            by_ref = {str(result["ref"]): result for result in task.retrieval.results}
            for citation in task.citations:
                result = by_ref[citation.ref]
                assert (citation.source, citation.chunk_id) == (result["source"], result["chunk_id"])
                assert {"chunk_id", "source", "heading", "text", "score"} <= set(result)
                for name in citation.fields:
                    assert f"[{citation.ref}]" in getattr(task.loop_output, name)
    finally:
        store.close()  # type: ignore[attr-defined]


def test_a_followed_chain_of_five_runs_has_five_distinct_next_actions(tmp_path: Path) -> None:
    """Following the next action five times in one session never offers an action already followed."""
    from marsrag.chain.planner import plan_next_action
    from marsrag.views.viewmodel import read_run_view

    store, runner = _run_store(tmp_path)
    try:
        run = runner.run(SAMPLE_GOALS[0])  # type: ignore[attr-defined]
        actions = []
        for _ in range(5):
            view = read_run_view(store, run.run_id)  # type: ignore[arg-type]
            assert view.next_action is not None
            actions.append(view.next_action.text)
            run = runner.follow(run.run_id)  # type: ignore[attr-defined]
            assert run.goal == actions[-1]  # follow takes the action the page shows
        assert len(set(actions)) == 5, actions
        assert plan_next_action(store.get_tasks(run.run_id)) is not None  # type: ignore[attr-defined]
    finally:
        store.close()  # type: ignore[attr-defined]
