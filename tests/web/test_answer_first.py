"""The pages read answer first (issue 18), through the app on a real SQLite store: run page, runs list, ask page.

A cited task is saved through the store as the runner stores one; the page must link its known markers to
its numbered sources, leave the others as text, and put the summary and next action above the first task.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from marsrag.state import LoopFields
from marsrag.store.conformance.records import run
from marsrag.views.ask import COMPOSER_LABEL, answering_llm
from tests.contract.samples import CONTENT
from tests.views.cited import CITED, RESULTS, WARNING, cited_task
from tests.web.conftest import Site

pytestmark = pytest.mark.crewai

SUMMARY = f"- {CITED['payoff']} (diagnose)\nEvidence: {CITED['reinforce']}\nNext: {CONTENT['loop']}"


def store_cited_run(site: Site, run_id: str = "cited", **task_changes: object) -> str:
    """Save a completed run with one cited task through the store; return its run page."""
    site.backend.store.create_run(run(run_id, status="completed", summary=SUMMARY, goal="Why are regions slow?"))
    site.backend.store.save_task(cited_task(run_id, **task_changes))  # type: ignore[arg-type]
    response = site.client.get(f"/runs/{run_id}")
    assert response.status_code == 200, response.text
    return response.text


def test_the_run_page_puts_goal_outcome_summary_and_next_action_above_the_first_task(
    site_factory: Callable[..., Site],
) -> None:
    """In the page's order: goal, outcome in words, summary, the next-action card, then the task block."""
    html = store_cited_run(site_factory())
    marks = [
        html.index('<h1 class="goal">'),
        html.index('class="outcome-text"'),
        html.index('id="summary"'),
        html.index('id="next-action"'),
        html.index('<section class="task"'),
    ]
    assert marks == sorted(marks)
    assert "Next recommended question/action" in html and "tasks: 1 valid" in html
    # The card below the summary says the next step: the summary does not repeat it.
    assert html.count(CONTENT["loop"]) == html.count(f">{CONTENT['loop']}<")


def test_known_markers_link_to_the_numbered_sources_and_unknown_ones_stay_text(
    site_factory: Callable[..., Site],
) -> None:
    """[1] and [2] link to #src-diagnose-1/2 (cards and summary); [9] is text; each source has its anchor."""
    html = store_cited_run(site_factory())
    links = re.findall(r'<a href="#(src-diagnose-\d+)" class="cite" data-ref="(\d+)"[^>]*>\[(\d+)\]</a>', html)
    assert {(anchor, ref) for anchor, ref, _ in links} == {("src-diagnose-1", "1"), ("src-diagnose-2", "2")}
    assert all(anchor.endswith(ref) and ref == shown for anchor, ref, shown in links)
    # grip [2], payoff [1], reinforce [1][2], in the summary payoff [1] and evidence [1][2].
    assert len(links) == 4 + 3
    assert "[9]" in html and 'data-ref="9"' not in html
    for number, result in enumerate(RESULTS, start=1):
        item = re.search(
            rf'<li class="source source-cited" id="src-diagnose-{number}" data-ref="{number}">(.*?)</li>', html, re.S
        )
        assert item, f"no source [{number}]"
        title, heading = result["source"].split("#")
        assert f'<cite class="source-title">{title}</cite>' in item[1]
        assert f'<span class="source-heading">{heading.replace(">", "&gt;")}</span>' in item[1]
        assert '<details class="source-passage"><summary>Passage</summary>' in item[1]
    assert WARNING in html and 'class="hint citation-warnings"' in html


def test_without_citations_the_markers_show_as_text_and_the_sources_are_still_numbered(
    site_factory: Callable[..., Site],
) -> None:
    """A run stored before citations: no cite link at all, its text as stored, its passages listed [1], [2]."""
    html = store_cited_run(site_factory(), citations=[], citation_warnings=[])
    assert 'class="cite"' not in html and "citation-warnings" not in html
    assert f'<p class="card-text">{CITED["payoff"]}</p>' in html
    assert re.findall(r'<li class="source" id="src-diagnose-(\d+)"', html) == ["1", "2"]


def test_markup_in_cited_text_is_escaped_and_only_markers_become_links(site_factory: Callable[..., Site]) -> None:
    """A section holding tags and a marker: the tags are text, the marker the only link."""
    grip = '<a href="javascript:alert(1)">[1]</a> <script>alert(2)</script> [1]'
    html = store_cited_run(site_factory(), loop_output=LoopFields(**{**CITED, "grip": grip}))
    section = re.search(r'data-field="grip">\s*<h3>Grip</h3>\s*<p class="card-text">(.*?)</p>', html, re.S)
    assert section
    assert "<script>" not in section[1] and "javascript:" not in section[1].replace("&#34;javascript:", "")
    assert section[1].startswith('&lt;a href=&#34;javascript:alert(1)&#34;&gt;<a href="#src-diagnose-1"')
    assert section[1].count('class="cite"') == 2 and "&lt;script&gt;alert(2)&lt;/script&gt;" in section[1]


