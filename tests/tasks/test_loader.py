"""Loading config folders into checked models; the default loop_mode policy."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from marsrag.contract import EXPECTED_OUTPUT_TEMPLATE, LOOP_CONTRACT_VERSION
from marsrag.errors import ConfigError
from marsrag.tasks import TaskConfig, WorkflowConfig, default_config_dir, load_config, sample_config_dir


def write(folder: Path, **files: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / f"{name}.yaml").write_text(text)
    return folder


AGENTS = "analyst:\n  role: Analyst\n  goal: Find causes.\n"
FACTS = "facts:\n  description: List facts.\n  agent: analyst\n  narrative: false\n"


def test_sample_config_loads_with_its_workflows() -> None:
    """The shipped sample has a user-facing hard chain of three narrative tasks and an internal workflow."""
    project = load_config(sample_config_dir())
    assert project.workflow().name == "support_answer"
    assert project.workflow("support_answer").tasks == ["diagnose", "recommend", "plan"]
    assert project.workflow("support_answer").effective_loop_mode == "hard"
    assert project.workflow("fact_extraction").effective_loop_mode == "none"
    assert all(project.tasks[name].narrative for name in ("diagnose", "recommend", "plan"))


@pytest.mark.parametrize(
    ("kind", "mode", "effective"),
    [
        ("user_facing", None, "hard"),
        ("internal", None, "none"),
        ("internal", "soft", "soft"),
        ("user_facing", "soft", "soft"),
    ],
)
def test_default_loop_mode_policy(kind: str, mode: str | None, effective: str) -> None:
    """Spec section 7: user-facing defaults to hard, internal to none unless set."""
    workflow = WorkflowConfig(name="w", kind=kind, loop_mode=mode, tasks=["t"])  # type: ignore[arg-type]
    assert workflow.effective_loop_mode == effective


def test_python_narrative_tasks_get_the_contract_by_default() -> None:
    """A TaskConfig built in Python gets the canonical template, LoopOutput and the running version."""
    task = TaskConfig(name="t", description="d", agent="a")
    assert (task.expected_output, task.output_pydantic, task.loop_contract_version) == (
        EXPECTED_OUTPUT_TEMPLATE,
        "LoopOutput",
        LOOP_CONTRACT_VERSION,
    )
    assert TaskConfig(name="m", description="d", agent="a", narrative=False).output_pydantic is None


def test_lint_errors_stop_loading_with_file_line_and_key(tmp_path: Path) -> None:
    """An unknown agent is named with its file, line and column, and the count of further errors."""
    folder = write(
        tmp_path / "config",
        agents=AGENTS,
        tasks=FACTS.replace("agent: analyst", "agent: ghost"),
        workflows="w:\n  kind: internal\n  tasks: [facts, nope]\n",
    )
    with pytest.raises(ConfigError) as caught:
        load_config(folder)
    message = str(caught.value)
    assert "tasks.yaml:3:3: LC104 task 'facts' names unknown agent 'ghost'" in message
    assert "and 1 more: run marsrag lint" in message


def test_value_errors_name_the_key(tmp_path: Path) -> None:
    """A value the models reject (tools not a list) is reported with its file, line and key."""
    folder = write(
        tmp_path / "config",
        agents=AGENTS + "  tools: not-a-list\n",
        tasks=FACTS,
        workflows="w:\n  kind: internal\n  tasks: [facts]\n",
    )
    with pytest.raises(ConfigError, match=r"agents.yaml:4:3: agent 'analyst', key 'tools'"):
        load_config(folder)


def test_unknown_workflow_lists_the_known_ones() -> None:
    """Asking for a workflow that does not exist names the ones that do."""
    with pytest.raises(
        ConfigError, match="unknown workflow .nope. \\(known: change_review, fact_extraction, support_answer\\)"
    ):
        load_config(sample_config_dir()).workflow("nope")


def test_default_config_dir_prefers_local_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """./config wins when it exists; otherwise the packaged sample is used."""
    monkeypatch.chdir(tmp_path)
    assert default_config_dir() == sample_config_dir()
    (tmp_path / "config").mkdir()
    assert default_config_dir() == Path("config")


def test_not_a_folder_is_a_config_error(tmp_path: Path) -> None:
    """A path that is not a folder gives a clear ConfigError."""
    with pytest.raises(ConfigError, match="not a config folder"):
        load_config(tmp_path / "missing")


def test_sample_config_ships_inside_the_package() -> None:
    """The sample lives in the installed package, not only in the source tree."""
    assert (sample_config_dir() / "workflows.yaml").is_file()
    assert "site-packages" in str(sample_config_dir()) or os.path.join("src", "marsrag") in str(sample_config_dir())
