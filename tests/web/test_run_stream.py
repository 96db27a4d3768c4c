"""``GET /api/runs/{run_id}/stream``: a run's task updates as server-sent events, resumable (issue 41)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests._sse import Event, events
from tests.web.conftest import Site, answer

pytestmark = pytest.mark.crewai

#: Chunks a second of the streaming replay LLM: a task's answer (about 70 chunks) takes about half a second.
RATE = 150


def read_events(site: Site, run_id: str, last_event_id: str | None = None) -> list[Event]:
    """Every event of the run's stream until it ends (the stream closes after ``end``)."""
    headers = {"Last-Event-ID": last_event_id} if last_event_id is not None else {}
    with site.client.stream("GET", f"/api/runs/{run_id}/stream", headers=headers) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        return events(response.iter_lines())


def streamed_steps(count: int, rate: float = RATE) -> list[dict[str, Any]]:
    loops = [f"Which cache tier comes next, {n}?" for n in range(count)]
    return [{"output": answer(loop=loop), "tokens_per_second": rate} for loop in loops]


def start(site: Site, goal: str = "Checkout latency breached its SLO") -> str:
    response = site.client.post("/api/runs", json={"goal": goal})
    assert response.status_code == 202, response.text
    run_id: str = response.json()["run_id"]
    return run_id


def test_a_running_run_streams_its_sections_then_each_final_task_then_its_end(
    site_factory: Callable[..., Site],
) -> None:
    # The first answer is written slowly (about 2.5 s, half a second a section) so the 0.2 s polls of the
    # stream see it section by section even on a loaded machine; the others at the usual rate.
    steps = streamed_steps(3)
    steps[0]["tokens_per_second"] = 30
    site = site_factory(steps)
    run_id = start(site)
    events = read_events(site, run_id)
    site.wait()
    document = site.client.get(f"/api/runs/{run_id}").json()
    tasks = [e.data for e in events if e.kind == "task"]
    final = [t for t in tasks if t["validation"]["status"] != "in_progress"]
    assert final == document["tasks"]  # the final cards are the stored state
    assert len(tasks) > len(final) == 3  # more task events than tasks: the answers arrived as they were written
    assert events[-1].kind == "end" and events[-1].data == {
        "run_id": run_id,
        "status": "completed",
        "outcome": document["outcome"],
    }
    # The first task was seen being written before it completed: sections appeared one after another.
    first = [t for t in tasks if t["task_id"] == final[0]["task_id"]]
    assert first[0]["validation"]["status"] == "in_progress" and first[-1] == final[0]
    # (A poll that falls before the first section's label, or between the answer's end and its validation, sees
    # nothing being written: None, which says nothing of the order.)
    writing = [t["progress"]["writing"] for t in first if "progress" in t and t["progress"]["writing"] is not None]
    assert writing == sorted(writing, key=["hook", "grip", "payoff", "reinforce", "loop"].index)
    assert len(set(writing)) >= 2
    # Events come in order: each task's updates before the next task's; ids never repeat.
    positions = [t["position"] for t in tasks]
    assert positions == sorted(positions)
    assert len({e.id for e in events if e.kind == "task"}) == len(tasks)


def test_a_reconnect_with_the_last_event_id_misses_nothing_and_repeats_nothing(
    site_factory: Callable[..., Site],
) -> None:
    site = site_factory(streamed_steps(3))
    run_id = start(site)
    events = read_events(site, run_id)
    site.wait()
    final_ids = [e.id for e in events if e.kind == "task" and e.data["validation"]["status"] != "in_progress"]
    # Resume after each event in turn: what follows is exactly the final tasks not yet seen, then the end.
    for index, seen in enumerate(events[:-1]):
        assert seen.id is not None
        resumed = read_events(site, run_id, last_event_id=seen.id)
        already = {e.data["task_id"] for e in events[: index + 1] if e.id in final_ids}
        finals = [e.data["task_id"] for e in resumed if e.kind == "task"]
        assert all(e.data["validation"]["status"] != "in_progress" for e in resumed if e.kind == "task")
        assert finals == [t["task_id"] for t in site.client.get(f"/api/runs/{run_id}").json()["tasks"]
                          if t["task_id"] not in already]  # fmt: skip
        assert resumed[-1].kind == "end"


def test_a_finished_run_sends_each_final_task_and_ends(site: Site) -> None:
    run_id = site.start()
    events = read_events(site, run_id)
    document = site.client.get(f"/api/runs/{run_id}").json()
    assert [e.kind for e in events] == ["task"] * len(document["tasks"]) + ["end"]
    assert [e.data for e in events[:-1]] == document["tasks"]
    assert read_events(site, run_id, last_event_id="garbage")[0].data == document["tasks"][0]  # unreadable: the start


def test_an_unknown_run_is_a_404_with_a_json_reason(site: Site) -> None:
    response = site.client.get("/api/runs/nope/stream")
    assert response.status_code == 404 and "nope" in response.json()["detail"]
