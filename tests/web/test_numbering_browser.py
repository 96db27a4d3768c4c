"""One number per source on the run page in a real headless Chromium (issue 38).

A real three-task run of the offline composer over the sample knowledge base, saved in the server's store:
every marker of a source reads the same number in every task and in the summary, the summary's source list
links each number to the first task citing it, and the page fits a phone's width.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest
from playwright.sync_api import expect

from tests.web._browser import Tab
from tests.web.test_answer_first_browser import PHONE
from tests.web.test_browser import assert_fits_the_width

pytestmark = [pytest.mark.browser, pytest.mark.crewai]


def test_the_summarys_sources_link_to_the_tasks_and_every_marker_keeps_its_number(ui: Callable[..., Tab]) -> None:
    """Each [n] link on the page points at a source whose data-ref is n; a summary source lands on its task."""
    from marsrag.llm.composer import OfflineComposer
    from marsrag.rag import KnowledgeBase
    from marsrag.runtime.runner import WorkflowRunner
    from marsrag.tasks import load_config
    from tests.conftest import REPO
    from tests.web.test_numbering import GOAL

    tab = ui([], **PHONE)
    page = tab.page
    store = tab.app.state.backend.store
    kb = KnowledgeBase(store)
    kb.ingest([REPO / "examples" / "knowledge_base"])
    runner = WorkflowRunner(store, load_config(None), OfflineComposer(model="offline-composer"), retriever=kb)
    # Playwright's sync API runs an event loop in this thread, where CrewAI refuses a synchronous kickoff.
    with ThreadPoolExecutor(1) as pool:
        run = pool.submit(runner.run, GOAL).result()
    assert run.status == "completed", run.status_reason
    tab.open(f"/runs/{run.run_id}")

    titles: dict[str, str] = {}
    for link in page.locator("a.cite").all():
        ref = link.get_attribute("data-ref") or ""
        target = page.locator(f'[id="{(link.get_attribute("href") or "").removeprefix("#")}"]')
        expect(target).to_have_count(1)
        assert link.inner_text() == f"[{ref}]" and target.get_attribute("data-ref") == ref
        title = target.locator("cite.source-title").inner_text()
        assert titles.setdefault(ref, title) == title, f"[{ref}] names two documents on the page"

    listed = page.locator("ul.summary-sources li.summary-source")
    expect(listed.first).to_be_visible()
    assert listed.count() == len(titles)
    first = listed.first
    ref = first.get_attribute("data-ref") or ""
    first.locator("a.cite").click()
    page.wait_for_url(re.compile(rf"#src-[\w-]+-{ref}$"))
    assert page.evaluate("() => document.querySelector(':target')?.dataset.ref") == ref
    expect(page.locator(":target")).to_be_in_viewport()
    tab.shot("summary-sources")
    assert_fits_the_width(page, 390, "the run page with the run's sources")
