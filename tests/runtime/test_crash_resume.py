"""Crash-resume: a real runner process is SIGKILLed at fixed points, then `marsrag resume` finishes the run.

The resumed run must equal an uninterrupted one: no duplicated or missing task states, attempts,
transitions or events. A task's state and the transition planned from it commit in one transaction, so no
crash separates them; the kill "between" them lands right after that commit, and a store holding a state
without its transition (written through the separate save_transition API) is resumed too.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.contract.samples import CONTENT

pytestmark = pytest.mark.crewai

A1 = json.dumps({**CONTENT, "loop": "Which cache tier should we pre-warm first?"})
B1 = json.dumps({k: v for k, v in CONTENT.items() if k != "grip"})  # partial: repaired
B2 = json.dumps({**CONTENT, "loop": "Who owns the rollout checkpoints?"})
C1 = json.dumps({**CONTENT, "loop": "Should we alert on cold caches?"})
FULL = [A1, B1, B2, C1]


def script(tmp_path: Path, name: str, outputs: list[str]) -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps({"output": output}) + "\n" for output in outputs))
    return path


def marsrag(*args: str, failpoints: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("MARSRAG_FAILPOINTS", None)
    if failpoints:
        env["MARSRAG_FAILPOINTS"] = failpoints
    proc = subprocess.run([sys.executable, "-m", "marsrag", *args], capture_output=True, env=env, check=False)
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def comparable(document: dict[str, Any]) -> dict[str, Any]:
    """The run without ids, timestamps and call latencies: what a resumed and an uninterrupted run share."""

    varying = {"run_id", "created_at", "timestamp", "latency_ms"}

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in varying}
        if isinstance(value, list):
            return [strip(item) for item in value]
        return value

    return {key: strip(document[key]) for key in ("status", "summary", "tasks", "transitions", "events")}


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("reference")
    proc = marsrag(
        "run",
        "latency",
        "--llm",
        f"replay:{script(tmp, 'full.jsonl', FULL)}",
        "--db",
        f"sqlite:///{tmp / 'ref.db'}",
        "--format",
        "json",
    )
    assert proc.returncode == 0, proc.stderr
    document: dict[str, Any] = json.loads(proc.stdout)
    assert [len(t["attempts"]) for t in document["tasks"]] == [1, 2, 1]
    return document


@pytest.mark.parametrize(
    ("failpoint", "resume_outputs", "committed"),
    [
        ("task.before_commit:recommend", [B1, B2, C1], ["diagnose"]),
        ("task.after_commit:recommend", [C1], ["diagnose", "recommend"]),
        ("guardrail.repair_requested", [B1, B2, C1], ["diagnose"]),
    ],
    ids=[
        "after the LLM answered, before the state commit",
        "between a task's state and its transition",
        "during a repair",
    ],
)
def test_killed_run_resumes_to_the_uninterrupted_result(
    tmp_path: Path, uninterrupted: dict[str, Any], failpoint: str, resume_outputs: list[str], committed: list[str]
) -> None:
    """SIGKILL at the failpoint, stale in runs list, resume: the final run equals the uninterrupted one."""
    db = f"sqlite:///{tmp_path / 'crash.db'}"
    crashed = marsrag(
        "run",
        "latency",
        "--llm",
        f"replay:{script(tmp_path, 'full.jsonl', FULL)}",
        "--db",
        db,
        "--format",
        "json",
        failpoints=failpoint,
    )
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    (row,) = json.loads(marsrag("runs", "list", "--db", db, "--format", "json").stdout)
    assert (row["status"], row["stale"]) == ("running", True)
    partial = json.loads(marsrag("runs", "show", row["run_id"], "--db", db, "--format", "json").stdout)
    assert [t["task_id"] for t in partial["tasks"]] == committed
    resumed = marsrag(
        "resume",
        row["run_id"],
        "--llm",
        f"replay:{script(tmp_path, 'rest.jsonl', resume_outputs)}",
        "--db",
        db,
        "--format",
        "json",
    )
    assert resumed.returncode == 0, resumed.stderr
    document = json.loads(resumed.stdout)
    assert comparable(document) == comparable(uninterrupted)
    (after,) = json.loads(marsrag("runs", "list", "--db", db, "--format", "json").stdout)
    assert (after["status"], after["stale"]) == ("completed", False)


def test_resuming_a_completed_run_changes_nothing(tmp_path: Path) -> None:
    """resume on a completed run calls no LLM (an empty script suffices) and leaves it as it was."""
    db = f"sqlite:///{tmp_path / 'done.db'}"
    first = json.loads(
        marsrag(
            "run", "latency", "--llm", f"replay:{script(tmp_path, 'f.jsonl', FULL)}", "--db", db, "--format", "json"
        ).stdout
    )
    again = marsrag(
        "resume",
        first["run_id"],
        "--llm",
        f"replay:{script(tmp_path, 'none.jsonl', [])}",
        "--db",
        db,
        "--format",
        "json",
    )
    assert again.returncode == 0 and json.loads(again.stdout) == first


def test_a_state_stored_without_its_transition_is_handed_over_on_resume(tmp_path: Path) -> None:
    """When the transition out of the last committed task is missing, resume plans it from the stored state."""
    from sqlalchemy import text

    from marsrag.store import open_store

    db = f"sqlite:///{tmp_path / 'gap.db'}"
    stopped = json.loads(
        marsrag(
            "run", "latency", "--llm", f"replay:{script(tmp_path, 'a.jsonl', [A1])}", "--db", db, "--format", "json"
        ).stdout
    )
    assert stopped["status"] == "failed" and len(stopped["transitions"]) == 1
    with open_store(db) as store, store.engine.begin() as connection:  # type: ignore[attr-defined]
        connection.execute(text("DELETE FROM transitions"))
        connection.execute(text("DELETE FROM events WHERE name LIKE 'loop.transition.%'"))
    resumed = marsrag(
        "resume",
        stopped["run_id"],
        "--llm",
        f"replay:{script(tmp_path, 'b.jsonl', [B1, B2, C1])}",
        "--db",
        db,
        "--format",
        "json",
    )
    document = json.loads(resumed.stdout)
    assert document["status"] == "completed"
    assert [(t["transition_source_task_id"], t["transition_mode"], t["hook"]) for t in document["transitions"]] == [
        ("diagnose", "direct", "Which cache tier should we pre-warm first?"),
        ("recommend", "repair", "Who owns the rollout checkpoints?"),
    ]


def test_a_repair_killed_mid_action_does_not_block_the_next_one(tmp_path: Path) -> None:
    """A `runs repair` SIGKILLed before its commit leaves its claim behind; the next repair takes it over at
    once (its holder's process is gone) instead of being refused for ten minutes."""
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    failing = script(tmp_path, "failing.jsonl", ["No idea.", "No idea.", A1, C1])
    proc = marsrag("run", "latency", "--llm", f"replay:{failing}", "--db", db, "--format", "json")
    run_id = json.loads(proc.stdout)["run_id"]
    assert json.loads(proc.stdout)["tasks"][0]["validation"]["status"] == "failed"
    repair = script(tmp_path, "repair.jsonl", [A1])
    killed = marsrag(
        "runs", "repair", run_id, "diagnose", "--llm", f"replay:{repair}", "--db", db,
        failpoints="task.before_commit:diagnose",
    )  # fmt: skip
    assert killed.returncode == -signal.SIGKILL
    again = marsrag("runs", "repair", run_id, "diagnose", "--llm", f"replay:{repair}", "--db", db, "--format", "json")
    assert again.returncode == 0, again.stderr
    document = json.loads(again.stdout)
    assert document["tasks"][0]["validation"]["status"] == "valid"
    assert [a["kind"] for a in document["tasks"][0]["attempts"]] == ["answer", "repair", "operator_repair"]
