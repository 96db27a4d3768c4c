"""Agents with tools: the knowledge base as ``search_knowledge_base(query)``, on real crews with the replay LLM.

The replay LLM does not call functions natively, so CrewAI offers the tool in the prompt (ReAct) and the
script calls it with ``Action: search_knowledge_base``. A real SQLite file holds the run store and the
knowledge base, as in a run.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from marsrag.rag import KnowledgeBase
from marsrag.store import RunStore, open_store
from marsrag.tasks import AgentConfig, ProjectConfig, WorkflowConfig
from tests.contract.samples import CONTENT
from tests.rag.conftest import write

pytestmark = pytest.mark.crewai

NOTES = {
    "notes/cache.md": "# Cache restarts\n\n## Cold caches\n\nCheckout latency rises after cache nodes restart: a "
    "restarted node starts cold and every request misses until it warms up.\n",
    "notes/rollback.md": "# Rollback\n\n## Feature flags\n\nTurn the feature flag off before rolling back the "
    "deploy: a flag flips in seconds, a rollback takes twenty minutes.\n",
    "notes/garden.md": "# Garden\n\n## Tomatoes\n\nWater tomatoes deeply twice a week.\n",
}
GOAL = "Checkout latency rose after cache nodes restarted"
TOOL_QUERY = "feature flag rollback"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    """A real SQLite store file holding the knowledge base ingested from NOTES."""
    root = tmp_path / "kb"
    for relative, text in NOTES.items():
        write(root, relative, text)
    with open_store(f"sqlite:///{tmp_path / 'runs.db'}") as opened:
        KnowledgeBase(opened).ingest([root / "notes"])
        yield opened


def tool_project(sample: ProjectConfig, tools: list[str]) -> ProjectConfig:
    """The sample project with its analyst given ``tools`` and one workflow ``flow`` running ``diagnose``."""
    agents = dict(sample.agents)
    agents["analyst"] = AgentConfig.model_validate({**sample.agents["analyst"].model_dump(), "tools": tools})
    workflow = WorkflowConfig(name="flow", kind="user_facing", loop_mode="hard", tasks=["diagnose"])
    return sample.model_copy(update={"agents": agents, "workflows": {"flow": workflow}})


def boundary_replay(script: list[str]) -> Any:
    """A replay LLM at the LLM boundary with the ``auto`` structured-output setting (it offers json_schema first)."""
    from marsrag.llm.boundary import make_resilient
    from marsrag.llm.replay import ReplayLLM
    from marsrag.llm.resilient import CallPolicy

    return make_resilient(ReplayLLM.from_outputs(script), CallPolicy(timeout=30, retries=0, backoff=0))


def tool_step(query: str) -> str:
    arguments = json.dumps({"query": query})
    return f"Thought: I should look this up.\nAction: search_knowledge_base\nAction Input: {arguments}"


def final_answer(content: dict[str, str]) -> str:
    sections = "\n".join(f"{name.upper()}: {value}" for name, value in content.items())
    return f"Thought: I now know the final answer\nFinal Answer: {sections}"


def test_a_tool_using_agent_ends_valid_with_the_tools_sources_on_the_task(
    store: RunStore, sample_project: ProjectConfig
) -> None:
    """The agent searches, then answers in labelled sections: valid at once, two LLM calls, the tool's passages stored.

    The passages the runner retrieved for the task keep their numbers; the tool's new ones follow them, the
    answer cites one by that number, and the stored citation resolves to it.
    """
    from marsrag.runtime.runner import WorkflowRunner

    knowledge = KnowledgeBase(store)
    given = knowledge.search(GOAL, 5)
    found = knowledge.search(TOOL_QUERY, 5)
    new = [hit for hit in found if hit["chunk_id"] not in {item["chunk_id"] for item in given}]
    assert given and new, "the notes give the task passages and the tool others"
    number = len(given) + 1
    cited = {**CONTENT, "reinforce": f"A feature flag flips in seconds, a rollback takes twenty minutes [{number}]."}
    llm = boundary_replay([tool_step(TOOL_QUERY), final_answer(cited)])

    run = WorkflowRunner(store, tool_project(sample_project, ["knowledge_base"]), llm, retriever=knowledge).run(
        GOAL, workflow="flow"
    )

    assert run.status == "completed"
    (task,) = store.get_tasks(run.run_id)
    assert task.validation.status == "valid" and [a.kind for a in task.attempts] == ["answer"]
    # Zero converter calls: the tool step and the final answer are the only calls.
    assert len(llm.calls) == 2 and llm.remaining == 0
    # No call of the tool loop asked for structure; the final answer was still validated by the contract.
    assert [(call.structured_output, call.response_model) for call in llm.calls] == [("prompt", None)] * 2
    assert task.attempts[0].structured_output == "prompt"
    assert task.loop_output.reinforce == cited["reinforce"]
    # The tool's observation (in the second call's prompt) numbers the new passage after the task's own.
    prompt = json.dumps(llm.calls[1].messages)
    assert json.dumps(f"[{number}] {new[0]['source']}\n")[1:-1] in prompt
    # The task's retrieval: the runner's results, then the tool's new passages, marked as the tool's.
    assert task.retrieval is not None
    assert [item["chunk_id"] for item in task.retrieval.results] == [
        *(item["chunk_id"] for item in given),
        *(item["chunk_id"] for item in new),
    ]
    assert {(item["via"], item["query"]) for item in task.retrieval.results[len(given) :]} == {
        ("search_knowledge_base", TOOL_QUERY)
    }
    assert [(c.ref, c.source, c.chunk_id, c.fields) for c in task.citations] == [
        (str(number), new[0]["source"], new[0]["chunk_id"], ["reinforce"])
    ]
    assert task.citation_warnings == []


def test_an_agent_with_tools_is_never_asked_for_structure(sample_project: ProjectConfig) -> None:
    """At the LLM boundary: a call for an agent or task with tools (offered in the prompt) gets no offer."""
    from marsrag.integrations.crewai import LoopOutputDraft
    from marsrag.integrations.crewai_builders import build_agent, build_task

    llm = boundary_replay(["with an agent's tools", "with a task's tools", "without tools"])
    project = tool_project(sample_project, ["knowledge_base"])
    with_tools = build_agent(project.agents["analyst"], llm)
    without = build_agent(project.agents["advisor"], llm)
    task = build_task(project.tasks["diagnose"], without, "hard").task
    task.tools = list(with_tools.tools)
    messages = [{"role": "user", "content": "diagnose"}]
    llm.call(messages, from_agent=with_tools, response_model=LoopOutputDraft)
    llm.call(messages, from_agent=without, from_task=task, response_model=LoopOutputDraft)
    llm.call(messages, from_agent=without, response_model=LoopOutputDraft)
    assert [call.structured_output for call in llm.calls] == ["prompt", "prompt", "json_schema"]


def test_the_tool_numbers_after_the_tasks_passages_and_keeps_a_passage_its_number(store: RunStore) -> None:
    """A passage the task was given keeps its number; new ones follow; the journal drains only the new ones."""
    from crewai.context import reset_current_task_id, set_current_task_id

    from marsrag.integrations.knowledge_tool import knowledge_tool
    from marsrag.integrations.passages import PassageJournal

    knowledge = KnowledgeBase(store)
    given = knowledge.search(GOAL, 1)
    journal = PassageJournal()
    journal.given("task-1", given)
    tool = knowledge_tool(knowledge, limit=5)
    tool.journal = journal
    token = set_current_task_id("task-1")
    try:
        text = tool.run(query=f"{TOOL_QUERY} cache restart")
        again = tool.run(query=TOOL_QUERY)
    finally:
        reset_current_task_id(token)
    assert f"[1] {given[0]['source']}\n" in text
    assert text.startswith('Passages found for "feature flag rollback cache restart"')
    rollback = next(hit for hit in knowledge.search(TOOL_QUERY, 5) if hit["source"].startswith("notes/rollback.md"))
    assert f"[2] {rollback['source']}\n" in text and f"[2] {rollback['source']}\n" in again
    drained = journal.drain("task-1")
    assert [item["chunk_id"] for item in drained][0] == rollback["chunk_id"]
    assert given[0]["chunk_id"] not in {item["chunk_id"] for item in drained}
    assert journal.drain("task-1") == []


def test_outside_a_task_the_tool_numbers_from_one_and_records_nothing(store: RunStore) -> None:
    """A tool run by no task CrewAI is executing numbers its passages from 1 and leaves no record."""
    from marsrag.integrations.knowledge_tool import knowledge_tool
    from marsrag.integrations.passages import PassageJournal

    journal = PassageJournal(max_tasks=1)
    earlier = {"chunk_id": -1, "source": "earlier", "text": "t"}
    journal.found("task-1", [earlier])
    tool = knowledge_tool(KnowledgeBase(store))
    tool.journal = journal
    text = tool.run(query=TOOL_QUERY)
    assert "\n\n[1] notes/rollback.md#Rollback > Feature flags\n" in text and text.endswith("(end of passages)")
    # A one-task journal still holds task-1: the search was recorded under no task.
    assert journal.drain("task-1") == [earlier]


def test_the_journal_numbers_per_task_and_forgets_the_oldest() -> None:
    """Numbers continue each task's own list; a journal past its bound forgets the task seen longest ago."""
    from marsrag.integrations.passages import PassageJournal

    journal = PassageJournal(max_tasks=2)
    a, b, c = ({"chunk_id": n, "source": f"s{n}", "text": "t"} for n in (1, 2, 3))
    journal.given("one", [a])
    assert journal.found("one", [b, a, b]) == [2, 1, 2]
    assert journal.found("two", [c]) == [1]
    assert journal.found(None, [a, b]) == [1, 2]
    journal.found("three", [a])  # "one" was seen longest ago: forgotten
    assert journal.drain("one") == []
    assert journal.drain("two") == [c] and journal.drain("three") == [a]
    untitled = [{"source": "x", "text": "same"}, {"source": "x", "text": "same"}, {"source": "x", "text": "other"}]
    assert journal.found("four", untitled) == [1, 1, 2]
    journal.given("five", [a, a, b])  # the briefing numbers by position, a repeated passage included
    assert journal.found("five", [b, c, a]) == [3, 4, 1] and journal.drain("five") == [c]


