"""The support badge and the support in the JSON, for a real run the knowledge base cannot answer.

The knowledge base is the tests' bike workshop manuals (tests/rag/support_kb), ingested by ``marsrag ingest``; the
goal is about cars, and the offline composer (the default LLM) answers it. Its first task's retrieval supports
nothing (``none``): the terminal, the run page (through the app and in Chromium) and every JSON form say so.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from marsrag.state import SUPPORT_LEVELS
from marsrag.views.viewmodel import support_badge

pytestmark = pytest.mark.crewai

KNOWLEDGE = Path(__file__).parents[1] / "rag" / "support_kb"
OFF_TOPIC = "How do I change the oil in my car?"
LABEL = "not in the knowledge base"


def marsrag(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MARSRAG_LLM", "MARSRAG_DB", "OTEL_EXPORTER"))}
    env.update(MARSRAG_HOME=str(home), NO_COLOR="1", COLUMNS="200")
    proc = subprocess.run(
        [sys.executable, "-m", "marsrag", *args], capture_output=True, env=env, cwd=home, check=False, timeout=600
    )
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())


@pytest.fixture(scope="module")
def unsupported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A home whose store holds the ingested workshop manuals and one run of an off-topic goal (its JSON)."""
    home = tmp_path_factory.mktemp("support")
    ingested = marsrag("ingest", str(KNOWLEDGE), home=home)
    assert ingested.returncode == 0, ingested.stderr
    proc = marsrag("run", OFF_TOPIC, "--format", "json", home=home)
    assert proc.returncode == 0, proc.stderr
    return home, json.loads(proc.stdout)


def _levels(document: dict[str, Any]) -> list[str]:
    levels = []
    for task in document["tasks"]:
        support = task["retrieval"]["support"]
        assert set(support) >= {"level", "score", "coverage", "proximity", "best", "chunks", "terms", "method"}
        levels.append(support["level"])
    return levels


def test_every_json_form_has_each_tasks_support(unsupported: tuple[Path, dict[str, Any]]) -> None:
    """run, runs show and the API's run document carry each task's retrieval.support (the first one: none)."""
    home, document = unsupported
    levels = _levels(document)
    assert len(levels) == len(document["tasks"]) >= 1 and set(levels) <= set(SUPPORT_LEVELS)
    assert levels[0] == "none"
    shown = marsrag("runs", "show", document["run_id"], "--format", "json", home=home)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout) == document
    with _client(home) as client:
        api = client.get(f"/api/runs/{document['run_id']}")
        assert api.status_code == 200 and _levels(api.json()) == levels


def test_the_terminal_and_the_page_show_the_badge_beside_the_verdict(unsupported: tuple[Path, dict[str, Any]]) -> None:
    """``runs show`` prints ``[not in the knowledge base]`` after the first task's badge; the run page shows it."""
    home, document = unsupported
    first = document["tasks"][0]
    text = marsrag("runs", "show", document["run_id"], home=home)
    assert text.returncode == 0, text.stderr
    line = next(line for line in text.stdout.splitlines() if line.startswith(first["task_id"] + "  ["))
    assert re.search(rf"\[[A-Z ]+\] \[{LABEL}\]", line), line
    with _client(home) as client:
        page = client.get(f"/runs/{document['run_id']}").text
    block = page.split(f'id="task-{first["task_id"]}"', 1)[1].split("</header>", 1)[0]
    assert 'class="support-badge support-none" data-support="none"' in block and f">{LABEL}</span>" in block


def test_the_badges_words_are_one_mapping() -> None:
    """none and weak have a badge, strong and an unassessed task none; the missing words go in its sentence."""
    from marsrag.state import Support, SupportTerm

    term = SupportTerm(term="oil", word="oil", asked_in="goal", chunks=0, weight=2.0)
    none = support_badge(Support(level="none", score=0.0, terms=[term]))
    assert none is not None and none.label == LABEL and "Not found: oil." in none.description
    weak = support_badge(Support(level="weak", score=0.45))
    assert weak is not None and weak.label == "weakly supported"
    assert support_badge(Support(level="strong", score=0.9)) is None and support_badge(None) is None


def _client(home: Path) -> TestClient:
    from marsrag.settings import resolve_settings
    from marsrag.web.app import create_app
    from marsrag.web.settings import WebSettings

    settings = WebSettings(resolve_settings(db=f"sqlite:///{home / 'marsrag.db'}"), run_threads=1)
    return TestClient(create_app(settings))


@pytest.fixture
def served(unsupported: tuple[Path, dict[str, Any]]) -> Iterator[str]:
    """The app over the run's store, served on loopback."""
    from marsrag.settings import resolve_settings
    from marsrag.web.app import create_app
    from marsrag.web.settings import WebSettings
    from tests.web._live_server import live_server

    home, _document = unsupported
    settings = WebSettings(resolve_settings(db=f"sqlite:///{home / 'marsrag.db'}"), run_threads=1)
    with live_server(create_app(settings)) as base_url:
        yield base_url


@pytest.mark.browser
def test_chromium_shows_the_badge_beside_the_verdict(
    browser: Any, served: str, unsupported: tuple[Path, dict[str, Any]]
) -> None:
    """In Chromium the first task's header holds its verdict badge and, beside it, "not in the knowledge base"."""
    from playwright.sync_api import expect

    from tests.web._browser import WAIT_MS

    _home, document = unsupported
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        page.goto(f"{served}/runs/{document['run_id']}")
        head = page.locator(f'section.task[data-task-id="{document["tasks"][0]["task_id"]}"] header.task-head')
        expect(head.locator(".badge")).to_be_visible()
        badge = head.locator(".support-badge")
        expect(badge).to_be_visible()
        expect(badge).to_have_text(LABEL)
        expect(badge).to_have_attribute("data-support", "none")
        assert (badge.get_attribute("title") or "").startswith("No retrieved passage supports")
    finally:
        context.close()
