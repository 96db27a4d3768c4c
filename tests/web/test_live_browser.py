"""The run page while its run executes, in headless Chromium: sections appear as they are written (issue 41)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.web._browser import WAIT_MS, Tab
from tests.web.conftest import answer
from tests.web.test_browser import wait_completed

pytestmark = [pytest.mark.browser, pytest.mark.crewai]

#: Chunks a second of the streaming replay LLM: about 4 s a task, time for the page to show a section.
RATE = 18
GOAL = "Checkout latency breached its SLO after the cache restart"


def streamed(count: int) -> list[dict[str, Any]]:
    return [
        {"output": answer(loop=f"Which cache tier comes next, {n}?"), "tokens_per_second": RATE} for n in range(count)
    ]


def start_run(tab: Tab) -> str:
    response = tab.page.request.post(f"{tab.base_url}/api/runs", data={"goal": GOAL})
    assert response.status == 202, response.text()
    run_id: str = response.json()["run_id"]
    return run_id


def test_the_first_section_is_visible_before_its_task_completes_and_the_final_cards_are_the_stored_state(
    ui: Callable[..., Tab],
) -> None:
    tab = ui(streamed(3))
    page = tab.page
    run_id = start_run(tab)
    tab.open(f"/runs/{run_id}")
    # One reading of the page: the first task's hook on screen, and how many stored tasks the page shows then. The
    # page reloads when a task is stored, so none shown means the hook was visible while its task was being written.
    shown = page.wait_for_function(
        """() => {
            const hook = document.querySelector('#live article.card-live[data-field="hook"] .card-text');
            if (!hook || !hook.textContent.trim()) return 0;
            const live = document.getElementById("live").getAttribute("data-live-task");
            return {live: live, stored: document.querySelectorAll("section.task:not(.task-live)").length};
        }""",
        timeout=WAIT_MS,
    ).json_value()
    assert shown == {"live": "diagnose", "stored": 0}
    tab.shot("writing")
    wait_completed(page)
    tab.shot("done")
    expect(page.locator("#live")).to_have_count(0)
    document = page.request.get(f"{tab.base_url}/api/runs/{run_id}").json()
    for stored in document["tasks"]:
        cards = page.locator(f'section.task[data-task-id="{stored["task_id"]}"] article.section-card .card-text')
        expect(cards).to_have_text(
            [stored["loop_output"][name] for name in ("hook", "grip", "payoff", "reinforce", "loop")]
        )
    assert tab.replay_left() == 0


def test_with_scripts_off_the_page_still_completes_by_refreshing(ui: Callable[..., Tab]) -> None:
    tab = ui(streamed(3), java_script_enabled=False)
    run_id = start_run(tab)
    tab.open(f"/runs/{run_id}")
    expect(tab.page.locator("#live")).to_be_hidden()
    wait_completed(tab.page)
    expect(tab.page.locator("section.task")).to_have_count(3)