def test_the_tool_answers_instead_of_raising(store: RunStore, tmp_path: Path) -> None:
    """No query, no match, no knowledge base, a broken database: each is a sentence the agent can act on."""
    from marsrag.integrations.knowledge_tool import knowledge_tool

    tool = knowledge_tool(KnowledgeBase(store))
    assert tool.run(query="   ").startswith("Give a query")
    assert tool.run(query="zebra xylophone").startswith('No passage of the knowledge base matches "zebra xylophone"')
    assert knowledge_tool(None).run(query=TOOL_QUERY).startswith("No knowledge base is configured")
    with sqlite3.connect(tmp_path / "runs.db") as connection:
        connection.execute("DROP TABLE chunks_fts")
    assert tool.run(query=TOOL_QUERY).startswith("The knowledge base could not be searched (")


def test_every_agent_tool_a_config_may_name_is_built(sample_project: ProjectConfig) -> None:
    """Each name of AGENT_TOOLS has a factory; an agent gets fresh tools, one per name, and none without tools."""
    from marsrag.integrations.crewai_builders import TOOL_FACTORIES, build_agent
    from marsrag.integrations.knowledge_tool import KnowledgeBaseTool
    from marsrag.tasks.config import AGENT_TOOLS

    assert set(TOOL_FACTORIES) == AGENT_TOOLS
    project = tool_project(sample_project, ["knowledge_base", "knowledge_base"])
    llm = boundary_replay([])
    first, second = (build_agent(project.agents["analyst"], llm) for _ in range(2))
    assert [type(tool) for tool in first.tools] == [KnowledgeBaseTool]
    assert first.tools[0] is not second.tools[0]
    assert build_agent(project.agents["advisor"], llm).tools == []


