"""``serve`` on the async executor: runs started through the HTTP API wait on their LLM together, on one loop."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.web.conftest import Site, answer

pytestmark = pytest.mark.crewai

#: Each call of the slow replay LLM takes half a second (awaited on the async path, slept on the thread path).
SLOW = {"output": answer(), "latency": 0.5}


def most_in_flight(calls: list[object]) -> int:
    """The most calls in flight at one moment, from their recorded start and end times."""
    edges = sorted([(call.started, 1) for call in calls] + [(call.ended, -1) for call in calls])  # type: ignore[attr-defined]
    most = current = 0
    for _, step in edges:  # an end sorts before a start at the same instant: touching calls do not overlap
        current += step
        most = max(most, current)
    return most


def test_ten_runs_started_through_the_api_have_ten_llm_calls_in_flight_at_once(
    site_factory: Callable[..., Site],
) -> None:
    """serve's default executor, for an LLM with acall, runs ten API runs on one loop: ten calls overlap."""
    from marsrag.runtime.async_executor import AsyncRunExecutor

    site = site_factory([SLOW] * 30)
    assert isinstance(site.backend.executor, AsyncRunExecutor)
    run_ids = []
    for number in range(10):
        response = site.client.post("/api/runs", json={"goal": f"Checkout latency breached its SLO ({number})"})
        assert response.status_code == 202, response.text
        run_ids.append(response.json()["run_id"])
    site.wait()
    for run_id in run_ids:
        document = site.client.get(f"/api/runs/{run_id}").json()
        assert document["status"] == "completed", document.get("status_reason")
        assert [task["validation"]["status"] for task in document["tasks"]] == ["valid"] * 3
    calls = site.backend.runner.llm.calls
    assert len(calls) == 30 and all(call.awaited for call in calls)
    starts = sorted(call.started for call in calls)[:10]
    assert most_in_flight(calls) == 10, f"the first ten calls started over {starts[-1] - starts[0]:.3f} s"


def test_the_thread_executor_is_chosen_by_setting_and_runs_one_call_per_thread(
    site_factory: Callable[..., Site],
) -> None:
    """executor="thread": the same runs on run_threads=2 threads, never more than two calls in flight."""
    from marsrag.runtime.executor import ThreadRunExecutor

    site = site_factory([SLOW] * 12, executor="thread", run_threads=2)
    assert isinstance(site.backend.executor, ThreadRunExecutor)
    for number in range(4):
        assert site.client.post("/api/runs", json={"goal": f"latency ({number})"}).status_code == 202
    site.wait()
    calls = site.backend.runner.llm.calls
    assert len(calls) == 12 and not any(call.awaited for call in calls)
    assert most_in_flight(calls) == 2
