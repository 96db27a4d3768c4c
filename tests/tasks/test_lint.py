"""Contract lint: one small YAML per rule with the exact findings expected, plus the CLI contract."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from marsrag.tasks import RULES, lint_config, sample_config_dir
from marsrag.tasks.sources import config_set_from_factory, config_sets_from_paths

CASES = Path(__file__).with_name("lint_cases")

# file -> the exact (rule, line, task) findings, in order
EXPECTED: dict[str, list[tuple[str, int, str | None]]] = {
    "clean.yaml": [],
    "lc001_order.yaml": [("LC105", 7, "diagnose"), ("LC001", 9, "diagnose")],
    "lc002_missing_label.yaml": [("LC002", 7, "diagnose"), ("LC002", 12, "summarize")],
    "lc003_version.yaml": [("LC003", 2, "no_version"), ("LC003", 16, "not_semver"), ("LC003", 27, "newer_minor")],
    "lc004_output_pydantic.yaml": [("LC004", 5, "wrong_model"), ("LC004", 13, "no_model")],
    "lc100_collections.yaml": [("LC100", 17, None), ("LC100", 21, None), ("LC100", 25, None), ("LC100", 29, None)],
    "lc100_names.yaml": [("LC100", 5, None), ("LC100", 9, "t" * 200), ("LC100", 18, None)],
    "lc100_malformed.yaml": [
        ("LC100", 2, "no_agent"),
        ("LC100", 5, "broken"),
        ("LC100", 8, None),
        ("LC100", 9, None),
        ("LC100", 10, None),
        ("LC100", 11, None),
    ],
    "lc101_unknown_task.yaml": [("LC101", 9, None)],
    "lc102_narrative_in_none.yaml": [("LC102", 16, None)],
    "lc103_placeholder.yaml": [("LC103", 13, "diagnose")],
    "lc104_unknown_agent.yaml": [("LC104", 8, "diagnose")],
    "lc105_wording.yaml": [("LC105", 7, "diagnose")],
    "lc106_user_facing_none.yaml": [("LC106", 9, None)],
    "lc107_duplicate.yaml": [("LC107", 10, "facts"), ("LC107", 11, "facts"), ("LC107", 19, None)],
    "lc108_unfilled.yaml": [("LC108", 3, None), ("LC108", 7, "facts"), ("LC108", 21, "diagnose")],
    "lc109_manager.yaml": [
        ("LC109", 25, None),
        ("LC109", 30, None),
        ("LC109", 35, None),
        ("LC109", 40, None),
        ("LC100", 44, None),
        ("LC100", 45, None),
        ("LC109", 45, None),
    ],
    "lc110_unknown_tool.yaml": [("LC110", 9, None), ("LC110", 13, None)],
    "lc111_experiment.yaml": [
        ("LC111", 26, None),
        ("LC111", 30, None),
        ("LC111", 39, None),
        ("LC111", 46, None),
        ("LC111", 47, None),
        ("LC111", 49, None),
        ("LC111", 50, None),
        ("LC111", 51, None),
        ("LC111", 52, None),
        ("LC111", 53, None),
        ("LC111", 54, None),
        ("LC111", 64, None),
    ],
    "lc111_experiment_limits.yaml": [
        ("LC111", 34, None),
        ("LC111", 35, None),
        ("LC111", 36, None),
        ("LC111", 43, None),
        ("LC111", 44, None),
        ("LC111", 45, None),
        ("LC111", 46, None),
        ("LC111", 53, None),
        ("LC111", 54, None),
        ("LC111", 55, None),
        ("LC111", 63, None),
        ("LC111", 68, None),
        ("LC111", 70, None),
        ("LC111", 71, None),
        ("LC111", 72, None),
        ("LC111", 73, None),
        ("LC111", 74, None),
        ("LC111", 79, None),
    ],
    "lc112_none_arm.yaml": [("LC112", 17, None)],
}


def lint_file(name: str) -> list[tuple[str, int, str | None]]:
    (config,) = config_sets_from_paths([CASES / name])
    return [(finding.rule, finding.line, finding.task) for finding in lint_config(config)]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_rule_findings_are_exact(name: str) -> None:
    """Each case file yields exactly its findings: rule, line and task."""
    assert lint_file(name) == EXPECTED[name]


def test_every_rule_has_a_case_file() -> None:
    """No rule goes untested: each id appears in some case's expected findings."""
    tested = {rule for findings in EXPECTED.values() for rule, _, _ in findings}
    assert {rule.id for rule in RULES} <= tested


def test_spec_rules_are_errors() -> None:
    """LC001-LC004 are errors, as the spec's lint checks."""
    assert {rule.id: rule.severity for rule in RULES if rule.id <= "LC004"} == dict.fromkeys(
        ["LC001", "LC002", "LC003", "LC004"], "error"
    )


