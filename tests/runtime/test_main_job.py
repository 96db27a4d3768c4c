"""The `make run` path end to end: ingest the sample knowledge base, run the sample goal with the composer.

Real CrewAI, real SQLite, the offline composer: every task valid, every transition direct, and every
citation names a chunk that was actually retrieved for that task.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.crewai

GOAL = "Checkout latency breached its SLO in three regions right after cache nodes restarted. What should we do?"


def marsrag(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MARSRAG_LLM", "MARSRAG_DB", "OTEL_EXPORTER"))}
    env.update(MARSRAG_HOME=str(home), NO_COLOR="1")
    proc = subprocess.run(
        [sys.executable, "-m", "marsrag", *args], capture_output=True, env=env, cwd=REPO, check=False, timeout=600
    )
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def test_make_run_path(tmp_path: Path) -> None:
    """ingest (idempotent) then run on the default store: valid, direct, grounded, listed by runs list."""
    first = marsrag("ingest", "examples/knowledge_base", home=tmp_path)
    assert first.returncode == 0, first.stderr
    assert re.search(r"\d+ added, 0 updated, 0 unchanged, 0 skipped; \d+ chunks written", first.stdout)
    again = marsrag("ingest", "examples/knowledge_base", home=tmp_path)
    assert "0 added, 0 updated" in again.stdout and " 0 chunks written" in again.stdout
    proc = marsrag("run", GOAL, "--format", "json", home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    tasks = document["tasks"]
    assert [t["task_id"] for t in tasks] == ["diagnose", "recommend", "plan"]
    assert [t["validation"]["status"] for t in tasks] == ["valid"] * 3
    assert [t["transition_mode"] for t in document["transitions"]] == ["direct", "direct"]
    assert len({t["loop_output"]["loop"] for t in tasks}) == 3  # the chain moves
    for task in tasks:
        results = task["retrieval"]["results"]
        # Every marker in the evidence resolves to a stored citation of a passage retrieved for this task.
        markers = set(re.findall(r"\[(\d+)\]", task["loop_output"]["reinforce"]))
        citations = {citation["ref"]: citation for citation in task["citations"]}
        assert results and markers and markers <= set(citations)
        by_ref = {str(result["ref"]): result for result in results}  # the run's number of each source
        for ref in markers:
            hit = by_ref[ref]
            assert (citations[ref]["source"], citations[ref]["chunk_id"]) == (hit["source"], hit["chunk_id"])
        assert task["citation_warnings"] == []
    listed = json.loads(marsrag("runs", "list", "--format", "json", home=tmp_path).stdout)
    assert [row["run_id"] for row in listed] == [document["run_id"]]


def test_text_output_shows_sections_badges_next_action_and_store(tmp_path: Path) -> None:
    """The person-facing output: five sections per task, badges, the next action, where the state is."""
    marsrag("ingest", "examples/knowledge_base", home=tmp_path)
    proc = marsrag("run", GOAL, home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("[VALID]") == 3
    for label in ("HOOK", "GRIP", "PAYOFF", "REINFORCE", "LOOP"):
        assert proc.stdout.count(label) >= 3
    assert "Next recommended question/action:" in proc.stdout
    # A short sources list under each task and under the summary (the run's): the cited passages by number,
    # document and own heading.
    assert proc.stdout.count(" SOURCES ") == 4
    assert re.search(r"\[\d+\]\s+knowledge_base/\S+\.md · ", proc.stdout)
    assert f"State stored in sqlite:///{tmp_path}/marsrag.db" in proc.stdout
    assert "diagnose: valid" in proc.stderr  # progress while the tasks ran
