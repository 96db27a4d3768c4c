"""Scale-out: two ``marsrag serve`` processes and two ``marsrag worker`` processes on one PostgreSQL database.

All four start at once on an empty schema (their migrations race under the advisory lock). A run started
on one server executes on a worker and is visible, followable and repairable on the other.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from marsrag.state import FALLBACK_HOOK
from marsrag.store import open_store
from tests._net import free_port
from tests.contract.samples import CONTENT
from tests.queue.conftest import Process, replay_script, serving, wait_for

pytestmark = pytest.mark.crewai

#: Every answer lacks its grip: each task ends partial (or failed), so each can be repaired by an operator.
PARTIAL = json.dumps({k: v for k, v in CONTENT.items() if k != "grip"})


def document(base: str, run_id: str) -> dict[str, Any]:
    response = httpx.get(f"{base}/api/runs/{run_id}", timeout=10)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_two_servers_and_two_workers_share_one_postgresql_database(
    tmp_path: Path, postgres_url: str, spawn: Callable[..., Process]
) -> None:
    """Start on A, watch and follow on B, repair on A the run followed on B: every step executes on a worker."""
    llm = replay_script(tmp_path / "partial.jsonl", [PARTIAL] * 100)
    ports = [free_port(), free_port()]
    processes = [
        spawn("serve", "--port", str(port), "--db", postgres_url, "--llm", llm, name=f"serve-{port}") for port in ports
    ] + [spawn("worker", "--db", postgres_url, "--llm", llm, name="worker") for _ in range(2)]
    a, b = (f"http://127.0.0.1:{port}" for port in ports)

    def logs() -> str:
        return "\n".join(f"--- {p.log.name}\n{p.output()[-3000:]}" for p in processes)

    for base in (a, b):
        wait_for(serving(base), f"{base} to serve", logs)

    started = httpx.post(f"{a}/api/runs", json={"goal": "Checkout latency breached its SLO"}, timeout=10)
    assert started.status_code == 202, started.text
    run_id = started.json()["run_id"]
    wait_for(lambda: document(b, run_id)["status"] in ("completed", "failed"), "the run to finish, seen on B", logs)
    first = document(b, run_id)
    assert first["status"] == "completed", first
    worker_pids = {str(p.proc.pid) for p in processes[2:]}
    page = httpx.get(f"{b}/runs/{run_id}", timeout=10)
    assert page.status_code == 200 and CONTENT["payoff"][:40] in page.text

    followed = httpx.post(f"{b}/api/runs/{run_id}/follow", timeout=10)
    assert followed.status_code == 202, followed.text
    next_id = followed.json()["run_id"]
    wait_for(lambda: document(a, next_id)["status"] in ("completed", "failed"), "the followed run, seen on A", logs)
    second = document(a, next_id)
    assert second["status"] == "completed" and second["session_id"] == first["session_id"]
    # The loop of a failing task is not usable: the follow asked the fallback question.
    assert second["goal"] == FALLBACK_HOOK

    task = second["tasks"][0]
    assert task["validation"]["status"] in ("partial", "failed")
    repaired = httpx.post(f"{a}/api/runs/{next_id}/tasks/{task['task_id']}/repair", timeout=120)
    assert repaired.status_code == 200, repaired.text
    assert [attempt["kind"] for attempt in repaired.json()["attempts"]][-1] == "operator_repair"
    assert len(repaired.json()["attempts"]) > len(task["attempts"])
    assert document(b, next_id)["tasks"][0]["attempts"] == repaired.json()["attempts"]  # seen on B
    rows = httpx.get(f"{b}/api/runs", timeout=10).json()
    assert {row["run_id"] for row in rows} >= {run_id, next_id}
    # Workers, not the servers, executed the runs.
    with open_store(postgres_url) as store:
        owners = [store.get_run(rid).owner or "" for rid in (run_id, next_id)]
    assert all(owner.rpartition(":")[2] in worker_pids for owner in owners), (owners, worker_pids)
