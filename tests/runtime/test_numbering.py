"""One number per source across a run (issue 38): merged sections, the run's registry, markers resolved by it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from marsrag.chain.briefing import sources
from marsrag.chain.citations import resolve
from marsrag.chain.numbering import GAP, SourceNumbers, merge_sections, numbered
from marsrag.state import Retrieval, TaskState
from marsrag.views.summary import SOURCES_LINE, source_list
from tests.views.cited import cited_task


def chunk(chunk_id: int, source: str, text: str, score: float = 1.0) -> dict[str, Any]:
    return {"chunk_id": chunk_id, "source": source, "heading": source.partition("#")[2], "text": text, "score": score}


def test_chunks_of_one_section_are_one_passage_in_document_order_at_the_rank_of_the_best() -> None:
    """Chunks 5 and 4 of a section (best first) join as 4 then 5; a gap marks a chunk in between not retrieved."""
    results = [
        chunk(5, "a.md#A", "Second half.", 0.9),
        chunk(9, "b.md#B", "Other section.", 0.8),
        chunk(4, "a.md#A", "First half.", 0.7),
        chunk(7, "a.md#A", "Much later.", 0.6),
    ]
    merged = merge_sections(results)
    assert [item["source"] for item in merged] == ["a.md#A", "b.md#B"]
    assert merged[0]["text"] == f"First half.\n\nSecond half.{GAP}Much later."
    assert (merged[0]["chunk_id"], merged[0]["chunk_ids"], merged[0]["score"]) == (4, [4, 5, 7], 0.9)
    assert merged[1] == results[1]


def test_a_source_keeps_its_number_in_every_task_and_a_new_one_takes_the_next() -> None:
    """The first task numbers 1, 2; the second is given b again (2) and a new c (3), whatever their rank."""
    numbers = SourceNumbers()
    first = numbers.number([chunk(1, "a.md#A", "a"), chunk(2, "b.md#B", "b")])
    second = numbers.number([chunk(3, "c.md#C", "c"), chunk(2, "b.md#B", "b"), chunk(4, "b.md#B", "b2")])
    assert [(item["source"], item["ref"]) for item in first] == [("a.md#A", "1"), ("b.md#B", "2")]
    assert [(item["source"], item["ref"]) for item in second] == [("c.md#C", "3"), ("b.md#B", "2")]
    assert numbers.sources() == {
        "1": {"source": "a.md#A", "chunk_id": 1},
        "2": {"source": "b.md#B", "chunk_id": 2},
        "3": {"source": "c.md#C", "chunk_id": 3},
    }
    # The briefing shows the run's numbers, in the task's retrieval order.
    block = sources(second)
    assert block.index("\n[3] c.md#C") < block.index("\n[2] b.md#B") and "\n[1] " not in block


def test_the_numbers_are_rebuilt_from_the_stored_tasks_to_number_on_from() -> None:
    """A resumed run (or an operator action) reads the numbers back from its tasks' passages."""
    stored = cited_task(retrieval=Retrieval(query="q", results=[{**chunk(1, "a.md#A", "a"), "ref": "4"}]))
    numbers = SourceNumbers.of([stored])
    assert numbers.assign(chunk(8, "a.md#A", "other chunk")) == 4
    assert numbers.assign(chunk(9, "z.md#Z", "z")) == 5
    assert numbered(stored) and not numbered(cited_task())


def test_markers_resolve_by_the_run_numbers_and_to_sources_earlier_tasks_were_given() -> None:
    """[3] is the task's passage, [1] a source of an earlier task (hook or text); [7] names none: a warning."""
    results = [{**chunk(30, "c.md#C", "c"), "ref": "3"}]
    known = {"1": {"source": "a.md#A", "chunk_id": 10}, "3": {"source": "c.md#C", "chunk_id": 30}}
    fields = {"hook": "Why [1]?", "grip": "Because [3].", "reinforce": "As [1] said [7].", "loop": "[8]?"}
    citations, warnings = resolve(fields, results, known)
    assert [(c.ref, c.source, c.chunk_id, c.fields) for c in citations] == [
        ("1", "a.md#A", 10, ["hook", "reinforce"]),
        ("3", "c.md#C", 30, ["grip"]),
    ]
    assert warnings == [
        "marker [7] in reinforce names no passage (it was given [3])",
        "marker [8] in loop names no passage (it was given [3])",
    ]