def test_columns_point_into_block_scalars() -> None:
    """A finding inside a | block points at the label or placeholder itself."""
    (config,) = config_sets_from_paths([CASES / "lc103_placeholder.yaml"])
    (finding,) = lint_config(config)
    assert (finding.line, finding.column) == (13, 17)


def test_shipped_sample_config_is_clean() -> None:
    """The sample config inside the package passes every rule."""
    (config,) = config_sets_from_paths([sample_config_dir()])
    assert lint_config(config) == []


def test_standard_file_is_linted_with_its_siblings(tmp_path: Path) -> None:
    """tasks.yaml named alone still sees agents.yaml beside it for the unknown-agent rule."""
    (tmp_path / "agents.yaml").write_text("analyst:\n  role: A\n  goal: B\n")
    (tmp_path / "tasks.yaml").write_text("facts:\n  description: D\n  agent: nobody\n  narrative: false\n")
    (config,) = config_sets_from_paths([tmp_path / "tasks.yaml"])
    assert [(f.rule, f.path.endswith("tasks.yaml")) for f in lint_config(config)] == [("LC104", True)]


def test_duplicate_keys_name_both_positions() -> None:
    """A key written twice is reported at the second, and the message gives file:line:col of both."""
    (config,) = config_sets_from_paths([CASES / "lc107_duplicate.yaml"])
    findings = lint_config(config)
    path = findings[0].path
    texts = [finding.to_text() for finding in findings]
    assert texts[0].startswith(f"{path}:10:5: LC107 key 'description' (in 'tasks.facts') is written twice")
    assert f"at {path}:7:5 and at {path}:10:5: YAML keeps only the last" in texts[0]
    assert f"at {path}:16:3 and at {path}:19:3" in texts[2]


def test_merge_keys_overridden_are_not_duplicates(tmp_path: Path) -> None:
    """A key that overrides one merged in with ``<<: *base`` is intended: no finding."""
    (tmp_path / "agents.yaml").write_text("base: &base\n  role: A\n  goal: B\nanalyst:\n  <<: *base\n  role: Analyst\n")
    (config,) = config_sets_from_paths([tmp_path / "agents.yaml"])
    assert lint_config(config) == []


def test_an_entry_defined_in_two_files_is_a_duplicate(tmp_path: Path) -> None:
    """The same task in tasks.yaml and in another file of the folder: LC107 at the second, naming both."""
    (tmp_path / "agents.yaml").write_text("analyst:\n  role: A\n  goal: B\n")
    (tmp_path / "tasks.yaml").write_text("facts:\n  description: D\n  agent: analyst\n  narrative: false\n")
    (tmp_path / "more.yaml").write_text(
        "tasks:\n  facts:\n    description: E\n    agent: analyst\n    narrative: false\n"
    )
    (config,) = config_sets_from_paths([tmp_path])
    (finding,) = lint_config(config)
    assert (finding.rule, finding.task, finding.path, finding.line) == (
        "LC107",
        "facts",
        str(tmp_path / "tasks.yaml"),
        1,
    )
    assert f"task 'facts' is defined twice, at {tmp_path / 'more.yaml'}:2:3 and at {tmp_path / 'tasks.yaml'}:1:1" in (
        finding.message
    )


def test_a_folder_without_agents_is_an_error_a_lone_tasks_file_is_not(tmp_path: Path) -> None:
    """A whole config without agents.yaml: LC104 for every task, agent: auto too; tasks.yaml linted alone: none."""
    (tmp_path / "tasks.yaml").write_text(
        "facts:\n  description: D\n  agent: analyst\n  narrative: false\n"
        "routed:\n  description: R\n  agent: auto\n  narrative: false\n"
    )
    (folder,) = config_sets_from_paths([tmp_path])
    findings = lint_config(folder)
    assert [(f.rule, f.task, f.line) for f in findings] == [("LC104", "facts", 3), ("LC104", "routed", 7)]
    assert "defines no agents (add agents.yaml)" in findings[0].message
    (alone,) = config_sets_from_paths([tmp_path / "tasks.yaml"])
    assert lint_config(alone) == []


def test_python_factory_configs_are_linted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--module configs are checked by the same rules and located at the factory."""
    (tmp_path / "my_tasks.py").write_text(
        textwrap.dedent("""
        from marsrag.tasks import TaskConfig

        def tasks():
            return [
                TaskConfig(name="good", description="d", agent="a"),
                TaskConfig(name="bad", description="d", agent="a", expected_output="HOOK: x\\nLOOP: y"),
            ]
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    config = config_set_from_factory("my_tasks:tasks")
    assert [(f.rule, f.task, f.line) for f in lint_config(config)] == [("LC002", "bad", 4)]


