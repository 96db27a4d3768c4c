"""The web UI in a real headless Chromium (Debian's /usr/bin/chromium, driven by Playwright for Python).

Each test serves a fresh app (its own SQLite file and replay script) with uvicorn on a free loopback port,
then uses the pages as a person would: ask a goal, read the five section cards and the badges, follow the
next action, run a repair or regenerate a section, open the session chain. The only fake is the LLM: a
replay script holding exactly the outputs the scenario consumes, checked to be used up at the end.

Screenshots are saved under ``test-artifacts/browser/`` (git-ignored): ``<test>-<step>.png`` for each step
and ``<test>-end.png`` with the page as the test left it (also when it failed).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from marsrag.state import FALLBACK_HOOK
from tests.contract.samples import CONTENT
from tests.web._browser import WAIT_MS, Tab

pytestmark = [pytest.mark.browser, pytest.mark.crewai]


TITLES = ["Hook", "Grip", "Payoff", "Reinforce", "Loop"]
FIELDS = list(CONTENT)
#: The tasks of the default workflow ``support_answer``, in order.
TASKS = ["diagnose", "recommend", "plan"]
WORKFLOW = "support_answer"
GOAL = "Three of our API regions breached their latency SLO this week: what is going on and what do we do?"
NEXT_HEADING = "Next recommended question/action"
FIXED_LOOP = "Which region should get the pre-warmed cache first?"
RUN_URL = re.compile(r"/runs/(?P<run_id>[^/#?]+)(#.*)?$")


def answer(**changes: str | None) -> str:
    """A JSON answer: CONTENT with some sections changed (None leaves a section out)."""
    return json.dumps({name: value for name, value in {**CONTENT, **changes}.items() if value is not None})


#: A valid answer: five sections, each one to four sentences.
VALID = answer()
#: An answer with no section at all: failed (fewer than three valid sections).
NO_IDEA = "No idea."
#: An answer with two empty sections: partial (three of five valid).
PARTIAL = answer(grip="", payoff="")


# -- steps ------------------------------------------------------------------------------------------------------


def ask(tab: Tab, goal: str, *, session_id: str | None = None) -> str:
    """Submit the ask form and land on the new run's page; returns its run id."""
    page = tab.page
    tab.open("/ask")
    form = page.locator("form#ask-form")
    form.locator("textarea[name=goal]").fill(goal)
    form.locator("select[name=workflow]").select_option(WORKFLOW)
    if session_id is not None:
        form.locator("input[name=session_id]").fill(session_id)
    form.get_by_role("button", name="Start the run").click()
    page.wait_for_url(RUN_URL)
    return run_id_of(page)


def run_id_of(page: Page) -> str:
    """The run id in the page's URL (``/runs/{run_id}``)."""
    matched = RUN_URL.search(page.url)
    assert matched, f"not a run page: {page.url}"
    return matched["run_id"]


def wait_completed(page: Page) -> None:
    """Wait (across the page's self-refreshes) until the run has finished, and check it completed."""
    page.wait_for_selector(
        'header.run-head:not([data-run-status="pending"]):not([data-run-status="running"])', timeout=WAIT_MS
    )
    head = page.locator("header.run-head")
    status = head.get_attribute("data-run-status")
    reason = " ".join(head.locator(".problem").all_inner_texts())
    assert status == "completed", f"the run ended {status}: {reason or 'no reason shown'}"


def task(page: Page, task_id: str) -> Any:
    """The block of one task on a run page."""
    return page.locator(f'section.task[data-task-id="{task_id}"]')


def expect_badge(page: Page, task_id: str, status: str, text: str) -> None:
    """The task's block and badge carry ``status``, and the badge reads ``text`` (symbol and label)."""
    block = task(page, task_id)
    expect(block).to_have_attribute("data-status", status, timeout=WAIT_MS)
    badge = block.locator(".task-head .badge")
    expect(badge).to_have_attribute("data-status", status)
    expect(badge).to_have_text(text)
    expect(badge).to_be_visible()


def follow(tab: Tab) -> str:
    """Press "Follow this next action" and land on the new run's page; returns its run id."""
    page = tab.page
    before = run_id_of(page)
    button = page.locator("section#next-action form#follow-form button")
    expect(button).to_have_text("Follow this next action")
    button.click()
    page.wait_for_url(lambda url: RUN_URL.search(url) is not None and f"/runs/{before}" not in url)
    return run_id_of(page)


