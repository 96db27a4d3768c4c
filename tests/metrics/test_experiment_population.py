"""A simulated population on the real store: sessions assigned to two arms by the hash, follows drawn at known
true rates, the report read back from the store's counts per arm.

The coverage test repeats the experiment under 200 names (each name splits the sessions anew) in one SQLite
store: the report's 95% interval of the follow-rate difference covers the true difference in at least the
binomial floor of the statistics tests (fewer has a chance below one in a million at 93% coverage).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy.stats import binom

from marsrag.metrics.experiment import ExperimentReport
from marsrag.metrics.experiment_service import read_report
from marsrag.store import RunStore, open_store
from marsrag.tasks.config import ArmConfig, ExperimentConfig, WorkflowConfig
from tests.experiments.population import write_session

TRUE = {"hard": 0.30, "soft": 0.50}
SEEDS = 200


def experiment(name: str) -> ExperimentConfig:
    return ExperimentConfig(
        name=name, arms={"hard": ArmConfig(loop_mode="hard", weight=50), "soft": ArmConfig(loop_mode="soft", weight=50)}
    )


def populate(store: RunStore, config: ExperimentConfig, sessions: range, rng: np.random.Generator) -> None:
    """Each session's arm by the hash of its id; its one run followed with the arm's true probability."""
    from marsrag.experiments.assignment import assign_arm  # the runner's own assignment

    for n in sessions:
        session_id = f"{config.name}-{n}"
        arm = assign_arm(config, session_id)
        write_session(
            store, session_id, experiment=config.name, arm=arm, followed=bool(rng.random() < TRUE[arm]), mode=arm
        )


def report(store: RunStore, config: ExperimentConfig) -> ExperimentReport:
    workflow = WorkflowConfig(name="support_answer", tasks=["diagnose"], experiment=config)
    return read_report(store, workflow)


def test_the_reports_interval_covers_the_true_difference_of_follow_rates(tmp_path: Path) -> None:
    """200 experiments of 60 sessions each: the follow difference's interval covers +0.20 often enough."""
    covered = 0
    with open_store(f"sqlite:///{tmp_path / 'population.db'}") as store:
        for seed in range(SEEDS):
            config = experiment(f"coverage-{seed}")
            populate(store, config, range(60), np.random.default_rng(seed))
            read = report(store, config)
            assert sum(arm.sessions for arm in read.arms) == 60
            (follow,) = read.primary()
            assert follow.interval is not None
            covered += follow.interval.covers(TRUE["soft"] - TRUE["hard"])
    assert covered >= int(binom.ppf(1e-6, SEEDS, 0.93)), covered


def test_more_sessions_needed_shrinks_as_sessions_are_added(tmp_path: Path) -> None:
    """One experiment read after 100, 400 and 1,600 sessions: the sessions still to come shrink to none."""
    config = experiment("growing")
    rng = np.random.default_rng(2026)
    remaining, sessions = [], 0
    with open_store(f"sqlite:///{tmp_path / 'growing.db'}") as store:
        for total in (100, 400, 1600):
            populate(store, config, range(sessions, total), rng)
            sessions = total
            read = report(store, config)
            assert read.sessions == total and not read.srm.mismatch
            (follow,) = read.primary()
            remaining.append(follow.more_sessions_needed)
    assert remaining[0] is not None and remaining[0] > 0
    assert remaining == sorted(remaining, reverse=True) and remaining[-1] == 0, remaining
