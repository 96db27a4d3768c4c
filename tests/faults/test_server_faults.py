"""The server keeps serving while a run hangs in its LLM or hits faults, and the faulty runs end recorded."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from marsrag.llm.boundary import make_resilient
from marsrag.llm.resilient import CallPolicy
from tests.contract.samples import CONTENT
from tests.faults.fault_llm import HANG, HUGE, FaultLLM
from tests.web._live_server import live_server

pytestmark = pytest.mark.crewai

#: Bounds for waits only: nothing asserts how long anything took.
RUN_BOUND = 180.0


@pytest.fixture
def app(tmp_path: Path) -> Any:
    """The real app over a fresh SQLite file (two run threads); tests give its runner a fault LLM."""
    from marsrag.settings import resolve_settings
    from marsrag.web.app import create_app
    from marsrag.web.settings import WebSettings

    return create_app(
        WebSettings(resolve_settings(db=f"sqlite:///{tmp_path / 'site.db'}", llm="composer"), run_threads=2)
    )


@pytest.fixture
def server(app: Any) -> Iterator[httpx.Client]:
    """A client of the app served by a real uvicorn on a loopback port."""
    with live_server(app) as base_url, httpx.Client(base_url=base_url, timeout=30) as client:
        yield client


def start(client: httpx.Client, goal: str) -> str:
    response = client.post("/api/runs", json={"goal": goal})
    assert response.status_code == 202, response.text
    run_id: str = response.json()["run_id"]
    return run_id


def pages_answer(client: httpx.Client, run_id: str) -> None:
    for path in ("/health", "/", "/ask", f"/runs/{run_id}", "/api/runs", f"/api/runs/{run_id}"):
        response = client.get(path)
        assert response.status_code == 200, (path, response.status_code, response.text[:500])


def test_pages_answer_while_a_run_hangs_and_the_hung_run_ends_failed(
    app: Any, server: httpx.Client, released: list[FaultLLM]
) -> None:
    """A run hangs in its LLM: every page answers meanwhile; the time limit ends the run, recorded failed."""
    fault = FaultLLM.scripted([HANG] * 20)
    released.append(fault)
    app.state.backend.runner.llm = make_resilient(fault, CallPolicy(timeout=2, retries=0, backoff=0))
    run_id = start(server, "Checkout latency breached its SLO")
    assert fault.wait_entered(), "the run never reached its LLM"
    pages_answer(server, run_id)
    assert app.state.backend.executor.wait(timeout=RUN_BOUND), "the hung run did not end"
    document = server.get(f"/api/runs/{run_id}").json()
    assert document["status"] == "failed"
    assert "LLMTimeoutError: no answer within 2 s" in document["status_reason"]
    pages_answer(server, run_id)


def test_faulty_answers_are_recorded_and_their_pages_render(app: Any, server: httpx.Client) -> None:
    """Undecodable text and a 5 MB answer: the run completes with a failed task and a fallback; pages render."""
    lone = json.dumps({**CONTENT, "grip": "Cache \udcff tier is cold."}, ensure_ascii=False)
    fault = FaultLLM.scripted([lone, HUGE, HUGE.encode() + b"\xff"])
    app.state.backend.runner.llm = make_resilient(fault, CallPolicy(timeout=30, retries=1, backoff=0))
    project = app.state.backend.runner.project
    run_id = start(server, "Checkout latency breached its SLO")
    assert app.state.backend.executor.wait(timeout=RUN_BOUND), "the run did not end"
    document = server.get(f"/api/runs/{run_id}").json()
    assert document["status"] == "completed", document.get("status_reason")
    statuses = [task["validation"]["status"] for task in document["tasks"]]
    assert statuses[:2] == ["valid", "failed"] and len(statuses) == len(project.workflow(None).tasks)
    assert document["transitions"][1]["transition_mode"] == "fallback"
    assert "\ufffd" in json.dumps(document["tasks"][0], ensure_ascii=False)
    pages_answer(server, run_id)
