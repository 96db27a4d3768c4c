"""Projects side by side: each `marsrag` command in a project sees only that project's documents and runs.

Real processes on real SQLite files and real CrewAI crews (the offline composer): two projects made by
``marsrag init`` and the default store outside any project.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
PAYROLL = """# Weekend on-call pay

On-call engineers are paid a flat stipend per weekend shift, plus time off in lieu for every page answered
after midnight. The stipend is reviewed each January by the people team.
"""


def marsrag(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``marsrag ARGS`` as a real process in ``cwd``, with a data directory and home of the test's own."""
    env = {
        **os.environ,
        "HOME": str(_base(cwd) / "home"),
        "MARSRAG_HOME": str(_base(cwd) / "data"),
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]),
        "COLUMNS": "200",
    }
    for name in ("MARSRAG_LLM", "MARSRAG_DB", "MARSRAG_CONFIG"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "marsrag", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def _base(cwd: Path) -> Path:
    """The test's own folder (the one holding ``home``), whatever folder below it a command runs in."""
    for folder in (cwd, *cwd.parents):
        if (folder / "home").is_dir():
            return folder
    raise AssertionError(f"no test folder above {cwd}")


def ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def sources(document: dict[str, Any]) -> set[str]:
    """The documents a run retrieved (and so may cite), as paths."""
    return {result["source"].split("#")[0] for task in document["tasks"] for result in task["retrieval"]["results"]}


@pytest.fixture
def place(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    for name in ("cache-bot", "pay-bot"):
        ok(marsrag(tmp_path, "init", name))
    pay_knowledge = tmp_path / "pay-bot" / "knowledge"
    for document in pay_knowledge.iterdir():
        document.unlink()
    (pay_knowledge / "payroll.md").write_text(PAYROLL, encoding="utf-8")
    return tmp_path


def test_two_projects_and_the_default_store_each_see_only_their_own(place: Path) -> None:
    """Before ingest a project's run finds nothing (it says so); after, each project's runs retrieve only its own
    documents, and runs, metrics and the help line see only its own store."""
    cache, pay = place / "cache-bot", place / "pay-bot"
    goal = "Checkout latency doubled after the cache restart"

    empty = marsrag(cache, "run", goal, "--format", "json")
    assert empty.returncode == 0, empty.stderr
    assert "marsrag: warning: the knowledge base is empty (project cache-bot, store sqlite:///" in empty.stderr
    document = json.loads(empty.stdout)
    assert sources(document) == set()
    assert {task["retrieval"]["support"]["level"] for task in document["tasks"]} == {"none"}

    assert "2 added" in ok(marsrag(cache / "config", "ingest"))  # from a folder below the root too
    assert "1 added" in ok(marsrag(pay, "ingest"))
    assert "added" in ok(marsrag(place, "ingest", str(REPO / "examples" / "knowledge_base")))

    cached = json.loads(ok(marsrag(cache, "run", goal, "--format", "json")))
    assert sources(cached) and sources(cached) <= {"knowledge/cache-restarts.md", "knowledge/latency-slo.md"}
    paid = json.loads(
        ok(marsrag(pay, "run", "How much are on-call engineers paid per weekend shift?", "--format", "json"))
    )
    assert sources(paid) == {"knowledge/payroll.md"}
    default = json.loads(ok(marsrag(place, "run", goal, "--format", "json")))
    assert sources(default) and all(path.startswith("knowledge_base/") for path in sources(default))

    listed = {
        folder.name: [row["run_id"] for row in json.loads(ok(marsrag(folder, "runs", "list", "--format", "json")))]
        for folder in (cache, pay, place)
    }
    assert sorted(listed[cache.name]) == sorted([document["run_id"], cached["run_id"]])
    assert listed[pay.name] == [paid["run_id"]]
    assert listed[place.name] == [default["run_id"]]
    # Each run began its own session; each of the projects' runs has two tasks.
    counted = {folder.name: json.loads(ok(marsrag(folder, "metrics", "--format", "json"))) for folder in (cache, pay)}
    assert [counted[name]["session_depth"]["sessions"] for name in (cache.name, pay.name)] == [2, 1]
    assert [counted[name]["loop_schema_pass_rate"]["denominator"] for name in (cache.name, pay.name)] == [4, 2]

    store = f"sqlite:///{cache.resolve()}/.marsrag/marsrag.db"
    helped = ok(marsrag(cache / "knowledge", "--help"))
    assert helped.splitlines()[-1] == f"Here: project cache-bot ({cache.resolve()}), store {store}."
    missing = marsrag(cache, "runs", "show", paid["run_id"])
    assert (missing.returncode, missing.stdout) == (2, "")
    assert missing.stderr == f"marsrag: error: no run {paid['run_id']!r} (project cache-bot, store {store})\n"
    assert (cache / ".gitignore").read_text(encoding="utf-8").count(".marsrag/") == 1
