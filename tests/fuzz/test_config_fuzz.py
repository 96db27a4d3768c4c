"""Fuzzing the config loader and the contract lint: any YAML gives findings or a ConfigError, nothing else.

The targets are ``parse_yaml`` (one file's text), ``lint_config`` over a config folder (what ``marsrag lint``
runs) and ``load_config`` (what every run and the web server call). Inputs: arbitrary text and bytes, YAML token
soup, random structures, the shipped sample config with one value replaced, and YAML bombs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from marsrag.errors import ConfigError, InputError
from marsrag.tasks import RULES, Finding, ProjectConfig, lint_config, load_config, sample_config_dir
from marsrag.tasks._yaml import MAX_CONFIG_BYTES, YamlDoc, parse_yaml
from marsrag.tasks.sources import config_sets_from_paths
from tests.fuzz.conftest import fuzz

RULE_IDS = {rule.id for rule in RULES}
STANDARD_FILES = ("agents.yaml", "tasks.yaml", "workflows.yaml", "tools.yaml")
any_text = st.text(st.characters(exclude_categories=()), max_size=2000)


def lint_folder(folder: Path) -> list[Finding] | ConfigError:
    """The findings ``marsrag lint`` reports for a folder, or the ConfigError it stops with."""
    try:
        (config,) = config_sets_from_paths([folder])
    except ConfigError as error:
        return error
    return lint_config(config)


def check_folder(folder: Path) -> list[Finding] | ConfigError:
    """Lint and load a folder; check that each gives findings, a project or a ConfigError, and that they agree."""
    linted = lint_folder(folder)
    if isinstance(linted, list):
        for finding in linted:
            assert finding.rule in RULE_IDS and finding.severity in ("error", "warning")
            assert finding.line >= 1 and finding.column >= 1 and finding.message
            json.dumps(finding.to_dict())
    try:
        project = load_config(folder)
    except (ConfigError, InputError):
        return linted
    # The loader runs the lint's error rules: a folder it accepts has no error finding.
    assert isinstance(project, ProjectConfig)
    assert isinstance(linted, list) and not any(finding.severity == "error" for finding in linted)
    return linted


def write_folder(folder: Path, files: dict[str, str | bytes]) -> Path:
    """Replace the folder's content with ``files``."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for name, content in files.items():
        data = content if isinstance(content, bytes) else content.encode("utf-8", errors="surrogatepass")
        (folder / name).write_bytes(data)
    return folder


# -- one file's text -----------------------------------------------------------------------------------------


yaml_tokens = st.sampled_from(
    [
        "a", "tasks", "hook", ":", ": ", "- ", "? ", "[", "]", "{", "}", ",", "&x ", "*x", "<<: ", "!!python/object ",
        "!!binary ", "!!set ", "!!omap ", "!!timestamp ", "!!int ", "!!float ", "!!bool ", "!!str ", "!custom ",
        "%YAML 1.1\n", "%TAG ! tag:x,2000:\n", "---\n", "...\n", "|\n", ">-\n", "'", '"', "\\", "\t", "\n", "  ",
        "#", "~", ".inf", ".nan", "0x1F", "0o17", "1_000", "2001-13-01", "2001-12-14t21:59:43.10-05:00", "1e400",
        "9" * 5000, "\ufeff", "\x00", "\x85", "\u2028", "\ud800", "é",
    ]
)  # fmt: skip
yaml_soup = st.lists(yaml_tokens, max_size=60).map("".join)


@fuzz(500)
@given(any_text | yaml_soup)
@example("a: 2001-13-01")
@example("a: !!int abc")
@example("a: !!bool maybe")
@example("a: !!int " + "9" * 5000)
@example("[" * 990 + "]" * 990)
@example("a: !!python/object/apply:os.system [ls]")
def test_parse_yaml_gives_a_document_or_a_config_error(text: str) -> None:
    """Any text parses to a document or raises ConfigError naming the file; never another exception."""
    try:
        doc = parse_yaml(text, "fuzz.yaml")
    except ConfigError as error:
        assert str(error).startswith("fuzz.yaml")
    else:
        assert isinstance(doc, YamlDoc)


# -- a config folder -----------------------------------------------------------------------------------------


