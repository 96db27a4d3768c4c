"""tune on a workflow with an experiment: the winner once the planned sessions are in, else what it still needs;
--write ends the experiment with the winner's loop_mode and touches nothing else."""

from __future__ import annotations

import difflib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from marsrag.metrics.experiment import build_report
from marsrag.metrics.tune import Recommendation, decide_experiment, write_recommendations
from marsrag.store import LoopCounts, open_store
from marsrag.tasks import load_config, sample_config_dir
from marsrag.tasks.config import ArmConfig, ExperimentConfig
from tests.experiments.population import EXPERIMENT_BLOCK, sample_with_experiment, write_arm

EXPERIMENT = ExperimentConfig(
    name="hard_vs_soft",
    arms={"hard": ArmConfig(loop_mode="hard", weight=50), "soft": ArmConfig(loop_mode="soft", weight=50)},
)


def arm(sessions: int, follow: float, fallback: float = 0.1) -> LoopCounts:
    """One completed run per session offering a next action, ``follow`` of them followed."""
    return LoopCounts(
        executions=sessions,
        first_valid=sessions,
        transitions=sessions,
        fallbacks=round(fallback * sessions),
        completed=sessions,
        offering=sessions,
        followed=round(follow * sessions),
        downstream=round(follow * sessions),
        depths={1: sessions},
    )


def decide(hard: LoopCounts, soft: LoopCounts) -> Recommendation:
    report = build_report("support_answer", EXPERIMENT, {"hard": hard, "soft": soft})
    return decide_experiment("user_facing", "hard", report)


def test_the_winner_is_recommended_once_every_arm_has_the_planned_sessions() -> None:
    """Follow 0.45 (soft) vs 0.30 (hard), 200 sessions each, 162 planned: soft, with its interval and the rule."""
    rec = decide(arm(200, 0.30), arm(200, 0.45))
    assert (rec.current, rec.recommended, rec.rule) == ("hard", "soft", "experiment_winner")
    assert rec.change and rec.ends_experiment and rec.experiment == "hard_vs_soft"
    assert rec.reasons[0].startswith("experiment hard_vs_soft: soft (soft) beats hard on loop_follow_rate by 15.0 pt")
    assert "95% CI [+" in rec.reasons[0]
    assert "at least the 162 sessions planned (80% power) and the 95% interval excludes 0" in rec.reasons[1]
    assert rec.numbers["winner"] == "soft" and rec.numbers["sessions"] == {"hard": 200, "soft": 200}
    assert 0 < rec.numbers["ci_low"] < 0.15 < rec.numbers["ci_high"]
    assert rec.to_dict()["ends_experiment"] is True


def test_before_the_planned_sessions_it_says_how_many_more_it_needs() -> None:
    """The same rates at 100 sessions per arm: significant already, but 62 more are needed; the mode is kept."""
    rec = decide(arm(100, 0.30), arm(100, 0.45))
    assert (rec.recommended, rec.rule) == ("hard", "experiment_needs_sessions")
    assert not rec.change and not rec.ends_experiment
    assert rec.reasons[0] == (
        "experiment hard_vs_soft needs 62 more sessions per arm: the smallest arm has 100 of the 162 planned for "
        "loop_follow_rate (80% power for the observed difference)"
    )
    assert "inflates false positives" in rec.reasons[1] and rec.numbers["more_sessions"] == 62


def test_with_no_difference_observed_it_cannot_plan_a_size_yet() -> None:
    """Equal rates: no sample size to plan; keep, and say so."""
    rec = decide(arm(50, 0.3), arm(50, 0.3))
    assert rec.rule == "experiment_needs_sessions" and rec.recommended == "hard"
    assert "no difference in loop_follow_rate observed yet (50 sessions in the smallest arm)" in rec.reasons[0]


def test_a_winner_worse_on_a_guardrail_is_not_recommended() -> None:
    """Soft is followed more but falls back far more often: the guardrail rule keeps hard."""
    rec = decide(arm(300, 0.30, fallback=0.05), arm(300, 0.45, fallback=0.30))
    assert (rec.recommended, rec.rule, rec.ends_experiment) == ("hard", "experiment_guardrail", False)
    assert "soft is better on loop_follow_rate but worse on a guardrail (fallback_rate +25.0 pt" in rec.reasons[0]


def test_a_baseline_better_than_every_arm_wins() -> None:
    """Hard is followed more: hard wins (same mode as now, but the experiment still ends on --write)."""
    rec = decide(arm(300, 0.45), arm(300, 0.30))
    assert (rec.recommended, rec.rule, rec.change, rec.ends_experiment) == ("hard", "experiment_winner", False, True)
    assert rec.reasons[0].startswith("experiment hard_vs_soft: hard (hard) beats soft on loop_follow_rate by 15.0 pt")


