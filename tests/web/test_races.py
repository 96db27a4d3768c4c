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


def test_ten_racing_follows_of_one_run_start_one_run(site_factory: Callable[..., Site]) -> None:
    """A double click, or ten requests at once, on two servers: one 202 and one new run; the rest get it (200)."""
    first = site_factory([answer()] * 6)
    second = site_factory([answer()] * 6, db=first.db)  # another server process on the same store
    run_id = first.start()
    barrier, responses = threading.Barrier(10), []

    def follow(index: int) -> None:
        site = first if index % 2 else second
        barrier.wait()
        responses.append(site.client.post(f"/api/runs/{run_id}/follow"))

    threads = [threading.Thread(target=follow, args=(index,)) for index in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    first.wait()
    second.wait()
    assert sorted(response.status_code for response in responses) == [200] * 9 + [202]
    followers = {response.json()["run_id"] for response in responses}
    assert len(followers) == 1
    assert [r.json()["already_followed"] for r in responses].count(False) == 1
    events = first.client.get(f"/api/runs/{run_id}").json()["events"]
    assert [event["name"] for event in events].count("loop.action.followed") == 1
    session = first.client.get(f"/api/runs/{run_id}").json()["session_id"]
    assert len(first.client.get("/api/runs", params={"session_id": session}).json()) == 2  # session depth 2, not 11