def assert_fits_the_width(page: Page, width: int, what: str) -> None:
    """The page is not wider than the window, and the window is ``width`` wide (not zoomed out to fit the page).

    On a phone (``is_mobile``) Chromium widens the layout viewport to fit wide content, which would make
    ``scrollWidth <= innerWidth`` hold trivially: hence the check on ``innerWidth`` as well. On failure the
    message names the elements whose content is wider than their box.
    """
    measured = page.evaluate(
        """() => ({
            scrollWidth: document.scrollingElement.scrollWidth,
            innerWidth: window.innerWidth,
            wide: [...document.querySelectorAll("body *")]
                .filter((e) => e.clientWidth > 0 && e.scrollWidth > e.clientWidth)
                .map((e) => [e.tagName.toLowerCase(), ...e.classList].join(".")
                    + ` ${e.scrollWidth}/${e.clientWidth}px`),
        })"""
    )
    scroll_width, inner_width = int(measured["scrollWidth"]), int(measured["innerWidth"])
    detail = (
        f"{what} is {scroll_width}px wide on a {width}px screen (window.innerWidth {inner_width}px); "
        f"content wider than its box: {measured['wide']}"
    )
    assert inner_width == width, detail
    assert scroll_width <= inner_width, detail


# -- tests ------------------------------------------------------------------------------------------------------


def test_asking_a_goal_shows_each_task_with_five_cards_in_order_a_badge_and_the_next_action(
    ui: Callable[..., Tab],
) -> None:
    """A goal asked on /ask runs support_answer: three valid tasks, five cards each, and the next action."""
    tab = ui([VALID, VALID, VALID])
    page = tab.page
    tab.open("/ask")
    tab.shot("ask")
    ask(tab, GOAL)
    wait_completed(page)
    tab.shot("run")

    expect(page.locator("h1.goal")).to_have_text(GOAL)
    expect(page.locator("section.task")).to_have_count(len(TASKS))
    assert [block.get_attribute("data-task-id") for block in page.locator("section.task").all()] == TASKS
    for task_id in TASKS:
        expect_badge(page, task_id, "valid", "✓ Valid")
        cards = task(page, task_id).locator("article.section-card")
        expect(cards.locator("h3")).to_have_text(TITLES)
        assert [card.get_attribute("data-field") for card in cards.all()] == FIELDS
        for card in cards.all():
            expect(card).to_be_visible()
        expect(task(page, task_id).locator(".fallback")).to_have_count(0)
    expect(task(page, "diagnose").locator("article.section-card .card-text")).to_have_text(list(CONTENT.values()))
    # Chaining: each later task's hook is the loop of the task before it.
    expect(task(page, "recommend").locator('article.section-card[data-field="hook"] .card-text')).to_have_text(
        CONTENT["loop"]
    )

    next_action = page.locator("section#next-action")
    expect(next_action.locator("h2")).to_have_text(NEXT_HEADING)
    expect(next_action.locator(".next-action-text")).to_have_text(CONTENT["loop"])
    expect(next_action.locator("form#follow-form button")).to_have_text("Follow this next action")
    assert tab.replay_left() == 0


def test_following_the_next_action_starts_and_shows_the_next_run(ui: Callable[..., Tab]) -> None:
    """ "Follow this next action" starts a run whose goal is the next action, in the same session."""
    tab = ui([VALID] * 6)
    page = tab.page
    first = ask(tab, GOAL)
    wait_completed(page)
    session_link = page.locator("header.run-head .crumbs a").get_attribute("href")
    tab.shot("first-run")

    second = follow(tab)
    assert second != first
    wait_completed(page)
    tab.shot("followed-run")

    expect(page.locator("h1.goal")).to_have_text(CONTENT["loop"])
    expect(page.locator("header.run-head .crumbs")).to_contain_text(WORKFLOW)
    assert page.locator("header.run-head .crumbs a").get_attribute("href") == session_link
    for task_id in TASKS:
        expect_badge(page, task_id, "valid", "✓ Valid")
        expect(task(page, task_id).locator("article.section-card h3")).to_have_text(TITLES)
    # The replayed answer offers the followed action again: the page offers a question not yet asked instead.
    expect(page.locator("section#next-action .next-action-text")).to_have_text(FALLBACK_HOOK)
    expect(page.locator("section#next-action")).to_contain_text("already asked in this session")
    assert tab.replay_left() == 0