config_keys = st.sampled_from(
    [
        "description", "agent", "narrative", "expected_output", "output_pydantic", "loop_contract_version",
        "context", "tasks", "kind", "loop_mode", "role", "goal", "backstory", "tools", "llm", "name", "agents",
        "workflows",
    ]
)  # fmt: skip
scalar_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=40),
    st.sampled_from(
        [
            "LoopOutput", "1.0.0", "2.0.0", "1.9.0", "9" * 5000 + ".0.0", "hard", "none", "soft", "internal",
            "user_facing", "auto", "HOOK: x\nGRIP: y\nLOOP: z", "{goal}", "{{goal}}", "analyst", "diagnose",
        ]
    ),
)  # fmt: skip
keys = config_keys | st.text(max_size=12) | st.integers() | st.booleans() | st.none()
yaml_values = st.recursive(
    scalar_values,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=5),
    max_leaves=25,
)
file_names = st.sampled_from([*STANDARD_FILES, "extra.yml", "config.yaml", "Tasks.YAML"])


def dump(data: Any) -> str:
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False)


@fuzz(400)
@given(st.dictionaries(file_names, st.dictionaries(keys, yaml_values, max_size=4), min_size=1, max_size=4))
def test_random_config_structures_give_findings_or_a_config_error(tmp_path: Path, files: dict[str, Any]) -> None:
    """Folders of YAML files with random structures: lint finds, load refuses with ConfigError, or both accept."""
    check_folder(write_folder(tmp_path / "config", {name: dump(data) for name, data in files.items()}))


@fuzz(400)
@given(st.dictionaries(file_names, any_text | yaml_soup | st.binary(max_size=200), min_size=1, max_size=3))
def test_random_config_text_and_bytes_give_findings_or_a_config_error(tmp_path: Path, files: dict[str, Any]) -> None:
    """Folders of arbitrary text, YAML token soup and bytes (invalid UTF-8 included)."""
    check_folder(write_folder(tmp_path / "config", files))


SAMPLE: dict[str, dict[str, Any]] = {
    name: yaml.safe_load((sample_config_dir() / name).read_text(encoding="utf-8")) for name in STANDARD_FILES
}


@st.composite
def mutated_samples(draw: st.DrawFn) -> dict[str, str]:
    """The shipped sample config with one or two values, keys or entries replaced by arbitrary YAML."""
    files = json.loads(json.dumps(SAMPLE))
    for _ in range(draw(st.integers(min_value=1, max_value=2))):
        name = draw(st.sampled_from(STANDARD_FILES))
        entry = draw(st.sampled_from(sorted(files[name])))
        how = draw(st.sampled_from(["value", "new key", "entry"]))
        if how == "entry":
            files[name][entry] = draw(yaml_values)
        elif isinstance(files[name][entry], dict):
            existing = list(files[name][entry]) or ["description"]
            key = draw(st.sampled_from(existing)) if how == "value" else draw(keys)
            files[name][entry][key] = draw(yaml_values)
    return {name: dump(data) for name, data in files.items()}


@fuzz(400)
@given(mutated_samples())
def test_the_sample_config_with_values_replaced_gives_findings_or_loads(tmp_path: Path, files: dict[str, str]) -> None:
    """A real config with one value wrong in any way: findings, a ConfigError, or a config that loads."""
    check_folder(write_folder(tmp_path / "config", files))


def test_the_unmutated_sample_loads_without_findings(tmp_path: Path) -> None:
    """The baseline of the mutation fuzzing: the sample, dumped again, is clean."""
    findings = check_folder(write_folder(tmp_path / "config", {name: dump(data) for name, data in SAMPLE.items()}))
    assert findings == []


# -- YAML bombs ----------------------------------------------------------------------------------------------


