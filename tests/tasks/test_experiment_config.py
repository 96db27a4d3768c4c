"""A workflow's ``experiment:`` block: loaded into ExperimentConfig, or refused with its file, line and problem."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from marsrag.errors import ConfigError
from marsrag.tasks import load_config

AGENTS = "analyst:\n  role: Analyst\n  goal: Find causes.\nlead:\n  role: Lead\n  goal: Decide.\n"
FACTS = "facts:\n  description: List facts.\n  agent: analyst\n  narrative: false\n"


def folder_with(tmp_path: Path, experiment: str) -> Path:
    """A config folder whose one workflow ``answer`` carries the given experiment block (indented YAML)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "agents.yaml").write_text(AGENTS)
    (tmp_path / "tasks.yaml").write_text(FACTS)
    workflow = "answer:\n  loop_mode: hard\n  tasks: [facts]\n  experiment:\n"
    (tmp_path / "workflows.yaml").write_text(workflow + experiment)
    return tmp_path


def test_the_block_loads_with_its_arms_in_order(tmp_path: Path) -> None:
    """Arms keep their config order; weights default to 1; start, agent and llm are read as given."""
    block = (
        "    name: hard_vs_soft\n"
        "    start: 2026-03-01T09:00:00Z\n"
        "    arms:\n"
        "      hard: {loop_mode: hard, weight: 50}\n"
        "      soft: {loop_mode: soft, agent: lead, llm: 'replay:answers.jsonl'}\n"
    )
    experiment = load_config(folder_with(tmp_path, block)).workflow("answer").experiment
    assert experiment is not None
    assert experiment.name == "hard_vs_soft"
    assert experiment.start == datetime(2026, 3, 1, 9, tzinfo=UTC)
    assert list(experiment.arms) == ["hard", "soft"]
    assert [(a.loop_mode, a.weight, a.agent, a.llm) for a in experiment.arms.values()] == [
        ("hard", 50.0, None, None),
        ("soft", 1.0, "lead", "replay:answers.jsonl"),
    ]


def test_a_workflow_without_the_block_has_no_experiment(tmp_path: Path) -> None:
    """No experiment key: experiment is None."""
    (tmp_path / "agents.yaml").write_text(AGENTS)
    (tmp_path / "tasks.yaml").write_text(FACTS)
    (tmp_path / "workflows.yaml").write_text("answer:\n  tasks: [facts]\n")
    assert load_config(tmp_path).workflow("answer").experiment is None


@pytest.mark.parametrize(
    ("block", "needle"),
    [
        (
            "    name: e\n    arms:\n      hard: {loop_mode: hard, wieght: 2}\n      soft: {loop_mode: soft}\n",
            r"workflows.yaml:7:31: LC111 workflow 'answer': experiment arm 'hard' has unknown key\(s\) wieght",
        ),
        (
            "    name: e\n    arms:\n      hard: {loop_mode: strict}\n      soft: {loop_mode: soft}\n",
            r"workflows.yaml:7:14: LC111 .* arm 'hard' loop_mode must be none, soft or hard, not 'strict'",
        ),
        (
            "    name: e\n    arms:\n      hard: {loop_mode: hard, weight: -1}\n      soft: {loop_mode: soft}\n",
            r"workflows.yaml:7:31: LC111 .* arm 'hard' weight must be a number from 0.001 to 1,000,000, not -1",
        ),
        (
            "    name: e\n    arms:\n      hard: {loop_mode: hard}\n",
            r"workflows.yaml:6:5: LC111 .* needs arms: a mapping of at least two .*; it has 1",
        ),
        (
            "    name: e\n    arms:\n      hard: {loop_mode: hard}\n      soft: {loop_mode: soft, agent: boss}\n",
            r"workflows.yaml:8:31: LC111 workflow 'answer': experiment arm 'soft' names unknown agent 'boss'",
        ),
    ],
    ids=["unknown-arm-key", "bad-loop-mode", "weight-not-positive", "one-arm", "unknown-agent"],
)
def test_a_malformed_block_stops_loading_at_its_line(tmp_path: Path, block: str, needle: str) -> None:
    """Each problem is a ConfigError naming the file, line, column, rule and what is wrong."""
    with pytest.raises(ConfigError, match=needle):
        load_config(folder_with(tmp_path, block))


def test_the_cli_refuses_a_malformed_block_in_one_line(tmp_path: Path) -> None:
    """marsrag run with a broken experiment: exit 2, one line naming the problem, no traceback, nothing stored."""
    config = folder_with(tmp_path / "config", "    name: e\n    arms:\n      hard: {loop_mode: hard}\n")
    db = tmp_path / "runs.db"
    result = subprocess.run(
        [sys.executable, "-m", "marsrag", "run", "goal", "--config", str(config), "--db", f"sqlite:///{db}"],
        env={**os.environ, "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "LC111" in lines[0] and "needs arms" in lines[0]
    assert not db.exists()
