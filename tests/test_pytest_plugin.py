"""The pytest plugin, run as users run it: pytest in a subprocess on a config folder."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from marsrag.regression import CHECKS
from marsrag.tasks import sample_config_dir

REPO = Path(__file__).resolve().parents[1]
SAMPLE_NARRATIVE = ["diagnose", "recommend", "plan"]


def pytest_in(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m pytest -p marsrag.pytest_plugin ARGS`` in ``folder``, with a home of its own (kept empty)."""
    (folder / "pytest.ini").exists() or (folder / "pytest.ini").write_text("[pytest]\n")
    home = folder / "home"
    home.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "HOME": str(home),
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    command = [sys.executable, "-m", "pytest", "-p", "marsrag.pytest_plugin", "-p", "no:cacheprovider", "-rA", *args]
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=300)


def outcomes(output: str) -> dict[str, str]:
    """``loop_contract[TASK-CHECK]`` -> PASSED or FAILED, from pytest's short summary."""
    found = re.findall(r"^(PASSED|FAILED) \S*::(loop_contract\[[^\]]+\])", output, flags=re.MULTILINE)
    return {name: outcome for outcome, name in found}


def ids(tasks: list[str], checks: list[str]) -> set[str]:
    return {f"loop_contract[{task}-{check}]" for task in tasks for check in checks}


@pytest.fixture
def broken_config(tmp_path: Path) -> Path:
    """The sample config with ``recommend`` lacking the template, and a recorded diagnose answer without payoff."""
    config = tmp_path / "config"
    shutil.copytree(sample_config_dir(), config)
    tasks = yaml.safe_load((config / "tasks.yaml").read_text())
    tasks["recommend"]["expected_output"] = "A short recommendation in plain prose."
    (config / "tasks.yaml").write_text(yaml.safe_dump(tasks, sort_keys=False))
    answers = tmp_path / "answers"
    answers.mkdir()
    (answers / "diagnose.txt").write_text(
        json.dumps({"hook": "Slow.", "grip": "Cold.", "reinforce": "Seen.", "loop": "Why?"})
    )
    return tmp_path


def test_the_sample_passes_six_tests_per_narrative_task(tmp_path: Path) -> None:
    """On the shipped sample: 18 tests (3 narrative tasks x 6 checks), all passing; the home stays empty."""
    result = pytest_in(tmp_path, f"--loop-contract={sample_config_dir()}")
    assert result.returncode == 0, result.stdout + result.stderr
    assert outcomes(result.stdout) == dict.fromkeys(ids(SAMPLE_NARRATIVE, list(CHECKS)), "PASSED")
    assert "18 passed" in result.stdout
    assert list((tmp_path / "home").iterdir()) == []


def test_a_task_breaking_the_contract_fails_its_tests(broken_config: Path) -> None:
    """No template: all six of its tests fail naming the lint rule; a recorded answer without a field fails
    schema success (its repair answers alike); every other test passes."""
    result = pytest_in(broken_config, "--loop-contract=config", "--loop-contract-answers=answers")
    assert result.returncode == 1
    failed = ids(["recommend"], list(CHECKS)) | {"loop_contract[diagnose-schema_success]"}
    want = {name: "FAILED" if name in failed else "PASSED" for name in ids(SAMPLE_NARRATIVE, list(CHECKS))}
    assert outcomes(result.stdout) == want
    assert "task 'recommend' breaks the contract lint:" in result.stdout
    assert "LC002 expected_output lacks section label(s) HOOK, GRIP, PAYOFF, REINFORCE, LOOP" in result.stdout
    # Compared with its spacing collapsed: pytest wraps a long message where the path before it makes it long.
    assert (
        "task 'diagnose', check schema_success: the stored status and attempts (of the recorded answer): "
        "expected ('valid', ['valid']), got ('partial', ['partial', 'partial']) "
        "(last attempt's errors: payoff: missing)"
    ) in " ".join(result.stdout.split())
    assert "Traceback" not in result.stdout


def test_the_smoke_test_runs_each_task_against_the_named_model(tmp_path: Path) -> None:
    """--loop-contract-llm adds loop_contract[TASK-smoke]; the offline composer stands in for a real model."""
    result = pytest_in(
        tmp_path, f"--loop-contract={sample_config_dir()}", "--loop-contract-llm=composer", "-k", "smoke"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert outcomes(result.stdout) == dict.fromkeys(ids(SAMPLE_NARRATIVE, ["smoke"]), "PASSED")
    assert "diagnose smoke: attempts valid" in result.stdout


def test_without_the_option_the_plugin_adds_nothing_and_imports_nothing_heavy(tmp_path: Path) -> None:
    """Registered but not asked for: the user's tests alone run, and CrewAI is never imported."""
    (tmp_path / "test_mine.py").write_text(
        "import sys\n\n\ndef test_light():\n"
        "    assert 'crewai' not in sys.modules and 'marsrag.regression' not in sys.modules\n"
    )
    result = pytest_in(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout and "loop_contract" not in result.stdout


def test_a_folder_without_narrative_tasks_is_a_usage_error(tmp_path: Path) -> None:
    """One line naming the folder, pytest's usage exit code."""
    (tmp_path / "empty").mkdir()
    result = pytest_in(tmp_path, "--loop-contract=empty")
    assert result.returncode == 4
    assert "--loop-contract empty: no narrative task in empty/tasks.yaml" in result.stderr
