"""The answer follows its support, end to end: real crews with the offline composer over a knowledge base of the
tests' own (a bike workshop's manuals, tests/rag/support_kb), goals inside and outside it.

Outside: every task of the run says the knowledge base does not cover the goal, names words of the goal, cites
nothing in its payoff and asks for documents. Inside: the first task recommends from a cited passage, without the
"not covered" wording.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from marsrag.chain.citations import MARKER
from marsrag.rag import KnowledgeBase
from marsrag.store import RunStore
from tests.rag.test_support import INSIDE, KNOWLEDGE, OUTSIDE

pytestmark = pytest.mark.crewai


@pytest.fixture(scope="module")
def workshop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunStore, object]]:
    from marsrag.llm.composer import OfflineComposer
    from marsrag.runtime.runner import WorkflowRunner
    from marsrag.store import open_store
    from marsrag.tasks import load_config

    store = open_store(f"sqlite:///{tmp_path_factory.mktemp('workshop')}/runs.db")
    kb = KnowledgeBase(store)
    kb.ingest([KNOWLEDGE])
    yield store, WorkflowRunner(store, load_config(None), OfflineComposer(model="offline-composer"), retriever=kb)
    store.close()


@pytest.mark.parametrize("goal", OUTSIDE[:4])
def test_a_goal_outside_the_knowledge_base_is_answered_as_not_covered(
    workshop: tuple[RunStore, object], goal: str
) -> None:
    store, runner = workshop
    run = runner.run(goal)  # type: ignore[attr-defined]
    tasks = store.get_tasks(run.run_id)
    assert tasks[0].retrieval is not None and tasks[0].retrieval.support is not None
    assert tasks[0].retrieval.support.level == "none"
    for task in tasks:
        output = task.loop_output
        assert task.validation.status == "valid" and output is not None
        assert "does not cover" in output.grip or "No sources" in output.grip
        # What it looked for is named from the goal's own words.
        assert any(word in output.grip.casefold() for word in goal.casefold().rstrip("?").split() if len(word) > 3)
        assert not MARKER.search(output.payoff) and output.payoff.startswith("No recommendation")
        assert all("payoff" not in citation.fields for citation in task.citations)
        assert "ingest" in output.loop


@pytest.mark.parametrize("goal", INSIDE[:4])
def test_a_goal_inside_the_knowledge_base_gets_a_cited_recommendation(
    workshop: tuple[RunStore, object], goal: str
) -> None:
    store, runner = workshop
    run = runner.run(goal)  # type: ignore[attr-defined]
    first = store.get_tasks(run.run_id)[0]
    assert first.retrieval is not None and first.retrieval.support is not None
    level = first.retrieval.support.level
    assert level != "none"
    output = first.loop_output
    assert first.validation.status == "valid" and output is not None
    assert "does not cover" not in output.grip
    assert MARKER.search(output.payoff) and MARKER.search(output.reinforce)
    lead = "Recommended next step" if level == "strong" else "Not a settled answer"
    assert output.payoff.startswith((lead, "No source here gives a direct instruction"))
