"""The shipped example flow, run as users run it: a subprocess, a replay script, a real SQLite store file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from marsrag.store import open_store
from tests.conftest import REPO
from tests.flows.triage import TO_ROLLOUT, answer

pytestmark = pytest.mark.crewai

EXAMPLE = REPO / "examples" / "flows" / "support_flow.py"


def run_example(*args: str, failpoints: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    env["MARSRAG_FAILPOINTS"] = failpoints
    return subprocess.run(
        [sys.executable, str(EXAMPLE), *args], capture_output=True, text=True, env=env, cwd=REPO, check=False
    )


def script(path: Path, outputs: list[str]) -> str:
    path.write_text("".join(json.dumps({"output": output}) + "\n" for output in outputs))
    return f"replay:{path}"


def test_the_example_prints_its_run_id_last_and_runs_show_shows_it(tmp_path: Path) -> None:
    """The shipped replay script: three steps (direct, then repair), the run id last, `runs show` reads it."""
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    done = run_example("API latency SLO breaches", "--db", db, "--llm", f"replay:{EXAMPLE.parent / 'replay.jsonl'}")
    assert done.returncode == 0, done.stderr
    run_id = done.stdout.strip().splitlines()[-1]
    with open_store(db) as store:
        run = store.get_run(run_id)
        tasks = store.get_tasks(run_id)
    assert (run.status, run.workflow) == ("completed", "support_flow")
    assert [(t.task_id, t.validation.status, t.hook_source) for t in tasks] == [
        ("diagnose", "valid", "goal"),
        ("recommend", "valid", "direct"),
        ("plan", "valid", "repair"),
    ]
    shown = subprocess.run(
        [sys.executable, "-m", "marsrag", "runs", "show", run_id, "--db", db],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    assert shown.returncode == 0, shown.stderr
    assert run_id in shown.stdout and "support_flow" in shown.stdout and "recommend" in shown.stdout


def test_a_flow_killed_after_its_first_commit_resumes_without_redoing_it(tmp_path: Path) -> None:
    """SIGKILL right after diagnose commits; --resume runs only recommend (repaired) and plan, from the store."""
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    first = script(tmp_path / "first.jsonl", [answer(loop="Which cache tier should we pre-warm first?")] * 2)
    killed = run_example(
        "API latency SLO breaches", "--db", db, "--llm", first, failpoints="task.after_commit:diagnose"
    )
    assert killed.returncode == -9
    with open_store(db) as store:
        (run,) = store.list_runs()
        (diagnosed,) = store.get_tasks(run.run_id)
    assert run.status == "running" and diagnosed.task_id == "diagnose"
    # Exactly the calls left: had diagnose been asked again, it would take recommend's answers and plan's run out.
    rest = script(tmp_path / "rest.jsonl", [answer(grip=""), answer(loop=TO_ROLLOUT), answer()])
    resumed = run_example("--resume", run.run_id, "--db", db, "--llm", rest)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip().splitlines()[-1] == run.run_id
    with open_store(db) as store:
        tasks = store.get_tasks(run.run_id)
        assert store.get_run(run.run_id).status == "completed"
    assert tasks[0] == diagnosed
    assert [(t.task_id, [a.status for a in t.attempts]) for t in tasks] == [
        ("diagnose", ["valid"]),
        ("recommend", ["partial", "valid"]),
        ("plan", ["valid"]),
    ]
