"""A LoopFlow's steps number their sources as a run's tasks do (issue 38): one number per source in the run."""

from __future__ import annotations

import pytest

from marsrag.rag import KnowledgeBase
from marsrag.store import RunStore
from marsrag.tasks import ProjectConfig
from marsrag.views.summary import SOURCES_LINE
from tests.conftest import REPO
from tests.flows.triage import TriageFlow
from tests.runtime.test_numbering import GOAL, run_numbers

pytestmark = pytest.mark.crewai


def test_a_flows_steps_share_the_runs_numbers_and_its_summary_lists_them(
    store: RunStore, sample: ProjectConfig
) -> None:
    """Over the sample knowledge base with the offline composer, a source given to two steps has one number,
    every step's citations resolve without warnings, and the summary lists the cited sources by number."""
    knowledge = KnowledgeBase(store)
    knowledge.ingest([REPO / "examples" / "knowledge_base"])
    flow = TriageFlow(store=store, project=sample, retriever=knowledge, suppress_flow_events=True)
    flow.kickoff(inputs={"goal": GOAL})
    run = flow.run
    assert run is not None and run.status == "completed"
    tasks = store.get_tasks(run.run_id)
    assert len(tasks) == 3
    numbers = run_numbers(tasks)
    given = [{str(item["ref"]) for item in task.retrieval.results} for task in tasks if task.retrieval]
    assert any(len([refs for refs in given if ref in refs]) > 1 for ref in numbers), "a source shared by two steps"
    assert all(task.citations and not task.citation_warnings for task in tasks)
    summary = run.summary.splitlines()
    cited = {c.ref: c.source for t in tasks for c in t.citations}
    assert summary[summary.index(SOURCES_LINE) + 1 :] == [f"[{ref}] {cited[ref]}" for ref in sorted(cited, key=int)]