def run_lint(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(cwd or ""), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run(
        [sys.executable, "-m", "marsrag", "lint", *args], capture_output=True, cwd=cwd, env=env, check=False
    )
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def test_cli_text_format_and_exit_codes() -> None:
    """Text lines are path:line:col: RULE message; errors exit 1, warnings alone exit 0."""
    errors = run_lint(str(CASES / "lc104_unknown_agent.yaml"))
    assert errors.returncode == 1
    *findings, summary = errors.stdout.strip().splitlines()
    assert findings[-1].endswith("lc104_unknown_agent.yaml:8:5: LC104 task 'diagnose' names unknown agent 'detective'")
    assert summary.startswith("lint: ") and summary.endswith(": 2 tasks, 0 workflows: 1 error")
    warnings = run_lint(str(CASES / "lc103_placeholder.yaml"))
    assert warnings.returncode == 0 and ": LC103 " in warnings.stdout
    assert run_lint(str(CASES / "clean.yaml")).returncode == 0


def test_cli_json_format() -> None:
    """JSON is a list of objects with path, line, column, rule, task, severity, message."""
    proc = run_lint(str(CASES / "lc004_output_pydantic.yaml"), "--format", "json")
    findings = json.loads(proc.stdout)
    assert proc.returncode == 1
    assert [set(f) for f in findings] == [{"path", "line", "column", "rule", "task", "severity", "message"}] * 2
    assert [(f["rule"], f["line"], f["severity"]) for f in findings] == [("LC004", 5, "error"), ("LC004", 13, "error")]


@pytest.mark.parametrize(
    ("content", "needle"),
    [("tasks: [unclosed\n", "invalid YAML"), ("a: b\n\tc: d\n", "invalid YAML"), (None, "no such file")],
)
def test_cli_unreadable_or_invalid_yaml_exits_2(tmp_path: Path, content: str | None, needle: str) -> None:
    """Bad YAML or a missing file: one line naming the file, exit 2, no traceback."""
    path = tmp_path / "tasks.yaml"
    if content is not None:
        path.write_text(content)
    proc = run_lint(str(path))
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and needle in proc.stderr and str(path) in proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_defaults_to_config_folder_when_present(tmp_path: Path) -> None:
    """With no PATH, lint reads ./config."""
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "tasks.yaml").write_text("t:\n  description: d\n  agent: a\n")
    (tmp_path / "config" / "workflows.yaml").write_text("w:\n  tasks: [missing]\n")
    proc = run_lint(cwd=tmp_path)
    assert proc.returncode == 1 and "LC101" in proc.stdout and "config/workflows.yaml:2:3" in proc.stdout


def test_cli_module_option(tmp_path: Path) -> None:
    """--module lints a Python factory; a broken spec is a usage error."""
    (tmp_path / "factory_mod.py").write_text(
        "from marsrag.tasks import TaskConfig\n"
        "def make():\n    return [TaskConfig(name='t', description='d', agent='a', output_pydantic='Other')]\n"
    )
    proc = run_lint("--module", "factory_mod:make", cwd=tmp_path)
    assert proc.returncode == 1 and "factory_mod:make:2:1: LC004" in proc.stdout
    bad = run_lint("--module", "no_such_module:make", cwd=tmp_path)
    assert bad.returncode == 2 and "cannot import" in bad.stderr


def test_yaml_bombs_and_huge_files_are_refused(tmp_path: Path) -> None:
    """Alias bombs lint in linear time; files over the size limit are refused with exit 2."""
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(20)
    )
    (tmp_path / "bomb.yaml").write_text(bomb)
    assert run_lint(str(tmp_path / "bomb.yaml")).returncode in (0, 1)
    (tmp_path / "huge.yaml").write_text("x: " + "y" * 2_000_000 + "\n")
    proc = run_lint(str(tmp_path / "huge.yaml"))
    assert proc.returncode == 2 and "larger than" in proc.stderr


def test_a_narrative_task_may_not_set_what_the_contract_binding_sets(tmp_path: Path) -> None:
    """guardrail_max_retries on a narrative task is LC100 at its key (CrewAI would raise mid-run); machine-first
    tasks keep their CrewAI options."""
    (tmp_path / "agents.yaml").write_text("analyst:\n  role: A\n  goal: B\n")
    (tmp_path / "tasks.yaml").write_text(
        "diagnose:\n  description: D\n  agent: analyst\n  guardrail_max_retries: 0\n"
        "facts:\n  description: D\n  agent: analyst\n  narrative: false\n  guardrail_max_retries: 0\n"
    )
    (config,) = config_sets_from_paths([tmp_path / "tasks.yaml"])
    found = [(f.rule, f.line, f.task, f.message) for f in lint_config(config) if f.rule == "LC100"]
    assert found == [
        (
            "LC100",
            4,
            "diagnose",
            "guardrail_max_retries is set by the Loop Contract binding on a narrative task: remove it",
        )
    ]