def test_running_a_repair_on_a_failed_task_turns_its_badge_valid(ui: Callable[..., Tab]) -> None:
    """A failed task shows a fallback message and "Run repair task"; a repaired answer makes it valid."""
    # diagnose: answer + in-run repair both fail; recommend and plan pass; then the operator's repair passes.
    tab = ui([NO_IDEA, NO_IDEA, VALID, VALID, answer(loop=FIXED_LOOP)])
    page = tab.page
    run_id = ask(tab, GOAL)
    wait_completed(page)

    expect_badge(page, "diagnose", "failed", "✗ Failed")
    expect_badge(page, "recommend", "valid", "✓ Valid")
    expect_badge(page, "plan", "valid", "✓ Valid")
    diagnose = task(page, "diagnose")
    expect(diagnose.locator("article.section-card h3")).to_have_text(TITLES)
    expect(diagnose.locator(".fallback .fallback-message")).to_contain_text("failed the contract")
    expect(diagnose.locator("form.action-regenerate")).to_have_count(0)
    repair = diagnose.locator("form.action-repair button")
    expect(repair).to_have_text("Run repair task")
    expect(task(page, "recommend").locator(".transition-mode")).to_have_attribute("data-mode", "fallback")
    tab.shot("failed")

    repair.click()
    expect_badge(page, "diagnose", "valid", "✓ Valid")
    tab.shot("repaired")

    assert page.url.endswith(f"/runs/{run_id}#task-diagnose")
    expect(diagnose.locator(".fallback")).to_have_count(0)
    expect(diagnose.locator("article.section-card.card-problem")).to_have_count(0)
    expect(diagnose.locator("article.section-card .card-text")).to_have_text(
        [CONTENT["hook"], CONTENT["grip"], CONTENT["payoff"], CONTENT["reinforce"], FIXED_LOOP]
    )
    attempts = diagnose.locator("li.attempt")
    expect(attempts).to_have_count(3)
    expect(attempts.last).to_have_attribute("data-kind", "operator repair")
    expect(attempts.last).to_have_attribute("data-status", "valid")
    # The repaired loop now feeds the next task: the handoff is re-planned from the fallback to the repair.
    expect(task(page, "recommend").locator(".transition-mode")).to_have_attribute("data-mode", "repair")
    assert tab.replay_left() == 0


def test_regenerating_the_failing_sections_of_a_partial_task_turns_its_badge_valid(ui: Callable[..., Tab]) -> None:
    """A partial task offers "Regenerate section"; the regenerated sections are merged and the badge turns valid."""
    grip = "Cold caches after restarts are the common cause."
    payoff = "Pre-warm every node before it rejoins."
    # diagnose: answer + in-run repair both partial; recommend and plan pass; then the regenerated sections.
    tab = ui([PARTIAL, PARTIAL, VALID, VALID, f"GRIP: {grip}\nPAYOFF: {payoff}"])
    page = tab.page
    ask(tab, GOAL)
    wait_completed(page)

    expect_badge(page, "diagnose", "partial", "◐ Partial")
    diagnose = task(page, "diagnose")
    problems = diagnose.locator("article.section-card.card-problem")
    assert [card.get_attribute("data-field") for card in problems.all()] == ["grip", "payoff"]
    expect(diagnose.locator(".fallback .fallback-message")).to_contain_text("grip, payoff")
    expect(diagnose.locator("form.action-repair")).to_have_count(0)
    regenerate = diagnose.locator("form.action-regenerate button")
    expect(regenerate).to_have_text("Regenerate section")
    tab.shot("partial")

    regenerate.click()
    expect_badge(page, "diagnose", "valid", "✓ Valid")
    tab.shot("regenerated")

    expect(diagnose.locator(".fallback")).to_have_count(0)
    expect(diagnose.locator("article.section-card.card-problem")).to_have_count(0)
    expect(diagnose.locator("article.section-card .card-text")).to_have_text(
        [CONTENT["hook"], grip, payoff, CONTENT["reinforce"], CONTENT["loop"]]
    )
    expect(diagnose.locator("li.attempt").last).to_have_attribute("data-kind", "regenerated sections")
    assert tab.replay_left() == 0