def test_attempts_show_status_in_words_errors_the_call_and_the_raw_text_folded(
    site_factory: Callable[..., Site],
) -> None:
    """Each attempt: number, kind, status word; its errors listed; the model line; raw text inside a details."""
    html = store_cited_run(site_factory())
    attempts = re.findall(
        r'<li class="attempt" data-kind="([^"]+)" data-status="(\w+)">(.*?)</li>\s*(?=<li class="attempt"|</ol>)',
        html,
        re.S,
    )
    assert [(kind, status) for kind, status, _ in attempts] == [("answer", "failed"), ("repair (in the run)", "valid")]
    first, second = (body for _, _, body in attempts)
    assert (
        'Attempt 1 · answer · <span class="attempt-status attempt-status-failed"' in first
        and "✗ Failed</span>" in first
    )
    assert '<ul class="attempt-errors"><li>Grip: grip is missing</li></ul>' in first
    assert '<p class="hint attempt-call">offline-composer</p>' in first
    raw = "<pre>{&#34;hook&#34;: &#34;...&#34;}</pre>"
    assert f'<details class="attempt-raw"><summary>Raw answer (15 characters)</summary>{raw}</details>' in first
    assert "✓ Valid</span>" in second and "attempt-call" not in second
    # Raw text appears only inside its folded block.
    assert html.count("<pre>") == html.count('<details class="attempt-raw">') == 2


def test_the_five_sections_are_labelled_rows_in_the_fixed_order(site_factory: Callable[..., Site]) -> None:
    """Hook, Grip, Payoff, Reinforce, Loop: one row each, label then text, in the cards block."""
    html = store_cited_run(site_factory())
    rows = re.findall(
        r'<article class="card section-card" data-field="(\w+)">\s*<h3>(\w+)</h3>\s*<p class="card-text">', html
    )
    assert rows == [(name, name.title()) for name in CONTENT]


def test_the_runs_list_has_a_tasks_column_with_each_runs_outcome(site: Site) -> None:
    """The Tasks column says how each run's tasks ended, in words."""
    run_id = site.start()
    site.backend.store.create_run(run("mixed", status="completed"))
    site.backend.store.save_task(cited_task("mixed"))
    site.backend.store.save_task(cited_task("mixed", task_id="plan", position=1, validation={"status": "partial"}))  # type: ignore[arg-type]
    html = site.client.get("/").text
    assert '<th scope="col">Tasks</th>' in html
    cells = dict(
        re.findall(
            r'<tr class="run-row" data-run-id="([^"]+)">.*?<td class="run-tasks" data-outcome="([^"]+)">', html, re.S
        )
    )
    assert cells == {run_id: "3 valid", "mixed": "1 valid, 1 partial"}


def test_the_ask_page_says_which_llm_answers_and_describes_each_workflow(site: Site) -> None:
    """The replay LLM of the test server is named as a replay; each sample workflow shows its description."""
    html = site.client.get("/ask").text
    llm = re.search(r'<strong class="llm-name">([^<]*)</strong>', html)
    assert llm and llm[1] == "replay script replay-1.jsonl (recorded answers, not a live model)"
    descriptions = dict(
        re.findall(
            r'<div class="workflow-choice" data-workflow="(\w+)">'
            r"<dt>\w+[^<]*(?:<span[^>]*>[^<]*</span>)?</dt><dd>([^<]*)</dd>",
            html,
        )
    )
    assert set(descriptions) == set(site.backend.project.workflows)
    assert descriptions["support_answer"] == "Diagnose a reliability problem, recommend a fix and plan its rollout."
    assert all(text and text != "(no description)" for text in descriptions.values())


@pytest.mark.parametrize(
    ("spec", "base_url", "shown"),
    [
        (None, None, COMPOSER_LABEL),
        ("composer", None, COMPOSER_LABEL),
        ("replay:/srv/scripts/a.jsonl", None, "replay script a.jsonl (recorded answers, not a live model)"),
        ("ollama/llama3.1", None, "ollama/llama3.1"),
        ("openai/smollm2", "http://user:secret@127.0.0.1:8088/v1?key=k", "openai/smollm2 at 127.0.0.1:8088"),
        ("openai/x", "http://[::1]:9000", "openai/x at [::1]:9000"),
        ("openai/x", "not a url", "openai/x"),
    ],
)
def test_the_answering_llm_is_named_without_credentials(spec: str | None, base_url: str | None, shown: str) -> None:
    """The composer says it is not a language model; a base URL shows only its host and port."""
    assert answering_llm(spec, base_url) == shown
    assert "secret" not in answering_llm(spec, base_url)


def test_each_source_shows_the_retrievers_that_found_it_and_a_skipped_vector_search_is_noted(
    site_factory: Callable[..., Site],
) -> None:
    from marsrag.state import Retrieval

    results = [{**RESULTS[0], "retrievers": {"keyword": 2, "vector": 1}}, RESULTS[1]]
    skipped = "vector search skipped: <the endpoint> answered 500"
    html = store_cited_run(
        site_factory(), retrieval=Retrieval(query="q", results=results, retrievers=["keyword"], skipped=skipped)
    )
    first = re.search(r'<li class="source source-cited" id="src-diagnose-1".*?</li>', html, re.S)
    second = re.search(r'<li class="source source-cited" id="src-diagnose-2".*?</li>', html, re.S)
    assert first and "keyword #2 · vector #1</span>" in first[0]
    assert second and "source-found" not in second[0]
    assert "Keyword search only: vector search skipped: &lt;the endpoint&gt; answered 500" in html
