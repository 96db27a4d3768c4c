"""Recovery: runs a dead process left unfinished are found, and a restarted server finishes them."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from marsrag.runtime.recovery import PENDING_GRACE, unfinished_runs
from marsrag.state import RunRecord, utcnow
from marsrag.store import open_store
from tests._net import free_port
from tests.contract.samples import CONTENT

VALID = json.dumps({**CONTENT, "loop": "Which cache tier should we pre-warm first?"})
SECOND = json.dumps({**CONTENT, "loop": "Who signs off the pre-warm runbook?"})
THIRD = json.dumps({**CONTENT, "loop": "Should we alert on cold caches?"})


def record(run_id: str, **fields: object) -> RunRecord:
    return RunRecord(run_id=run_id, session_id="s", goal="g", workflow="support_answer", loop_mode="hard", **fields)


def test_unfinished_runs_are_old_pending_and_stale_running_ones(tmp_path: Path) -> None:
    """Pending past the grace and running under a dead process are found, oldest first; the rest are not."""
    with subprocess.Popen([sys.executable, "-c", "pass"]) as gone:
        gone.wait()
    with open_store(f"sqlite:///{tmp_path / 'runs.db'}") as store:
        for run_id in ("pending", "dead", "alive", "done"):
            store.create_run(record(run_id))
        store.set_run_status("dead", "running", owner=f"{socket.gethostname()}:{gone.pid}")
        store.set_run_status("alive", "running", owner=f"{socket.gethostname()}:{os.getpid()}")
        store.set_run_status("done", "completed", summary="done")
        assert unfinished_runs(store) == ["dead"]  # the pending run was just queued by someone
        later = utcnow() + PENDING_GRACE + timedelta(seconds=1)
        assert unfinished_runs(store, now=later) == ["pending", "dead"]


def serve(
    tmp_path: Path, db: str, outputs: list[str], port: int, failpoints: str | None = None
) -> subprocess.Popen[bytes]:
    script = tmp_path / f"llm-{port}.jsonl"
    script.write_text("".join(json.dumps({"output": output}) + "\n" for output in outputs))
    env = {**os.environ}
    env.pop("MARSRAG_FAILPOINTS", None)
    env.pop("MARSRAG_BROKER", None)
    if failpoints:
        env["MARSRAG_FAILPOINTS"] = failpoints
    args = ["serve", "--port", str(port), "--db", db, "--llm", f"replay:{script}"]
    return subprocess.Popen([sys.executable, "-m", "marsrag", *args], env=env, stderr=subprocess.PIPE)


def wait_until(check: object, what: str) -> None:
    assert callable(check)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"gave up waiting for {what}")


@pytest.mark.crewai
def test_a_restarted_server_finishes_the_run_its_killed_predecessor_left(tmp_path: Path) -> None:
    """The server dies (SIGKILL) right after the run's first task commits; the next server on the store resumes it."""
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    port = free_port()
    first = serve(tmp_path, db, [VALID], port, failpoints="task.after_commit:diagnose")
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: httpx.get(f"{base}/health", timeout=2).status_code == 200, "the first server")
        run_id = httpx.post(f"{base}/api/runs", json={"goal": "latency"}, timeout=10).json()["run_id"]
        assert first.wait(timeout=120) == -signal.SIGKILL
    finally:
        first.kill()
        first.communicate()
    port = free_port()
    second = serve(tmp_path, db, [SECOND, THIRD], port)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(
            lambda: httpx.get(f"{base}/api/runs/{run_id}", timeout=5).json()["status"] == "completed",
            "the restarted server to finish the run",
        )
        document = httpx.get(f"{base}/api/runs/{run_id}", timeout=5).json()
    finally:
        second.terminate()
        second.communicate(timeout=60)
    assert [task["loop_output"]["loop"] for task in document["tasks"]] == [
        json.loads(out)["loop"] for out in (VALID, SECOND, THIRD)
    ]
    assert [len(task["attempts"]) for task in document["tasks"]] == [1, 1, 1]
