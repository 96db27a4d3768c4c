"""Answer-first pages in a real headless Chromium (Debian's /usr/bin/chromium, driven by Playwright): issue 18.

One server per test over a fresh SQLite file: a run asked through the page (replay LLM), and runs saved
through the real store with citations, long paths, long ids and long raw answers. The run page must show the
summary and next action above the first task, read its sections as rows, link markers to their sources; no
page may scroll sideways at 390 px; the runs list never breaks a word mid-word at 1280 px. Screenshots go to
``test-artifacts/browser/answer-first-*.png`` (git-ignored).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from marsrag.state import AttemptRecord, Retrieval
from marsrag.store.conformance.records import run
from tests.contract.samples import CONTENT
from tests.views.cited import RESULTS, cited_task
from tests.web._browser import Tab
from tests.web.test_browser import GOAL, NEXT_HEADING, VALID, ask, assert_fits_the_width, wait_completed

pytestmark = [pytest.mark.browser, pytest.mark.crewai]

PHONE = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 2, "is_mobile": True, "has_touch": True}
DESKTOP = {"viewport": {"width": 1280, "height": 900}}
LONG_PATH = (
    "knowledge/runbooks/reliability/caches/" + "pre-warming-from-snapshots-before-rejoining-the-pool" * 2 + ".md"
)
LONG_TOKEN = "x" * 300
#: Goals like a person's, long enough that a squeezed column would have to break them.
GOALS = (
    "Three of our API regions breached their latency SLO this week: what is going on and what do we do about it?",
    "Checkout latency doubled after Tuesday's deploy; should we roll back the connection-pool change or scale out?",
    "Our nightly reconciliation job overran its window twice: which of its dependencies is responsible?",
)


def store_cited_run(tab: Tab, run_id: str = "cited-run", *, long: bool = False) -> str:
    """Save a completed run with one cited task through the real store; ``long`` adds long paths and tokens."""
    store = tab.app.state.backend.store
    summary = f"- {cited_task().loop_output.payoff} (diagnose)\nEvidence: {cited_task().loop_output.reinforce}"
    goal = GOALS[0] + (f" See {LONG_PATH}" if long else "")
    store.create_run(run(run_id, status="completed", summary=summary, goal=goal, session_id="session-cited"))
    changes: dict[str, Any] = {}
    if long:
        results = [{**RESULTS[0], "source": f"{LONG_PATH}#Pre-warming", "text": LONG_TOKEN}, RESULTS[1]]
        changes = {
            "retrieval": Retrieval(query=LONG_TOKEN, results=results),
            "attempts": [AttemptRecord(number=1, raw=json.dumps({"grip": LONG_TOKEN}), status="valid")],
        }
    store.save_task(cited_task(run_id, **changes))
    return run_id


def top(page: Page, selector: str) -> float:
    """The y position of the first element matching ``selector`` (its box, in page coordinates)."""
    box = page.locator(selector).first.bounding_box()
    assert box is not None, f"{selector} is not rendered"
    return float(box["y"])


def open_every_details(page: Page) -> None:
    """Open every <details>, so the width check measures what is folded too (passages, raw answers)."""
    page.evaluate("() => document.querySelectorAll('details').forEach((d) => { d.open = true; })")


def test_the_run_page_shows_the_summary_and_next_action_above_the_first_task(ui: Callable[..., Tab]) -> None:
    """A run asked on the page: goal, outcome, summary, next action, then the tasks; sections stack as rows."""
    tab = ui([VALID] * 3, **DESKTOP)
    page = tab.page
    ask(tab, GOAL)
    wait_completed(page)
    tab.shot("run-1280")

    expect(page.locator("section#next-action h2")).to_have_text(NEXT_HEADING)
    expect(page.locator(".run-outcome .outcome-text")).to_have_text("tasks: 3 valid")
    first_task = top(page, "section.task")
    goal, outcome = top(page, "h1.goal"), top(page, ".run-outcome")
    summary, next_action = top(page, "section#summary"), top(page, "section#next-action")
    assert goal < outcome < summary < next_action < first_task, (goal, outcome, summary, next_action, first_task)
    # The whole answer is on the first screen of a desktop window.
    assert top(page, "section#next-action form#follow-form button") < 900
    # The three replayed tasks give one payoff word for word: the summary lists it once, naming all three.
    expect(page.locator("section#summary .summary-payoff")).to_have_count(1)
    expect(page.locator("section#summary .summary-payoff")).to_contain_text("(diagnose, recommend, plan)")

    # The five sections of a task are rows, top to bottom, each label beside its text (not five columns).
    cards = page.locator('section.task[data-task-id="diagnose"] article.section-card')
    boxes = [card.bounding_box() for card in cards.all()]
    assert all(box is not None for box in boxes) and len(boxes) == 5
    assert len({round(box["x"]) for box in boxes if box}) == 1, f"the sections are not stacked: {boxes}"
    ys = [box["y"] for box in boxes if box]
    assert ys == sorted(ys) and len(set(ys)) == 5
    for card in cards.all():
        label, text = card.locator("h3").bounding_box(), card.locator(".card-text").bounding_box()
        assert label and text and label["x"] + label["width"] <= text["x"] and abs(label["y"] - text["y"]) < 20
    expect(page.locator('section.task[data-task-id="diagnose"] .card-text')).to_have_text(list(CONTENT.values()))


def test_citation_markers_link_to_the_sources_panel_and_open_the_passage(ui: Callable[..., Tab]) -> None:
    """Clicking [1] in the payoff lands on source [1] (path, heading); its passage opens on demand."""
    tab = ui([], **DESKTOP)
    page = tab.page
    run_id = store_cited_run(tab)
    tab.open(f"/runs/{run_id}")

    task = page.locator('section.task[data-task-id="diagnose"]')
    payoff_cite = task.locator('article.section-card[data-field="payoff"] a.cite')
    expect(payoff_cite).to_have_text(["[1]"])
    expect(task.locator('article.section-card[data-field="reinforce"] a.cite')).to_have_text(["[1]", "[2]"])
    # [9] names no passage: it is text, not a link.
    expect(task.locator('article.section-card[data-field="reinforce"] .card-text')).to_contain_text("[9]")
    expect(task.locator(".citation-warnings")).to_contain_text("names no passage")
    for link in page.locator("a.cite").all():
        target = (link.get_attribute("href") or "").removeprefix("#")
        expect(page.locator(f'[id="{target}"]')).to_have_count(1)

    payoff_cite.click()
    page.wait_for_url(re.compile(r"#src-diagnose-1$"))
    source = page.locator("li#src-diagnose-1")
    expect(source).to_be_in_viewport()
    assert page.evaluate("() => document.querySelector(':target')?.id") == "src-diagnose-1"
    title, heading = RESULTS[0]["source"].split("#")
    expect(source.locator("cite.source-title")).to_have_text(title)
    expect(source.locator(".source-heading")).to_have_text(heading)
    passage = source.locator(".passage-text")
    expect(passage).to_be_hidden()
    source.locator("details.source-passage summary").click()
    expect(passage).to_be_visible()
    expect(passage).to_contain_text("Pre-warm each node from the latest snapshot")
    tab.shot("cited-source")

    # The summary's markers link to the same task's sources.
    summary_cite = page.locator("section#summary .summary-payoff a.cite")
    expect(summary_cite).to_have_attribute("href", "#src-diagnose-1")
    # Attempts: formatted, the raw text folded until asked for.
    attempts = task.locator("details.attempts")
    attempts.locator("> summary").click()
    first = attempts.locator("li.attempt").first
    expect(first.locator(".attempt-status")).to_have_text("✗ Failed")
    expect(first.locator(".attempt-errors li")).to_have_text(["Grip: grip is missing"])
    expect(first.locator("details.attempt-raw pre")).to_be_hidden()
    tab.shot("attempts")


def test_at_390_px_no_page_scrolls_sideways(ui: Callable[..., Tab]) -> None:
    """Run pages (asked and cited with long paths), runs list, ask, session and dashboard fit a phone's width."""
    tab = ui([VALID] * 3, **PHONE)
    page = tab.page
    asked = ask(tab, GOALS[1])
    wait_completed(page)
    cited = store_cited_run(tab, long=True)
    for number, goal in enumerate(GOALS):
        tab.app.state.backend.store.create_run(run(f"{number:02d}" + "f" * 30, goal=goal, status="completed"))

    pages = {
        "run": f"/runs/{asked}",
        "cited-run": f"/runs/{cited}",
        "runs": "/",
        "ask": "/ask",
        "session": "/sessions/session-cited",
        "dashboard": "/dashboard",
    }
    for name, path in pages.items():
        tab.open(path)
        open_every_details(page)
        tab.shot(f"{name}-390")
        assert_fits_the_width(page, 390, f"the {name} page ({path})")


