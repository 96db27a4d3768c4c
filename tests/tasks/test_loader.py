"""Loading config folders into checked models; the default loop_mode policy."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
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


def test_a_duplicate_key_stops_loading_naming_both_positions(tmp_path: Path) -> None:
    """A workflow written twice is a load error with both places, not the last one silently taken."""
    folder = write(
        tmp_path / "config",
        agents=AGENTS,
        tasks=FACTS,
        workflows="w:\n  kind: internal\n  tasks: [facts]\nw:\n  kind: user_facing\n  tasks: [facts]\n",
    )
    with pytest.raises(
        ConfigError, match=r"workflows.yaml:4:1: LC107 key 'w' is written twice, at .*workflows.yaml:1:1"
    ):
        load_config(folder)


def test_a_config_without_agents_stops_loading(tmp_path: Path) -> None:
    """No agents.yaml: the task's agent is named as missing at load time."""
    folder = write(tmp_path / "config", tasks=FACTS, workflows="w:\n  kind: internal\n  tasks: [facts]\n")
    with pytest.raises(ConfigError, match=r"tasks.yaml:3:3: LC104 task 'facts' needs agent 'analyst', but .*"):
        load_config(folder)


def test_an_unfilled_placeholder_stops_loading(tmp_path: Path) -> None:
    """A {placeholder} other than {goal} in a description is a load error, {goal} is not."""
    workflows = "w:\n  kind: internal\n  tasks: [facts]\n"
    filled = write(tmp_path / "ok", agents=AGENTS, tasks=FACTS.replace("List facts.", "List facts of {goal}."))
    write(filled, workflows=workflows)
    assert load_config(filled).tasks["facts"].description == "List facts of {goal}."
    folder = write(tmp_path / "bad", agents=AGENTS, tasks=FACTS.replace("List facts.", "List {n} facts."))
    write(folder, workflows=workflows)
    with pytest.raises(ConfigError, match=r"tasks.yaml:2:16: LC108 task 'facts': description contains '\{n\}'"):
        load_config(folder)


def test_an_unknown_agent_tool_stops_loading_naming_the_key(tmp_path: Path) -> None:
    """tools: [knowledge_base] loads; a name that is no agent tool (a tools.yaml routing target) is a load error."""
    workflows = "w:\n  kind: internal\n  tasks: [facts]\n"
    good = write(tmp_path / "ok", agents=AGENTS + "  tools: [knowledge_base]\n", tasks=FACTS, workflows=workflows)
    assert load_config(good).agents["analyst"].tools == ["knowledge_base"]
    tools = "runbook_search:\n  description: Search the runbooks.\n"
    bad = write(
        tmp_path / "bad", agents=AGENTS + "  tools: [knowledge_base, runbook_search]\n", tasks=FACTS, tools=tools
    )
    write(bad, workflows=workflows)
    with pytest.raises(ConfigError) as raised:
        load_config(bad)
    assert str(raised.value) == (
        f"{bad / 'agents.yaml'}:4:3: LC110 agent 'analyst' names unknown tool(s) 'runbook_search': the agent tools "
        "are knowledge_base (the routing targets of tools.yaml are not agent tools)"
    )


def test_a_python_agent_config_with_an_unknown_tool_is_refused() -> None:
    """AgentConfig built in Python checks its tools as the YAML loader does."""
    from pydantic import ValidationError

    from marsrag.tasks import AgentConfig

    assert AgentConfig(name="a", role="r", goal="g", tools=["knowledge_base"]).tools == ["knowledge_base"]
    with pytest.raises(ValidationError, match="agent 'a' names unknown tool\\(s\\) 'web_search'"):
        AgentConfig(name="a", role="r", goal="g", tools=["web_search"])


def _sample_with(folder: Path, change: str) -> Path:
    shutil.copytree(sample_config_dir(), folder)
    if change == "no agents.yaml":
        (folder / "agents.yaml").unlink()
    elif change == "an unknown agent":
        tasks = folder / "tasks.yaml"
        tasks.write_text(tasks.read_text().replace("agent: analyst", "agent: detective"))
    elif change == "an unfilled placeholder":
        tasks = folder / "tasks.yaml"
        tasks.write_text(tasks.read_text().replace("Name the most likely cause", "Name the {audience} cause"))
    else:  # a workflow written twice: YAML would keep the second, a one-task chain
        (folder / "workflows.yaml").write_text(
            (folder / "workflows.yaml").read_text() + "\nsupport_answer:\n  tasks: [plan]\n"
        )
    return folder


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ("no agents.yaml", "LC104 task 'diagnose' needs agent 'analyst'"),
        ("an unknown agent", "LC104 task 'diagnose' names unknown agent 'detective'"),
        ("an unfilled placeholder", "LC108 task 'diagnose': description contains '{audience}'"),
        ("a duplicate workflow", "LC107 key 'support_answer' is written twice"),
    ],
)
def test_run_refuses_a_broken_config_before_storing_a_run(tmp_path: Path, change: str, needle: str) -> None:
    """marsrag run on such a config: one line naming the problem, exit 2, and no run in the store."""
    folder = _sample_with(tmp_path / "config", change)
    (tmp_path / "answers.jsonl").write_text('{"output": "unused"}\n')
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    env = {**os.environ, "NO_COLOR": "1"}
    args = [sys.executable, "-m", "marsrag", "run", "Checkout is slow", "--config", str(folder), "--db", db]
    run = subprocess.run(
        [*args, "--llm", f"replay:{tmp_path / 'answers.jsonl'}"], capture_output=True, text=True, env=env, check=False
    )
    assert run.returncode == 2, run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 and needle in run.stderr and "Traceback" not in run.stderr
    listed = subprocess.run(
        [sys.executable, "-m", "marsrag", "runs", "list", "--db", db, "--format", "json"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert json.loads(listed.stdout) == []


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
