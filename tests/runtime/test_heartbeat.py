"""The heartbeat: a run's executor shows signs of life between task commits, for other hosts to read.

A run whose only LLM call is slow has no commit for the whole call; its ``updated_at`` still moves, so a
process elsewhere does not take a live executor for dead (and a dead one is known within a minute).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest

from marsrag.liveness import owner_id
from marsrag.runtime.heartbeat import Heartbeat
from marsrag.state import RunRecord
from marsrag.store import RunStore
from marsrag.tasks import ProjectConfig
from tests.contract.samples import CONTENT
from tests.runtime.conftest import project_with

#: Bounds for waits only: nothing asserts how long anything took.
BOUND = 120.0
#: Seconds between beats in these tests (production: 10).
EVERY = 0.05
#: Seconds the replay LLM takes to answer: long enough for many beats, none of them a commit.
SLOW = 2.0
ANSWER = json.dumps(CONTENT)


def wait_for(condition: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + BOUND
    while not (value := condition()):
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.01)
    return value


def pending(run_id: str = "r") -> RunRecord:
    return RunRecord(run_id=run_id, session_id="s", goal="g", workflow="flow", loop_mode="hard")


def test_a_held_run_is_beaten_until_released_and_the_thread_then_ends(store: RunStore) -> None:
    """While held, the run's updated_at moves (no other write); released, the thread ends and the run rests."""
    store.create_run(pending())
    assert store.claim_run("r", owner_id(), seen=store.get_run("r"))
    claimed = store.get_run("r").updated_at
    heartbeat = Heartbeat(store, every=EVERY)
    assert not heartbeat.beating
    with heartbeat.holding("r"):
        assert heartbeat.held() == ["r"] and heartbeat.beating
        wait_for(lambda: store.get_run("r").updated_at > claimed, "a beat")
    assert heartbeat.held() == []
    wait_for(lambda: not heartbeat.beating, "the heartbeat thread to end")
    rested = store.get_run("r")
    assert (rested.status, rested.owner) == ("running", owner_id())
    assert heartbeat.beat() == set()  # nothing held: nothing written
    assert store.get_run("r") == rested


def test_a_run_held_twice_is_beaten_until_both_release_it(store: RunStore) -> None:
    """Holds are counted: a run held twice is beaten until both holds are released."""
    store.create_run(pending())
    assert store.claim_run("r", owner_id(), seen=store.get_run("r"))
    heartbeat = Heartbeat(store, every=3600)  # beats by hand here
    heartbeat.hold("r")
    heartbeat.hold("r")
    heartbeat.release("r")
    assert heartbeat.beat() == {"r"}
    heartbeat.release("r")
    assert heartbeat.held() == [] and heartbeat.beat() == set()


def test_a_beat_leaves_a_run_taken_over_as_it_is(store: RunStore) -> None:
    """Once the sweep handed the run back (this executor was found silent), beating changes nothing of it."""
    store.create_run(pending())
    assert store.claim_run("r", owner_id(), seen=store.get_run("r"))
    heartbeat = Heartbeat(store, every=3600)
    heartbeat.hold("r")
    assert heartbeat.beat() == {"r"}
    assert store.set_run_status("r", "pending", owner="elsewhere:1", seen=store.get_run("r"))
    handed = store.get_run("r")
    assert heartbeat.beat() == set()
    assert store.get_run("r") == handed


def beats_while_the_first_task_runs(store: RunStore, run_id: str) -> list[datetime]:
    """The run's distinct ``updated_at`` values seen while it is running with no task committed (at least 3)."""
    seen: list[datetime] = []

    def three_beats() -> bool:
        run = store.get_run(run_id)
        if run.status == "running" and not store.get_tasks(run_id) and run.updated_at not in seen:
            seen.append(run.updated_at)
        return len(seen) >= 3

    wait_for(three_beats, "three heartbeats before the first commit")
    return seen


@pytest.mark.crewai
@pytest.mark.parametrize("path", ["sync", "async"])
def test_a_run_waiting_on_a_slow_model_shows_signs_of_life(store: RunStore, sample: ProjectConfig, path: str) -> None:
    """The runner beats for the run it executes, on both paths; after the run it holds nothing."""
    from marsrag.llm.boundary import make_resilient
    from marsrag.llm.replay import ReplayLLM
    from marsrag.runtime.runner import WorkflowRunner

    llm = make_resilient(ReplayLLM.from_outputs([ANSWER], latency=SLOW))
    runner = WorkflowRunner(store, project_with(sample, ["diagnose"]), llm, heartbeat_every=EVERY)
    run_id = runner.start("Checkout latency breached its SLO", workflow="flow").run_id
    ended: list[RunRecord] = []
    execute = (
        (lambda: ended.append(runner.execute(run_id)))
        if path == "sync"
        else (lambda: ended.append(asyncio.run(runner.aexecute(run_id))))
    )
    thread = threading.Thread(target=execute)
    thread.start()
    try:
        beats = beats_while_the_first_task_runs(store, run_id)
    finally:
        thread.join(BOUND)
    assert beats == sorted(beats)
    assert [run.status for run in ended] == ["completed"]
    assert runner.heartbeat.held() == []


@pytest.mark.crewai
def test_a_flow_step_waiting_on_a_slow_model_shows_signs_of_life(store: RunStore, sample: ProjectConfig) -> None:
    """A LoopFlow beats for its run between its steps' commits, and stops once the kickoff ends."""
    from marsrag.llm.boundary import make_resilient
    from marsrag.llm.replay import ReplayLLM
    from tests.flows.triage import TO_ROLLOUT, TriageFlow, answer

    outputs = [
        {"output": answer(loop="Which cache tier should we pre-warm first?"), "latency": SLOW},
        answer(loop=TO_ROLLOUT),
        answer(),
    ]
    llm = make_resilient(ReplayLLM.from_outputs(outputs))
    flow = TriageFlow(store=store, llm=llm, project=sample, suppress_flow_events=True)
    heartbeat: Heartbeat = flow._binding.heartbeat  # the flow's own (the binding is not public)
    heartbeat.every = EVERY
    thread = threading.Thread(target=lambda: flow.kickoff(inputs={"goal": "API latency SLO breaches"}))
    thread.start()
    try:
        run_id = wait_for(lambda: next(iter(heartbeat.held()), None), "the flow's run to be held")
        beats_while_the_first_task_runs(store, run_id)
    finally:
        thread.join(BOUND)
    assert flow.run is not None and flow.run.status == "completed"
    assert heartbeat.held() == []