def test_the_summarys_source_list_names_each_cited_source_once_by_number() -> None:
    """Two tasks citing source 2 list it once; a task stored before run numbering adds nothing."""
    results = [{**chunk(1, "a.md#A", "a"), "ref": "2"}, {**chunk(2, "b.md#B", "b"), "ref": "5"}]
    first = _cited(cited_task(task_id="one", retrieval=Retrieval(query="q", results=results)))
    second = _cited(cited_task(task_id="two", position=1, retrieval=Retrieval(query="q", results=results[:1])))
    assert source_list([first, second, cited_task(task_id="old", position=2)]) == [
        SOURCES_LINE,
        "[2] a.md#A",
        "[5] b.md#B",
    ]
    assert source_list([cited_task()]) == []


def _cited(state: TaskState) -> TaskState:
    assert state.retrieval is not None
    fields = {"grip": "[2].", "payoff": "[5]." if len(state.retrieval.results) > 1 else "[2]."}
    citations, _ = resolve(fields, state.retrieval.results)
    return state.model_copy(update={"citations": citations})


# -- a real run on the sample knowledge base ----------------------------------------------------------------

GOAL = "Checkout latency breached its SLO in three regions right after cache nodes restarted. What should we do?"


@pytest.fixture
def sample_run(tmp_path: Path) -> Iterator[tuple[Any, Any, str]]:
    """A finished three-task run of the offline composer over the sample knowledge base: store, runner, run id."""
    from marsrag.llm.composer import OfflineComposer
    from marsrag.rag import KnowledgeBase
    from marsrag.runtime.runner import WorkflowRunner
    from marsrag.store import open_store
    from marsrag.tasks import load_config
    from tests.conftest import REPO

    store = open_store(f"sqlite:///{tmp_path}/runs.db")
    try:
        kb = KnowledgeBase(store)
        kb.ingest([REPO / "examples" / "knowledge_base"])
        runner = WorkflowRunner(store, load_config(None), OfflineComposer(model="offline-composer"), retriever=kb)
        run = runner.run(GOAL)
        assert run.status == "completed"
        yield store, runner, run.run_id
    finally:
        store.close()


def run_numbers(tasks: list[TaskState]) -> dict[str, str]:
    """Every (ref, source) the run's tasks were given or cite, checked to be one number per source."""
    by_ref: dict[str, str] = {}
    by_source: dict[str, str] = {}
    for task in tasks:
        assert task.retrieval is not None
        given = [(str(item["ref"]), str(item["source"])) for item in task.retrieval.results]
        assert len({source for _, source in given}) == len(given), "a section is one passage of a task"
        for ref, source in [*given, *((c.ref, c.source) for c in task.citations)]:
            assert by_ref.setdefault(ref, source) == source, f"[{ref}] names two sources"
            assert by_source.setdefault(source, ref) == ref, f"{source} has two numbers"
    return by_ref


@pytest.mark.crewai
def test_a_run_numbers_each_source_once_across_its_tasks_and_its_summary(sample_run: tuple[Any, Any, str]) -> None:
    """Every task's markers and citations use the run's numbers; a source given to two tasks has one number;
    the summary lists the cited sources by those numbers."""
    store, _, run_id = sample_run
    tasks = store.get_tasks(run_id)
    numbers = run_numbers(tasks)
    shared = [ref for ref in numbers if sum(ref in {str(i["ref"]) for i in t.retrieval.results} for t in tasks) > 1]
    assert shared, "some source is given to two tasks of the run"
    for task in tasks:
        assert task.citations and task.citation_warnings == []
        for citation in task.citations:
            for name in citation.fields:
                assert f"[{citation.ref}]" in getattr(task.loop_output, name)
    summary = store.get_run(run_id).summary.splitlines()
    listed = summary[summary.index(SOURCES_LINE) + 1 :]
    cited = {c.ref: c.source for t in tasks for c in t.citations}
    assert listed == [f"[{ref}] {cited[ref]}" for ref in sorted(cited, key=int)]


