"""Arm assignment: a SHA-256 of the experiment and session, split by relative weight, decided once per session."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from marsrag.experiments.assignment import assign_arm, experiment_applies, session_assignment
from marsrag.state import RunRecord
from marsrag.tasks.config import ArmConfig, ExperimentConfig, WorkflowConfig

T0 = datetime(2026, 3, 1, 9, tzinfo=UTC)


def experiment(name: str = "hard_vs_soft", start: datetime | None = None, **weights: float) -> ExperimentConfig:
    arms = weights or {"hard": 1.0, "soft": 1.0}
    modes = ["hard", "soft", "none"]
    return ExperimentConfig(
        name=name,
        arms={arm: ArmConfig(loop_mode=modes[i % 3], weight=w) for i, (arm, w) in enumerate(arms.items())},  # type: ignore[arg-type]
        start=start,
    )


def workflow(block: ExperimentConfig | None) -> WorkflowConfig:
    return WorkflowConfig(name="answer", loop_mode="hard", tasks=["diagnose"], experiment=block)


def run(
    session: str, *, at: datetime = T0, name: str = "answer", exp: str | None = None, arm: str | None = None
) -> RunRecord:
    return RunRecord(
        run_id=f"{session}-{at.timestamp()}",
        session_id=session,
        goal="g",
        workflow=name,
        loop_mode="hard",
        created_at=at,
        experiment=exp,
        arm=arm,
    )


def test_the_arm_is_the_shared_hash_split() -> None:
    """The first 8 bytes of sha256("name:session") over 2**64 fall into the cumulative weight split, in order."""
    block = experiment(a=1.0, b=3.0)
    for session in (f"s{i}" for i in range(200)):
        point = int.from_bytes(hashlib.sha256(f"hard_vs_soft:{session}".encode()).digest()[:8], "big") / 2**64
        assert assign_arm(block, session) == ("a" if point < 0.25 else "b")


def test_weights_are_relative() -> None:
    """50/50, 1/1 and 2/2 are the same split: every session gets the same arm under each."""
    sessions = [f"session-{i}" for i in range(500)]
    splits = [experiment(hard=w, soft=w) for w in (50.0, 1.0, 2.0)]
    assert len({tuple(assign_arm(block, s) for s in sessions) for block in splits}) == 1


def test_the_experiment_name_reshuffles_sessions() -> None:
    """Two experiments on the same sessions assign independently (the name is part of the hash)."""
    sessions = [f"session-{i}" for i in range(1000)]
    first = [assign_arm(experiment("one"), s) for s in sessions]
    second = [assign_arm(experiment("two"), s) for s in sessions]
    assert 350 < sum(a == b for a, b in zip(first, second, strict=True)) < 650


def test_ten_thousand_sessions_split_by_weight() -> None:
    """Over 10,000 ids the arms' counts match the weights 1:2:7 (chi-square; the ids are fixed, so is the p-value)."""
    from scipy.stats import chisquare

    block = experiment(a=1.0, b=2.0, c=7.0)
    counts = Counter(assign_arm(block, f"{i:08x}-session") for i in range(10_000))
    observed = [counts[arm] for arm in ("a", "b", "c")]
    assert sum(observed) == 10_000
    assert chisquare(observed, [1_000, 2_000, 7_000]).pvalue > 0.001


def test_a_session_gets_the_same_arm_in_another_process() -> None:
    """No Python hash(): a fresh interpreter with another hash seed assigns the same arms."""
    sessions = [f"s{i}" for i in range(50)]
    block = experiment(a=1.0, b=1.0, c=2.0)
    script = (
        "import sys; from marsrag.experiments.assignment import assign_arm; "
        "from marsrag.tasks.config import ExperimentConfig; "
        "block = ExperimentConfig.model_validate_json(sys.argv[1]); "
        "print(' '.join(assign_arm(block, f's{i}') for i in range(50)))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    done = subprocess.run(
        [sys.executable, "-c", script, block.model_dump_json()], capture_output=True, text=True, env=env, check=True
    )
    assert done.stdout.split() == [assign_arm(block, s) for s in sessions]


@pytest.mark.parametrize(
    ("start", "applies"),
    [
        (None, True),
        (T0 - timedelta(seconds=1), True),
        (T0, True),
        (T0 + timedelta(seconds=1), False),
        (datetime(2026, 3, 1, 9, 0, 1), False),  # no offset: read as UTC
        (datetime(2026, 3, 1, 8, 59), True),
    ],
)
def test_the_experiment_applies_from_its_start(start: datetime | None, applies: bool) -> None:
    """A session that began at T0 is in the experiment when start is unset or not after T0."""
    assert experiment_applies(workflow(experiment(start=start)), T0) is applies


def test_a_workflow_without_an_experiment_takes_no_session() -> None:
    """No experiment: never applies, no assignment."""
    assert experiment_applies(workflow(None), T0) is False
    assert session_assignment(workflow(None), "s", [], T0) is None


def test_a_new_session_is_assigned_by_hash_and_told_it_is_first() -> None:
    """No earlier run: the hash's arm, first=True (its run stores the assigned event)."""
    block = experiment()
    got = session_assignment(workflow(block), "s1", [], T0)
    assert got is not None
    assert (got.experiment, got.arm, got.first) == ("hard_vs_soft", assign_arm(block, "s1"), True)
    assert got.config == block.arms[got.arm]
    event = got.event("r1", "s1")
    assert (event.name, event.run_id, event.loop_mode) == ("loop.experiment.assigned", "r1", got.config.loop_mode)
    assert event.detail == {"experiment": "hard_vs_soft", "arm": got.arm, "session_id": "s1"}


def test_a_session_keeps_its_arm_when_the_weights_change() -> None:
    """A later run reuses the arm recorded on the session's earlier run, whatever the hash says now."""
    earlier = [run("s1", exp="hard_vs_soft", arm="soft")]
    heavy = experiment(hard=1000.0, soft=1.0)  # the most lopsided split the limits allow
    assert assign_arm(heavy, "s1") == "hard"
    got = session_assignment(workflow(heavy), "s1", earlier, T0 + timedelta(hours=1))
    assert got is not None and (got.arm, got.first) == ("soft", False)


def test_a_session_from_before_the_experiment_stays_outside() -> None:
    """An earlier run of the workflow outside the experiment (or in another one) keeps the session outside."""
    block = experiment()
    assert session_assignment(workflow(block), "s1", [run("s1")], T0) is None
    assert session_assignment(workflow(block), "s1", [run("s1", exp="older", arm="hard")], T0) is None


def test_runs_of_other_workflows_only_date_the_session() -> None:
    """A session begun in another workflow is assigned at its first run here, unless it began before start."""
    block = experiment(start=T0)
    other = run("s1", name="triage", at=T0 + timedelta(minutes=1))
    got = session_assignment(workflow(block), "s1", [other], T0 + timedelta(minutes=5))
    assert got is not None and got.first
    early = run("s1", name="triage", at=T0 - timedelta(minutes=1))
    assert session_assignment(workflow(block), "s1", [early], T0 + timedelta(minutes=5)) is None


def test_a_session_whose_arm_was_removed_leaves_the_experiment() -> None:
    """The recorded arm is gone from the config: nothing to run it with, so the run is outside."""
    earlier = [run("s1", exp="hard_vs_soft", arm="gone")]
    assert session_assignment(workflow(experiment()), "s1", earlier, T0) is None