def test_the_shipped_example_stores_the_passage_the_tool_found(tmp_path: Path) -> None:
    """examples/tools: its analyst searches once and cites the passage found as [6], a tool passage on the task."""
    from marsrag.llm.replay import ReplayLLM
    from marsrag.runtime.runner import WorkflowRunner
    from marsrag.tasks import load_config
    from tests.conftest import REPO

    example = REPO / "examples" / "tools"
    with open_store(f"sqlite:///{tmp_path / 'runs.db'}") as opened:
        knowledge = KnowledgeBase(opened)
        knowledge.ingest([REPO / "examples" / "knowledge_base"])
        llm = ReplayLLM.from_file(example / "answers.jsonl")
        runner = WorkflowRunner(opened, load_config(example / "config"), llm, retriever=knowledge)
        run = runner.run("Checkout latency breached its SLO after cache restarts")
        (task,) = opened.get_tasks(run.run_id)
    assert run.status == "completed" and task.validation.status == "valid" and llm.remaining == 0
    assert task.retrieval is not None
    cited = {citation.ref: task.retrieval.results[int(citation.ref) - 1] for citation in task.citations}
    assert sorted(cited) == ["1", "6"] and task.citation_warnings == []
    assert cited["6"]["via"] == "search_knowledge_base" and "via" not in cited["1"]
    assert cited["6"]["source"].startswith("knowledge_base/runbooks/cache-prewarm-from-snapshot.md#")


