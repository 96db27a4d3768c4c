"""Racing operators over HTTP: two server processes' worth of apps on one store, one repair each, at once."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from tests.web.conftest import Site, answer

pytestmark = pytest.mark.crewai


def test_two_servers_repairing_one_task_at_once_repair_it_once(site_factory: Callable[..., Site]) -> None:
    """One repair gets 200 with the new state, the other 409; the task holds exactly one operator repair."""
    first = site_factory(["No idea.", "No idea.", answer(), answer(), answer(loop="Repaired on A?")])
    second = site_factory([answer(loop="Repaired on B?")], db=first.db)  # another app on the same store
    run_id = first.start()
    before = first.client.get(f"/api/runs/{run_id}").json()["tasks"][0]
    assert before["validation"]["status"] == "failed"
    for site in (first, second):
        site.backend.runner.llm.latency = 1.0  # the winner's LLM call outlasts the loser's attempt to start
    barrier, statuses, bodies = threading.Barrier(2), [], []

    def repair(site: Site) -> None:
        barrier.wait()
        response = site.client.post(f"/api/runs/{run_id}/tasks/diagnose/repair")
        statuses.append(response.status_code)
        bodies.append(response.json())

    threads = [threading.Thread(target=repair, args=(site,)) for site in (first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [200, 409], bodies
    refused = next(body for status, body in zip(statuses, bodies, strict=True) if status == 409)
    assert refused["error"] == "conflict"
    after = second.client.get(f"/api/runs/{run_id}").json()["tasks"][0]
    assert [attempt["kind"] for attempt in after["attempts"]] == ["answer", "repair", "operator_repair"]
    assert after["validation"]["status"] == "valid"
