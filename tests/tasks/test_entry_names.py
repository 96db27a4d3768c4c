"""The names of agents, tasks, tools and workflows: lint and the models hold them to one rule, and a config
breaking it is refused in one line (exit 2) before any store is written (a long name failed every run on
PostgreSQL: task and workflow names are in the rollups' primary key)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from marsrag.tasks import sample_config_dir
from marsrag.tasks.config import AgentConfig, WorkflowConfig
from marsrag.tasks.entry_names import ENTRY_NAME_MAX, entry_name_problem


@given(st.text(st.characters(exclude_categories=()), max_size=ENTRY_NAME_MAX + 20))
def test_the_models_refuse_exactly_what_lint_reports(name: str) -> None:
    problem = entry_name_problem(name)
    try:
        WorkflowConfig(name=name, tasks=["t"])
        AgentConfig(name=name, role="r", goal="g")
    except ValidationError as error:
        assert problem is not None and problem in str(error)
    else:
        assert problem is None


@pytest.mark.parametrize(
    ("name", "accepted"),
    [("diagnose", True), ("x" * ENTRY_NAME_MAX, True), ("x" * (ENTRY_NAME_MAX + 1), False), ("a\nb", True),
     ("  ", False), ("Überprüfung der Lage", True), ("a\udcffb", True)],
)  # fmt: skip
def test_the_rule_at_and_past_its_limits(name: str, accepted: bool) -> None:
    assert (entry_name_problem(name) is None) == accepted


def test_a_run_with_a_task_name_past_the_limit_is_refused_in_one_line_storing_nothing(tmp_path: Path) -> None:
    config = tmp_path / "config"
    shutil.copytree(sample_config_dir(), config)
    long_name = "d" * 300  # (YAML itself refuses a key past 1,024 characters)
    for file in config.glob("*.yaml"):
        text = file.read_text(encoding="utf-8")
        file.write_text(text.replace("diagnose", long_name), encoding="utf-8")
    env = {**os.environ, "MARSRAG_HOME": str(tmp_path / "home")}
    db = tmp_path / "runs.db"
    done = subprocess.run(
        [sys.executable, "-m", "marsrag", "run", "cache", "--config", str(config), "--db", f"sqlite:///{db}"],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "300 characters" in line and "Traceback" not in done.stderr
    assert not db.exists()
