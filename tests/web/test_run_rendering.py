"""One rendering of a run: the CLI prints what the web pages show (next action, header), from the same view model.

Each run is made by the real app (real crews, the replay LLM) over a real SQLite file; the CLI reads that
file as a real process.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from marsrag.state import FALLBACK_HOOK
from tests.web.conftest import Site, answer

pytestmark = pytest.mark.crewai

#: A loop of one sentence, 906 characters: over the contract's 800, so the task is partial (loop too_long).
LONG_LOOP = "Which of the " + "cache tiers and replica pools, " * 28 + "should we pre-warm first?"
RUN_STATUS = re.compile(r'<span class="run-status run-status-(\w+)" data-run-status="(\w+)"[^>]*>([^<]*)</span>')


def marsrag(*args: str) -> subprocess.CompletedProcess[str]:
    """The CLI as a real process (no colour, wide lines); text out."""
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    proc = subprocess.run([sys.executable, "-m", "marsrag", *args], capture_output=True, check=False, env=env)
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def next_action_line(stdout: str) -> str:
    """The text after the CLI's next-action heading."""
    lines = [line for line in stdout.splitlines() if line.startswith("Next recommended question/action: ")]
    assert len(lines) == 1, stdout
    return lines[0].removeprefix("Next recommended question/action: ")


def run_statuses(html: str) -> list[tuple[str, str, str]]:
    """Each run header of a page: (style level, stored status, text)."""
    return [(level, status, text.strip()) for level, status, text in RUN_STATUS.findall(html)]


def test_a_partial_last_task_with_a_too_long_loop_has_the_fallback_next_action_in_cli_web_and_follow(
    site_factory: Callable[..., Site], tmp_path: Path
) -> None:
    """The last task is partial (its 906-character loop failed): the CLI, the card and follow use the fallback."""
    last = answer(loop=LONG_LOOP)
    site = site_factory([answer(), answer(), last, last])  # the last task's repair fails the same way
    run_id = site.start()
    document = site.client.get(f"/api/runs/{run_id}").json()
    tasks = document["tasks"]
    assert [t["validation"]["status"] for t in tasks] == ["valid", "valid", "partial"]
    assert tasks[-1]["loop_output"]["loop"] == LONG_LOOP
    assert [e["code"] for e in tasks[-1]["validation"]["errors"]] == ["too_long"]

    view = site.backend.run_view(run_id)
    assert view.next_action is not None and (view.next_action.text, view.next_action.mode) == (
        FALLBACK_HOOK,
        "fallback",
    )
    page = site.client.get(f"/runs/{run_id}").text
    card = re.search(r'<p class="next-action-text">([^<]*)</p>', page)
    assert card is not None and card.group(1) == FALLBACK_HOOK

    shown = marsrag("runs", "show", run_id, "--db", site.db)
    assert shown.returncode == 0, shown.stderr
    assert next_action_line(shown.stdout) == FALLBACK_HOOK
    # Neither the next action nor the summary repeats the loop that failed the contract.
    assert LONG_LOOP[:60] not in shown.stdout.split("\nSummary", 1)[1]
    assert f"Next: {FALLBACK_HOOK}" in shown.stdout and f"Next: {FALLBACK_HOOK}" in document["summary"]

    followed = site.client.post(f"/api/runs/{run_id}/follow")
    assert followed.status_code == 202, followed.text
    site.wait()
    assert site.client.get(f"/api/runs/{followed.json()['run_id']}").json()["goal"] == FALLBACK_HOOK
    replay = tmp_path / "follow.jsonl"
    replay.write_text("".join(json.dumps({"output": answer()}) + "\n" for _ in range(3)), encoding="utf-8")
    # The run's next action is followed once: the CLI names the run that follows it (the web's, above).
    cli_followed = marsrag("follow", run_id, "--db", site.db, "--llm", f"replay:{replay}", "--format", "json")
    assert cli_followed.returncode == 2, cli_followed.stderr
    assert followed.json()["run_id"] in cli_followed.stderr and "followed already" in cli_followed.stderr