def test_a_goal_with_a_script_tag_renders_as_text_and_never_opens_a_dialog(ui: Callable[..., Tab]) -> None:
    """Markup in the goal and in model text is shown as text on every page; no script runs, no dialog fires."""
    goal = "<script>alert(1)</script> Why did three API regions breach their latency SLO?"
    grip = "The status page quoted <img src=x onerror=alert(2)> in every breach report."
    tab = ui([answer(grip=grip), VALID, VALID])
    page = tab.page
    ask(tab, goal)
    wait_completed(page)
    tab.shot("run")

    expect(page.locator("h1.goal")).to_have_text(goal)
    expect(task(page, "diagnose").locator('article.section-card[data-field="grip"] .card-text')).to_have_text(grip)
    expect(page.locator("script")).to_have_count(0)
    expect(page.locator("main img")).to_have_count(0)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.content()

    tab.open("/")
    expect(page.locator("tr.run-row a.run-link")).to_have_text([goal])
    expect(page.locator("script")).to_have_count(0)
    tab.shot("runs")

    page.locator("tr.run-row a.run-link").click()
    page.wait_for_url(RUN_URL)
    page.locator("header.run-head .crumbs a").click()
    page.wait_for_url(re.compile(r"/sessions/"))
    expect(page.locator("ol.session-chain li.chain-run a.run-link")).to_have_text([goal])
    expect(page.locator("script")).to_have_count(0)
    tab.shot("session")

    assert tab.dialogs == []
    assert tab.replay_left() == 0


def test_at_phone_width_the_run_page_does_not_overflow_and_shows_the_badges(ui: Callable[..., Tab]) -> None:
    """At 390x844 the ask and run pages fit the width (long links included), and every badge's text is visible."""
    width = 390
    goal = (
        "Our status page https://status.example.com/incidents/2024-05-14-api-latency-slo-breach-eu-west-1 "
        "shows three regions over their latency SLO: what is going on?"
    )
    runbook = "https://runbooks.example.com/reliability/caches/pre-warming-from-snapshots-before-rejoining-the-pool"
    loop = f"Should we follow the runbook at {runbook} for the first region?"
    # diagnose fails (fallback block and repair button); plan's loop, with a long link, is the next action.
    tab = ui(
        [NO_IDEA, NO_IDEA, VALID, answer(loop=loop)],
        viewport={"width": width, "height": 844},
        device_scale_factor=2,
        is_mobile=True,
        has_touch=True,
    )
    page = tab.page
    tab.open("/ask")
    tab.shot("ask")
    assert_fits_the_width(page, width, "the ask page")

    ask(tab, goal)
    wait_completed(page)
    tab.shot("run")
    expect(page.locator("section#next-action .next-action-text")).to_have_text(loop)
    assert_fits_the_width(page, width, "the run page")

    expect_badge(page, "diagnose", "failed", "✗ Failed")
    expect_badge(page, "recommend", "valid", "✓ Valid")
    expect_badge(page, "plan", "valid", "✓ Valid")
    for badge in page.locator("section.task .task-head .badge").all():
        badge.scroll_into_view_if_needed()
        box = badge.bounding_box()
        assert box is not None and box["width"] > 0 and box["height"] > 0
        assert 0 <= box["x"] and box["x"] + box["width"] <= width, f"a badge is outside the window: {box}"
    repair = task(page, "diagnose").locator("form.action-repair button")
    expect(repair).to_be_visible()
    box = repair.bounding_box()
    assert box is not None and box["x"] + box["width"] <= width, f"the repair button is outside the window: {box}"
    assert tab.replay_left() == 0


def test_the_session_page_lists_both_runs_oldest_first_after_a_follow(ui: Callable[..., Tab]) -> None:
    """/sessions/{session_id} shows the asked run, then the followed one, each linking to its page."""
    session_id = "browser-session-1"
    tab = ui([VALID] * 6)
    page = tab.page
    first = ask(tab, GOAL, session_id=session_id)
    wait_completed(page)
    second = follow(tab)
    wait_completed(page)

    page.locator("header.run-head .crumbs a").click()
    page.wait_for_url(re.compile(rf"/sessions/{re.escape(session_id)}$"))
    tab.shot("session")

    runs = page.locator("ol.session-chain li.chain-run")
    expect(runs).to_have_count(2)
    assert [run.get_attribute("data-run-id") for run in runs.all()] == [first, second]
    expect(runs.locator("a.run-link")).to_have_text([GOAL, CONTENT["loop"]])
    expect(runs.first.locator(".chain-next")).to_contain_text(CONTENT["loop"])

    runs.first.locator("a.run-link").click()
    page.wait_for_url(re.compile(rf"/runs/{re.escape(first)}$"))
    expect(page.locator("h1.goal")).to_have_text(GOAL)
    assert tab.replay_left() == 0
