"""Feedback and edited follows on the run page, in a real headless Chromium: the click reaches the store.

The pages have no script: each thumb is a form post (with the page's CSRF token) that comes back to the run
page, which says the rating it now holds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.contract.samples import CONTENT
from tests.web._browser import Tab
from tests.web.test_browser import GOAL, RUN_URL, VALID, ask, run_id_of, wait_completed

pytestmark = [pytest.mark.browser, pytest.mark.crewai]


def stored(tab: Tab, run_id: str, name: str) -> list[dict[str, Any] | None]:
    """The details of the run's stored events named ``name``, in order."""
    return [event.detail for event in tab.app.state.backend.store.get_events(run_id) if event.name == name]


def metrics(tab: Tab) -> dict[str, Any]:
    """The loop metrics of everything stored, as ``marsrag metrics --format json`` reports them (from the rollups),
    after checking they equal the raw rows' reference."""
    from marsrag.metrics.compute import compute_metrics
    from marsrag.metrics.verify import verify

    store = tab.app.state.backend.store
    verdict = verify(store)
    assert verdict.ok, verdict.differences
    return compute_metrics(store).to_dict()


def test_a_thumbs_up_on_the_answer_reaches_the_store_and_the_page_shows_it(ui: Callable[..., Tab]) -> None:
    """Click "Helpful" under the summary: the event is stored, the page says so and marks the button pressed."""
    tab = ui([VALID] * 3)
    page = tab.page
    run_id = ask(tab, GOAL)
    wait_completed(page)
    answer = page.locator("section#summary form.feedback")
    expect(answer.locator("legend")).to_have_text("Was this answer helpful?")
    helpful = answer.get_by_role("button", name="Helpful", exact=True)
    expect(helpful).to_have_attribute("aria-pressed", "false")
    tab.shot("before")

    helpful.click()
    page.wait_for_url(f"**/runs/{run_id}#summary")
    answer = page.locator("section#summary form.feedback")
    expect(answer.locator(".feedback-said")).to_have_text("You rated this helpful.")
    expect(answer.get_by_role("button", name="Helpful", exact=True)).to_have_attribute("aria-pressed", "true")
    expect(page.locator("section#next-action form.feedback .feedback-said")).to_have_count(0)
    tab.shot("rated")
    assert stored(tab, run_id, "loop.feedback.recorded") == [{"on": "answer", "rating": "up", "comment": None}]
    helpful = metrics(tab)["helpful_rate"]
    assert (helpful["value"], helpful["numerator"], helpful["denominator"]) == (1.0, 1, 1)
    assert helpful["by_target"]["answer"]["denominator"] == 1
    assert tab.replay_left() == 0


def test_a_thumbs_down_with_a_comment_on_the_next_action_is_stored(ui: Callable[..., Tab]) -> None:
    """Open the comment box on the next-action card, write why, click "Not helpful": stored with the comment."""
    tab = ui([VALID] * 3)
    page = tab.page
    run_id = ask(tab, GOAL)
    wait_completed(page)
    card = page.locator("section#next-action form.feedback")
    card.locator("details.feedback-comment summary").click()
    card.get_by_label("Comment on this next action").fill("We did that last week.")
    card.get_by_role("button", name="Not helpful").click()
    page.wait_for_url(f"**/runs/{run_id}#next-action")
    card = page.locator("section#next-action form.feedback")
    expect(card.locator(".feedback-said")).to_have_text("You rated this not helpful.")
    expect(card.get_by_role("button", name="Not helpful")).to_have_attribute("aria-pressed", "true")
    assert stored(tab, run_id, "loop.feedback.recorded") == [
        {"on": "next_action", "rating": "down", "comment": "We did that last week."}
    ]
    helpful = metrics(tab)["helpful_rate"]
    assert (helpful["value"], helpful["numerator"], helpful["denominator"]) == (0.0, 0, 1)
    assert helpful["by_target"]["next_action"]["denominator"] == 1


def test_editing_the_next_action_before_following_asks_the_edit(ui: Callable[..., Tab]) -> None:
    """The edit box holds the next action; changed and followed, the new run asks it and the follow is edited."""
    tab = ui([VALID] * 6)
    page = tab.page
    first = ask(tab, GOAL)
    wait_completed(page)
    form = page.locator("section#next-action form#follow-form")
    form.locator("details.follow-edit summary").click()
    box = form.get_by_label("The question the next run asks")
    expect(box).to_have_value(CONTENT["loop"])
    mine = "Which caches should be pre-warmed first, and from which snapshot?"
    box.fill(mine)
    form.get_by_role("button", name="Follow this next action").click()
    page.wait_for_url(lambda url: RUN_URL.search(url) is not None and f"/runs/{first}" not in url)
    assert run_id_of(page) != first
    wait_completed(page)
    expect(page.locator("h1.goal")).to_have_text(mine)
    assert stored(tab, first, "loop.action.followed") == [{"follow_kind": "edited"}]
    follow = metrics(tab)["loop_follow_rate"]
    assert (follow["numerator"], follow["by_kind"]["edited"]["numerator"]) == (1, 1)
    assert follow["by_kind"]["suggested"]["numerator"] == 0
    assert tab.replay_left() == 0