def test_a_tool_using_agents_answer_is_read_by_the_contract_never_asked_for_again(
    store: RunStore, sample_project: ProjectConfig
) -> None:
    """After a tool step, an answer in labelled sections (not JSON) is read as written: no third call for structure.

    CrewAI 1.15.4x asks a tool-using agent once more, with the response schema, when its final answer is not JSON
    fitting it; the contract's executor leaves a contract task's answer to the reader, so the spare output stays.
    """
    from marsrag.runtime.runner import WorkflowRunner

    knowledge = KnowledgeBase(store)
    spare = final_answer({**CONTENT, "hook": "A second answer nobody asked for."})
    llm = boundary_replay([tool_step(TOOL_QUERY), final_answer(CONTENT), spare])

    run = WorkflowRunner(store, tool_project(sample_project, ["knowledge_base"]), llm, retriever=knowledge).run(
        GOAL, workflow="flow"
    )

    (task,) = store.get_tasks(run.run_id)
    assert run.status == "completed" and task.validation.status == "valid"
    assert len(llm.calls) == 2 and llm.remaining == 1
    assert task.loop_output.hook == CONTENT["hook"]


def test_an_operator_repair_stores_what_the_agents_tool_found(store: RunStore, sample_project: ProjectConfig) -> None:
    """A failed task repaired by an operator: the agent searches again, and its new passage is cited and stored."""
    from marsrag.runtime.actions import repair_task
    from marsrag.runtime.runner import WorkflowRunner

    knowledge = KnowledgeBase(store)
    given = knowledge.search(GOAL, 5)
    cited = {**CONTENT, "reinforce": f"A feature flag flips in seconds [{len(given) + 1}]."}
    script = [
        "Thought: I now know the final answer\nFinal Answer: not the contract",
        "Thought: I now know the final answer\nFinal Answer: still not it",
        tool_step(TOOL_QUERY),
        final_answer(cited),
    ]
    llm = boundary_replay(script)
    runner = WorkflowRunner(store, tool_project(sample_project, ["knowledge_base"]), llm, retriever=knowledge)
    run = runner.run(GOAL, workflow="flow")
    (before,) = store.get_tasks(run.run_id)
    assert before.validation.status == "failed" and before.retrieval is not None
    assert len(before.retrieval.results) == len(given)

    after = repair_task(runner, run.run_id, "diagnose")

    assert after.validation.status == "valid" and llm.remaining == 0
    assert after.retrieval is not None and len(after.retrieval.results) > len(given)
    (citation,) = after.citations
    stored = after.retrieval.results[int(citation.ref) - 1]
    assert stored["via"] == "search_knowledge_base" and stored["source"] == citation.source
    assert store.get_tasks(run.run_id)[0].retrieval == after.retrieval
