"""One number per source in every view of a run (issue 38): the run page, the API's JSON and ``marsrag runs show``.

A real three-task run of the offline composer over the sample knowledge base, stored in the site's store; a
run stored before the run's numbering (each task numbering its own passages) still renders as it did.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest

from marsrag.store.conformance.records import run
from marsrag.views.summary import SOURCES_LINE
from tests.test_cli import marsrag
from tests.views.cited import cited_task
from tests.web.conftest import Site
from tests.web.test_answer_first import SUMMARY

pytestmark = pytest.mark.crewai

GOAL = "Checkout latency breached its SLO in three regions right after cache nodes restarted. What should we do?"


def numbered_run(site: Site) -> str:
    """Run the default workflow on the sample knowledge base into the site's store; the run id."""
    from marsrag.llm.composer import OfflineComposer
    from marsrag.rag import KnowledgeBase
    from marsrag.runtime.runner import WorkflowRunner
    from marsrag.tasks import load_config
    from tests.conftest import REPO

    store = site.backend.store
    kb = KnowledgeBase(store)
    kb.ingest([REPO / "examples" / "knowledge_base"])
    done = WorkflowRunner(store, load_config(None), OfflineComposer(model="offline-composer"), retriever=kb).run(GOAL)
    assert done.status == "completed"
    return done.run_id


def one_number_per_source(pairs: list[tuple[str, str]]) -> dict[str, str]:
    by_ref: dict[str, str] = {}
    by_source: dict[str, str] = {}
    for ref, source in pairs:
        assert by_ref.setdefault(ref, source) == source, f"[{ref}] names two sources"
        assert by_source.setdefault(source, ref) == ref, f"{source} has two numbers"
    return by_ref


def test_the_api_json_the_page_and_the_cli_show_one_number_per_source(
    site_factory: Callable[..., Site],
) -> None:
    """The same source carries the same [n] in every task's citations and sources panel, and in the summary."""
    site = site_factory()
    run_id = numbered_run(site)

    document = site.client.get(f"/api/runs/{run_id}").json()
    cited = [(c["ref"], c["source"]) for task in document["tasks"] for c in task["citations"]]
    given = [(str(r["ref"]), r["source"]) for task in document["tasks"] for r in task["retrieval"]["results"]]
    numbers = one_number_per_source(cited + given)
    tasks_of = {
        ref: {t["task_id"] for t in document["tasks"] for c in t["citations"] if c["ref"] == ref} for ref in numbers
    }
    assert any(len(tasks) > 1 for tasks in tasks_of.values()), "some source is cited by two tasks"
    summary = document["summary"].splitlines()
    listed = summary[summary.index(SOURCES_LINE) + 1 :]
    assert listed == [f"[{ref}] {numbers[ref]}" for ref in sorted(dict(cited), key=int)]

    html = site.client.get(f"/runs/{run_id}").text
    panels = re.findall(
        r'id="src-([\w-]+?)-(\d+)" data-ref="(\d+)">\s*<span class="source-ref">\[(\d+)\]</span>\s*'
        r'<cite class="source-title">([^<]*)</cite>',
        html,
    )
    assert panels and all(ref == shown == anchor_ref for _, anchor_ref, ref, shown, _ in panels)
    titles = {ref: title for _, _, ref, _, title in panels}
    assert all(numbers[ref].partition("#")[0] == title for ref, title in titles.items())
    # Every marker of the summary links, a payoff several tasks gave (``(diagnose, plan)``) included.
    section = html[html.index('id="summary"') : html.index("</section>", html.index('id="summary"'))]
    assert len(re.findall(r"\[\d+\]", section)) == len(re.findall(r'class="cite"[^>]*>\[\d+\]</a>', section))
    payoffs = [task["loop_output"]["payoff"] for task in document["tasks"] if task["loop_output"]]
    if len(set(payoffs)) < len(payoffs):  # the composer's payoffs differ by task unless the passages repeat
        assert re.search(r"\(\w+, \w+\)</li>", section), "a payoff two tasks gave is listed once"
    run_list = re.findall(r'id="summary-src-(\d+)" data-ref="\d+"[^>]*><a href="#src-[\w-]+-(\d+)"', html)
    assert [ref for ref, _ in run_list] == [line[1 : line.index("]")] for line in listed]
    assert all(ref == linked for ref, linked in run_list)

    shown = marsrag("runs", "show", run_id, "--db", site.db)
    assert shown.returncode == 0, shown.stderr
    # Each task's cited sources, then the run's under the summary: by number, document and own heading.
    assert shown.stdout.count(" SOURCES ") == len(document["tasks"]) + 1
    summary_part = shown.stdout[shown.stdout.index("\nSummary") :]
    printed = re.findall(r"\[(\d+)\]\s+(\S+\.md) · ", summary_part)
    assert printed == [(ref, numbers[ref].partition("#")[0]) for ref in sorted(dict(cited), key=int)]
    as_json = json.loads(marsrag("runs", "show", run_id, "--db", site.db, "--format", "json").stdout)
    assert [(c["ref"], c["source"]) for t in as_json["tasks"] for c in t["citations"]] == cited


def test_a_run_stored_before_run_numbering_renders_as_it_did(site_factory: Callable[..., Site]) -> None:
    """Per-task numbers (no ``ref`` on passages) link to the task's own passages; no run source list appears."""
    site = site_factory()
    site.backend.store.create_run(run("old", status="completed", summary=SUMMARY, goal="Why are regions slow?"))
    site.backend.store.save_task(cited_task("old"))  # type: ignore[arg-type]
    html = site.client.get("/runs/old").text
    assert 'id="src-diagnose-1" data-ref="1"' in html and 'id="src-diagnose-2" data-ref="2"' in html
    assert '<a href="#src-diagnose-2" class="cite" data-ref="2"' in html
    assert "summary-sources" not in html
    document = site.client.get("/api/runs/old").json()
    assert [c["ref"] for c in document["tasks"][0]["citations"]] == ["1", "2"]