@pytest.mark.crewai
def test_a_repair_and_a_resume_keep_the_runs_numbers(sample_run: tuple[Any, Any, str]) -> None:
    """An operator repair re-briefs the task with its stored numbers; the numbers of the run are unchanged."""
    from marsrag.runtime.actions import repair_task

    store, runner, run_id = sample_run
    before = run_numbers(store.get_tasks(run_id))
    last = store.get_tasks(run_id)[-1]
    store.save_task(last.model_copy(update={"validation": last.validation.model_copy(update={"status": "failed"})}))
    repaired = repair_task(runner, run_id, last.task_id)
    assert repaired.citations and repaired.citation_warnings == []
    assert run_numbers(store.get_tasks(run_id)) == before


@pytest.mark.crewai
def test_a_tools_passages_take_the_runs_numbers_and_a_chunk_of_a_given_section_joins_its_passage() -> None:
    """The knowledge tool's hits: a new chunk of given section a.md#A is [1] and joins it; z.md#Z is new: [3]."""
    from types import SimpleNamespace

    from marsrag.integrations.passages import PASSAGES
    from marsrag.runtime.states import with_found

    numbers = SourceNumbers()
    given = numbers.number([chunk(1, "a.md#A", "First."), chunk(5, "b.md#B", "Bee.")])
    PASSAGES.given("numbering-task", given, numbers.assign)
    found = [chunk(2, "a.md#A", "Second."), chunk(9, "z.md#Z", "Zed."), chunk(5, "b.md#B", "Bee.")]
    assert PASSAGES.found("numbering-task", found) == [1, 3, 2]
    stored = with_found(Retrieval(query="q", results=given), SimpleNamespace(id="numbering-task"))
    assert stored is not None
    assert [(item["ref"], item["source"], item["text"]) for item in stored.results] == [
        ("1", "a.md#A", f"First.{GAP}Second."),
        ("2", "b.md#B", "Bee."),
        ("3", "z.md#Z", "Zed."),
    ]
    citations, warnings = resolve({"grip": "[1] [3]."}, stored.results, numbers.sources())
    assert [(c.ref, c.source) for c in citations] == [("1", "a.md#A"), ("3", "z.md#Z")] and warnings == []


@pytest.mark.crewai
def test_a_followed_run_keeps_the_numbers_of_the_run_it_follows(sample_run: tuple[Any, Any, str]) -> None:
    """The next run of a follow numbers a source the first run was given by that run's number, new ones after."""
    store, runner, run_id = sample_run
    first = run_numbers(store.get_tasks(run_id))
    followed = runner.follow(run_id)
    assert followed.status == "completed"
    second = run_numbers(store.get_tasks(followed.run_id))
    by_source = {source: ref for ref, source in first.items()}
    assert set(by_source) & set(second.values()), "the followed run is given sources of the first"
    assert all(by_source.get(source, ref) == ref for ref, source in second.items())
    new = [int(ref) for ref, source in second.items() if source not in by_source]
    assert all(number > max(map(int, first)) for number in new)


def test_a_long_section_retrieved_as_two_chunks_is_one_numbered_passage(tmp_path: Path) -> None:
    """A section ingested as two chunks, both retrieved, is given to the task as one passage [1], in order."""
    from marsrag.rag import KnowledgeBase
    from marsrag.runtime.retrieval import retrieve
    from tests.rag.conftest import write

    first = " ".join(["Tomatoes split when watering swings from dry to soaked."] * 12)
    second = " ".join(["Tomatoes split less under mulch that keeps watering even."] * 12)
    write(tmp_path / "kb", "garden/tomatoes.md", f"# Tomatoes\n\n## Splitting\n\n{first}\n\n{second}\n")
    write(tmp_path / "kb", "garden/soil.md", "# Soil\n\n## Lime\n\nTomatoes rarely need lime; test the soil first.\n")
    with KnowledgeBase.open(f"sqlite:///{tmp_path}/kb.db") as kb:
        kb.ingest([tmp_path / "kb" / "garden"])
        raw = kb.search("tomatoes split watering", 5)
        assert [hit["source"] for hit in raw].count("garden/tomatoes.md#Tomatoes > Splitting") == 2
        retrieval = retrieve(kb, None, "Why do my tomatoes split after watering?", 5, numbers=SourceNumbers())
    splitting = [item for item in retrieval.results if item["source"].endswith("#Tomatoes > Splitting")]
    assert len(splitting) == 1 and splitting[0]["ref"] == "1"
    assert splitting[0]["text"] == f"{first}\n\n{second}" and len(splitting[0]["chunk_ids"]) == 2
    assert retrieval.support is not None and retrieval.support.best == 1