def billion_laughs(levels: int = 10, width: int = 9) -> str:
    """Anchors each listing the previous one ``width`` times: ``width ** levels`` strings once expanded."""
    lines = ["_lol0: &lol0 [" + ", ".join(["lol"] * width) + "]"]
    lines += [f"_lol{i}: &lol{i} [" + ", ".join([f"*lol{i - 1}"] * width) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def laughs_in(key: str) -> str:
    """A task whose ``key`` is the billion-laughs value (the anchors live in an entry of their own)."""
    return billion_laughs() + f"t:\n  description: d\n  agent: a\n  {key}: *lol9\n"


def workflow_laughs_in(key: str) -> str:
    return billion_laughs() + f"w:\n  tasks: [t]\n  {key}: *lol9\n"


BOMBS: dict[str, tuple[str, str | bytes]] = {
    "laughs-top-level": ("tasks.yaml", billion_laughs()),
    "laughs-as-output_pydantic": ("tasks.yaml", laughs_in("output_pydantic")),
    "laughs-as-loop_contract_version": ("tasks.yaml", laughs_in("loop_contract_version")),
    "laughs-as-expected_output": ("tasks.yaml", laughs_in("expected_output")),
    "laughs-as-narrative": ("tasks.yaml", laughs_in("narrative")),
    "laughs-as-context": ("tasks.yaml", laughs_in("context")),
    "laughs-as-workflow-kind": ("workflows.yaml", workflow_laughs_in("kind")),
    "laughs-as-workflow-loop_mode": ("workflows.yaml", workflow_laughs_in("loop_mode")),
    "laughs-as-workflow-tasks": ("workflows.yaml", billion_laughs() + "w:\n  tasks: *lol9\n"),
    "laughs-as-an-entry": ("tasks.yaml", billion_laughs() + "t: *lol9\n"),
    "laughs-as-a-key": ("tasks.yaml", billion_laughs() + "? *lol9\n: x\n"),
    "flow-sequences-100k-deep": ("tasks.yaml", "[" * 100_000 + "]" * 100_000),
    "flow-mappings-100k-deep": ("tasks.yaml", "{a: " * 100_000 + "}" * 100_000),
    "block-mappings-5k-deep": ("tasks.yaml", "".join(" " * i + "a:\n" for i in range(5_000))),
    "flow-sequences-990-deep-as-a-value": ("tasks.yaml", "t:\n  context: " + "[" * 990 + "]" * 990 + "\n"),
    "flow-sequences-990-deep-as-workflow-tasks": ("workflows.yaml", "w:\n  tasks: " + "[" * 990 + "]" * 990 + "\n"),
    "3-MB-file": ("tasks.yaml", "t:\n  description: " + "x" * 3_000_000 + "\n"),
    "just-under-1-MB-scalar": ("tasks.yaml", "t:\n  expected_output: " + "HOOK " * (MAX_CONFIG_BYTES // 5 - 10) + "\n"),
    "100k-keys": ("tasks.yaml", "".join(f"t{i}: {{}}\n" for i in range(100_000))),
    "impossible-date": ("tasks.yaml", "t:\n  description: 2001-13-01\n"),
    "5000-digit-integer": ("tasks.yaml", "t:\n  description: !!int " + "9" * 5000 + "\n"),
    "5000-digit-version": ("tasks.yaml", "t:\n  loop_contract_version: " + "9" * 5000 + ".0.0\n"),
    "utf-16-file": ("tasks.yaml", "t:\n  description: d\n".encode("utf-16")),
    "mixed-type-keys-in-a-workflow": ("workflows.yaml", "w:\n  tasks: [t]\n  1: x\n  b: y\n  null: z\n  2.5: w\n"),
    "unhashable-tasks-in-a-none-workflow": ("workflows.yaml", "w:\n  loop_mode: none\n  tasks: [[t], {a: 1}]\n"),
    "a-list-as-output_pydantic": ("tasks.yaml", "t:\n  description: d\n  agent: a\n  output_pydantic: [LoopOutput]\n"),
}


@pytest.mark.parametrize(("name", "content"), BOMBS.values(), ids=BOMBS.keys())
def test_yaml_bombs_end_with_bounded_findings_or_a_config_error(tmp_path: Path, name: str, content: str) -> None:
    """Each bomb ends with findings whose messages stay short, or a one-line ConfigError naming the file."""
    folder = write_folder(tmp_path / "config", {name: content})
    result = check_folder(folder)
    if isinstance(result, ConfigError):
        assert name in str(result) and "\n" not in str(result) and len(str(result)) < 500
    else:
        assert result and all(len(finding.message) < 1000 for finding in result)


@pytest.mark.parametrize(
    ("bomb", "code", "needle"),
    [
        ("laughs-as-loop_contract_version", 1, "LC003"),
        ("flow-sequences-100k-deep", 2, "invalid YAML"),
        ("3-MB-file", 2, "larger than 1,048,576 bytes"),
        ("impossible-date", 2, "a value cannot be read"),
    ],
)
def test_marsrag_lint_on_a_bomb_prints_findings_or_one_error_line(
    tmp_path: Path, bomb: str, code: int, needle: str
) -> None:
    """The real CLI: exit 1 with findings, or exit 2 with one error line on stderr; never a traceback."""
    name, content = BOMBS[bomb]
    folder = write_folder(tmp_path / "config", {name: content})
    proc = subprocess.run(
        [sys.executable, "-m", "marsrag", "lint", str(folder)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert proc.returncode == code, proc.stderr
    assert needle in (proc.stdout if code == 1 else proc.stderr)
    assert "Traceback" not in proc.stderr
    if code == 2:
        assert proc.stderr.count("\n") == 1 and proc.stdout == ""