def test_the_runs_list_at_1280_px_never_breaks_a_word_mid_word(ui: Callable[..., Tab]) -> None:
    """Every word of the runs table sits on one line (a word split over two lines has two boxes)."""
    tab = ui([], **DESKTOP)
    page = tab.page
    store = tab.app.state.backend.store
    for number in range(12):
        run_id = f"{number:02d}" + "a" * 30
        goal = f"{GOALS[number % 3]} Context: runbooks/reliability/cache-pre-warming.md, dashboards/eu-west-1-latency"
        workflow = ("support_answer", "change_review")[number % 2]
        store.create_run(run(run_id, goal=goal, workflow=workflow, status="completed", session_id=f"s{number}-" * 6))
        for position, status in enumerate(("valid", "partial", "failed")[: 1 + number % 3]):
            task_id = ("diagnose", "recommend", "plan")[position]
            store.save_task(cited_task(run_id, task_id=task_id, position=position, validation={"status": status}))
    tab.open("/")
    tab.shot("runs-1280")
    expect(page.locator("table.runs thead th")).to_have_text(
        ["Goal", "Workflow", "Status", "Tasks", "Started", "Session"]
    )
    expect(page.locator("tr.run-row td.run-tasks").first).to_have_text(
        re.compile(r"^\d valid(, \d partial)?(, \d failed)?$")
    )
    split = page.evaluate(
        """() => {
            const split = [];
            const walker = document.createTreeWalker(document.querySelector("table.runs"), NodeFilter.SHOW_TEXT);
            for (let node = walker.nextNode(); node; node = walker.nextNode()) {
                const text = node.textContent;
                for (const match of text.matchAll(/[^\\s\\-\\u2010-\\u2014·]+/g)) {
                    const range = document.createRange();
                    range.setStart(node, match.index);
                    range.setEnd(node, match.index + match[0].length);
                    const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
                    if (lines.size > 1) split.push(match[0]);
                }
            }
            return split;
        }"""
    )
    assert split == [], f"words broken over two lines: {split}"
    assert_fits_the_width(page, 1280, "the runs list")
