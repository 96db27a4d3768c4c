"""A run executing on a Celery worker streams to a client of another ``serve`` process, through the store (issue 41)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests._net import free_port
from tests._sse import events
from tests.contract.samples import CONTENT
from tests.queue.conftest import Process, serving, wait_for

pytestmark = pytest.mark.crewai

#: Chunks a second of the worker's streaming replay LLM: about a second and a half per task.
RATE = 50


def events_of(base: str, run_id: str) -> list[tuple[str, dict[str, Any]]]:
    """Every event of the run's stream on ``base``, until its end."""
    with httpx.stream("GET", f"{base}/api/runs/{run_id}/stream", timeout=httpx.Timeout(10, read=120)) as response:
        assert response.status_code == 200, response.read()
        return [(event.kind, event.data) for event in events(response.iter_lines())]


def test_the_updates_of_a_run_on_a_worker_reach_a_client_of_another_server(
    tmp_path: Path, spawn: Callable[..., Process]
) -> None:
    script = tmp_path / "streamed.jsonl"
    steps = [{"output": json.dumps({**CONTENT, "loop": f"Question {n}?"}), "tokens_per_second": RATE} for n in range(3)]
    script.write_text("".join(json.dumps(step) + "\n" for step in steps))
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    llm = f"replay:{script}"
    ports = [free_port(), free_port()]
    processes = [spawn("serve", "--port", str(port), "--db", db, "--llm", llm, name=f"serve-{port}") for port in ports]
    processes.append(spawn("worker", "--db", db, "--llm", llm, name="worker"))
    a, b = (f"http://127.0.0.1:{port}" for port in ports)

    def logs() -> str:
        return "\n".join(f"--- {p.log.name}\n{p.output()[-3000:]}" for p in processes)

    for base in (a, b):
        wait_for(serving(base), f"{base} to serve", logs)
    started = httpx.post(f"{a}/api/runs", json={"goal": "Checkout latency breached its SLO"}, timeout=10)
    assert started.status_code == 202, started.text
    run_id = started.json()["run_id"]

    events = events_of(b, run_id)
    document = httpx.get(f"{b}/api/runs/{run_id}", timeout=10).json()
    assert document["status"] == "completed", logs()
    tasks = [data for kind, data in events if kind == "task"]
    writing = [task for task in tasks if task["validation"]["status"] == "in_progress"]
    assert writing, "no task was seen being written"
    assert [task for task in tasks if task not in writing] == document["tasks"]
    assert events[-1] == ("end", {"run_id": run_id, "status": "completed", "outcome": document["outcome"]})