def test_a_sample_ratio_mismatch_blocks_the_recommendation() -> None:
    """600 vs 400 sessions on a 50/50 split: nothing is recommended from it."""
    rec = decide(arm(600, 0.30), arm(400, 0.45))
    assert (rec.recommended, rec.rule) == ("hard", "experiment_sample_ratio_mismatch")
    assert "Sample ratio mismatch" in rec.reasons[0]


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    """A copy of the sample config whose support_answer declares the experiment (after its loop_mode line)."""
    return sample_with_experiment(tmp_path / "config")


def test_write_replaces_the_experiment_block_with_the_winners_loop_mode_and_nothing_else(config_dir: Path) -> None:
    """The block (its comments and blank line too) and the old loop_mode line go; one loop_mode: soft comes."""
    path = config_dir / "workflows.yaml"
    before = path.read_text(encoding="utf-8")
    rec = decide(arm(200, 0.30), arm(200, 0.45))
    assert write_recommendations(config_dir, [rec]) == ["support_answer"]
    after = path.read_text(encoding="utf-8")
    diff = list(difflib.ndiff(before.splitlines(), after.splitlines()))
    block = EXPERIMENT_BLOCK.splitlines()
    removed = [line for line in diff if line.startswith("- ")]
    assert removed == ["-   loop_mode: hard", *(f"- {line}" for line in block[1:])]
    assert [line for line in diff if line.startswith("+ ")] == ["+   loop_mode: soft"]
    # The comment line above the block is a sibling of the workflow's keys: it stays.
    assert block[0] in after
    project = load_config(config_dir)
    assert project.workflow("support_answer").effective_loop_mode == "soft"
    assert project.workflow("support_answer").experiment is None
    sample = (sample_config_dir() / "workflows.yaml").read_text(encoding="utf-8")
    tasks = "  tasks: [diagnose, recommend, plan]\n"
    expected = sample.replace("  loop_mode: hard\n", "", 1).replace(tasks, f"{tasks}{block[0]}\n  loop_mode: soft\n")
    assert after == expected


def test_write_adds_the_winner_where_the_workflow_had_no_loop_mode(config_dir: Path) -> None:
    """A workflow relying on the default policy: the block becomes its loop_mode line, the rest stays."""
    path = config_dir / "workflows.yaml"
    text = path.read_text(encoding="utf-8").replace("  loop_mode: hard\n", "", 1)
    path.write_text(text, encoding="utf-8")
    rec = decide(arm(200, 0.30), arm(200, 0.45))
    write_recommendations(config_dir, [rec])
    after = path.read_text(encoding="utf-8")
    assert after == text.replace("\n".join(EXPERIMENT_BLOCK.splitlines()[1:]) + "\n", "  loop_mode: soft\n")


def test_a_recommendation_that_needs_sessions_writes_nothing(config_dir: Path) -> None:
    """Not enough sessions: --write leaves the file byte for byte."""
    path = config_dir / "workflows.yaml"
    before = path.read_bytes()
    assert write_recommendations(config_dir, [decide(arm(100, 0.30), arm(100, 0.45))]) == []
    assert path.read_bytes() == before


# -- through the store, the service and the CLI -------------------------------------------------------------------


def test_tune_reads_the_experiment_from_the_store_and_write_ends_it(tmp_path: Path, config_dir: Path) -> None:
    """200 sessions per arm stored, soft followed more: tune recommends soft; --write ends the experiment."""
    from marsrag.metrics.tune_service import tune

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    with open_store(url) as store:
        write_arm(store, "hard", 200, 60)
        write_arm(store, "soft", 200, 90, mode="soft")
    dry = tune(db=url, config=str(config_dir), workflow="support_answer")
    (rec,) = dry["recommendations"]
    assert (rec["recommended"], rec["rule"], rec["experiment"], rec["ends_experiment"]) == (
        "soft",
        "experiment_winner",
        "hard_vs_soft",
        True,
    )
    assert dry["written"] == []
    result = tune(db=url, config=str(config_dir), write=True)
    assert result["written"] == ["support_answer"]
    assert load_config(config_dir).workflow("support_answer").experiment is None


def test_tune_cli_says_how_many_more_sessions_the_experiment_needs(tmp_path: Path, config_dir: Path) -> None:
    """marsrag tune (text) with 100 sessions per arm: 62 more per arm, nothing written."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    with open_store(url) as store:
        write_arm(store, "hard", 100, 30)
        write_arm(store, "soft", 100, 45, mode="soft")
    proc = subprocess.run(
        [sys.executable, "-m", "marsrag", "tune", "--db", url, "--config", str(config_dir)]
        + ["--workflow", "support_answer"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "support_answer (user_facing): keep hard  [experiment_needs_sessions]" in proc.stdout
    assert "experiment hard_vs_soft needs 62 more sessions per arm" in proc.stdout
    json_proc = subprocess.run(
        [sys.executable, "-m", "marsrag", "tune", "--db", url, "--config", str(config_dir), "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert json_proc.returncode == 0, json_proc.stderr
    first = json.loads(json_proc.stdout)["recommendations"][0]
    assert first["numbers"]["more_sessions"] == 62 and first["numbers"]["sessions"] == {"hard": 100, "soft": 100}