def test_a_run_with_a_failed_task_says_so_in_its_header_in_cli_runs_list_and_session_page(
    site_factory: Callable[..., Site],
) -> None:
    """completed, one of three tasks failed: every header names it, and none styles it as a success."""
    site = site_factory(["No idea.", "No idea.", answer(), answer(), answer(), answer(), answer()])
    run_id = site.start()
    clean_id = site.start(session_id="clean-session")
    header = "completed · 1 of 3 tasks failed"
    document = site.client.get(f"/api/runs/{run_id}").json()
    assert document["status"] == "completed"
    assert [t["validation"]["status"] for t in document["tasks"]] == ["failed", "valid", "valid"]

    shown = marsrag("runs", "show", run_id, "--db", site.db)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[0].startswith(f"run {run_id}  {header}  workflow ")
    assert f"State stored in {site.db};" in shown.stdout  # the store it read, not the default one
    listed = marsrag("runs", "list", "--db", site.db)
    assert listed.returncode == 0, listed.stderr
    lines = {line.split()[0]: line for line in listed.stdout.splitlines()[1:] if line.strip()}
    assert header in lines[run_id]
    assert "completed" in lines[clean_id] and "failed" not in lines[clean_id]

    runs_page = run_statuses(site.client.get("/").text)
    assert sorted(runs_page) == sorted([("failed", "completed", header), ("completed", "completed", "completed")])
    session = site.client.get(f"/sessions/{document['session_id']}").text
    assert run_statuses(session) == [("failed", "completed", header)]
    assert run_statuses(site.client.get(f"/runs/{run_id}").text) == [("failed", "completed", header)]
    # The dashboard's failures panel lists the task runs show reports as failed, and no other.
    panel = site.client.get("/dashboard").text.split('id="failures"', 1)[1]
    listed_failures = re.findall(r'data-run-id="(\w+)" data-task-id="(\w+)" data-status="(\w+)"', panel)
    assert listed_failures == [(run_id, "diagnose", "failed")]

    # The JSON keeps status completed and says how the tasks ended in outcome: document, API list, CLI list.
    assert document["outcome"] == {"valid": 2, "partial": 0, "failed": 1, "skipped": 0}
    rows = {row["run_id"]: row for row in site.client.get("/api/runs").json()}
    assert rows[run_id]["outcome"] == document["outcome"]
    assert rows[clean_id]["outcome"] == {"valid": 3, "partial": 0, "failed": 0, "skipped": 0}
    cli_rows = json.loads(marsrag("runs", "list", "--db", site.db, "--format", "json").stdout)
    assert {row["run_id"]: row["outcome"] for row in cli_rows} == {r: rows[r]["outcome"] for r in (run_id, clean_id)}


def test_an_attempts_llm_call_shows_on_the_run_page_and_in_runs_show_text_and_json(
    site_factory: Callable[..., Site],
) -> None:
    """A stored attempt's call: one line on the page and in the CLI text, every key in the JSON; none unknown."""
    from tests.store.records import CALL, attempt, run, task

    site = site_factory()
    # A model name is text like any other: the page escapes it.
    call = {**CALL, "model": "smollm2<b>", "structured_output_refused": ["json_schema"]}
    line = "smollm2<b> @ 127.0.0.1:8088 · json_object (json_schema refused) · 2,950 ms · 412+96 tokens · stop"
    stored = task(
        "called", attempts=[attempt(1, status="failed", **call), attempt(2, minutes=1)], validation=task().validation
    )
    site.backend.store.create_run(run("called", status="completed"))
    site.backend.store.save_task(stored)

    page = site.client.get("/runs/called").text
    calls = re.findall(r'<p class="hint attempt-call">([^<]*)</p>', page)
    assert calls == [line.replace("<", "&lt;").replace(">", "&gt;")]
    assert "smollm2<b>" not in page

    shown = marsrag("runs", "show", "called", "--db", site.db)
    assert shown.returncode == 0, shown.stderr
    attempt_lines = [text for text in shown.stdout.splitlines() if text.startswith("attempt ")]
    assert attempt_lines == [f"attempt 1 · answer · failed: {line}"]

    document = json.loads(marsrag("runs", "show", "called", "--db", site.db, "--format", "json").stdout)
    first, second = document["tasks"][0]["attempts"]
    assert {key: first[key] for key in CALL} == call
    unknown = {key: [] if key == "structured_output_refused" else None for key in CALL}
    assert {key: second[key] for key in CALL} == unknown
    assert site.client.get("/api/runs/called").json()["tasks"][0]["attempts"] == document["tasks"][0]["attempts"]
