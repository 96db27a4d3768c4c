"""The limits of an experiment block: lint and the models hold names and weights to the same rules, and a
config outside them is refused by every command in one line (exit 2)."""

from __future__ import annotations

import math
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from marsrag.tasks import sample_config_dir
from marsrag.tasks.config import ArmConfig, ExperimentConfig
from marsrag.tasks.experiment_limits import (
    NAME_MAX,
    WEIGHT_MAX,
    WEIGHT_MIN,
    WEIGHT_RATIO_MAX,
    name_problem,
    ratio_problem,
    weight_problem,
)
from marsrag.tasks.experiment_rules import experiment_problems
from tests.metrics.test_metrics_cli import marsrag

RULE = r"a lowercase letter, then letters, digits, _, - or . (at most 64 characters)"


def block(name: str, hard: str, soft: str) -> str:
    """An experiment block for the sample config's support_answer, arms ``hard`` and ``soft`` as given."""
    return (
        "  experiment:\n"
        f"    name: {name}\n"
        "    arms:\n"
        f"      hard: {{loop_mode: hard{hard}}}\n"
        f"      soft: {{loop_mode: soft{soft}}}\n"
    )


def sample_with(target: Path, experiment: str) -> Path:
    """A copy of the sample config whose support_answer declares ``experiment``."""
    shutil.copytree(sample_config_dir(), target)
    path = target / "workflows.yaml"
    anchor = "  tasks: [diagnose, recommend, plan]\n"
    text = path.read_text(encoding="utf-8")
    assert anchor in text
    path.write_text(text.replace(anchor, anchor + experiment, 1), encoding="utf-8")
    return target


OUT_OF_LIMITS = {
    "weight-1e308": (
        block("hard_vs_soft", ", weight: 1.0e+308", ", weight: 1.0e+308"),
        "arm 'hard' weight must be a number from 0.001 to 1,000,000, not 1e+308",
    ),
    "weight-1e-320": (
        block("hard_vs_soft", ", weight: 1.0e-320", ""),
        "arm 'hard' weight must be a number from 0.001 to 1,000,000, not 1e-320",
    ),
    "weight-nan": (block("hard_vs_soft", "", ", weight: .nan"), "arm 'soft' weight must be a number from"),
    "weight-ratio": (
        block("hard_vs_soft", ", weight: 1000000", ", weight: 1"),
        "weights: arm 'hard' (weight 1e+06) weighs more than 1,000 times arm 'soft' (weight 1)",
    ),
    "name-3000": (block("x" * 3000, "", ""), f"experiment name must be {RULE}, not 'xxx"),
    "name-spaces": (block("Hard vs Soft", "", ""), f"experiment name must be {RULE}, not 'Hard vs Soft'"),
    "arm-name": (
        block("hard_vs_soft", "", "").replace("soft: {", "'soft/2': {"),
        f"experiment arm name must be {RULE}, not 'soft/2'",
    ),
}


@pytest.mark.parametrize(("experiment", "needle"), OUT_OF_LIMITS.values(), ids=OUT_OF_LIMITS.keys())
@pytest.mark.parametrize("command", ["run", "experiment"])
def test_a_config_out_of_the_limits_is_refused_in_one_line(
    tmp_path: Path, experiment: str, needle: str, command: str
) -> None:
    """marsrag run and experiment report: exit 2, one short line with the file, line, LC111 and the limit; no
    traceback, no store created."""
    config = sample_with(tmp_path / "config", experiment)
    db = tmp_path / "runs.db"
    url = f"sqlite:///{db}"
    if command == "run":
        proc = marsrag("run", "goal", "--workflow", "support_answer", "--config", str(config), "--db", url)
    else:
        proc = marsrag("experiment", "report", "support_answer", "--config", str(config), "--db", url)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert "workflows.yaml:" in lines[0] and " LC111 workflow 'support_answer': experiment " in lines[0]
    assert needle in lines[0]
    assert len(lines[0]) < 500  # a 3,000-character name is shown cut
    assert not db.exists()


def test_lint_reports_each_limit_at_its_key(tmp_path: Path) -> None:
    """marsrag lint on the folder: one LC111 error per value out of its limits, exit 1."""
    experiment = block("Hard vs Soft", ", weight: 1.0e+308", ", weight: 0")
    proc = marsrag("lint", str(sample_with(tmp_path / "config", experiment)))
    assert proc.returncode == 1, proc.stderr
    found = [line.split(": LC111 ", 1)[1] for line in proc.stdout.splitlines() if ": LC111 " in line]
    where = "workflow 'support_answer': experiment"
    limit = "must be a number from 0.001 to 1,000,000"
    assert found == [
        f"{where} name must be {RULE}, not 'Hard vs Soft'",
        f"{where} arm 'hard' weight {limit}, not 1e+308",
        f"{where} arm 'soft' weight {limit}, not 0",
    ]


def test_the_limits_are_stated_and_their_edges_pass() -> None:
    """64 characters, 0.001 and 1,000,000, a ratio of exactly 1,000: inside; one step beyond: outside."""
    assert name_problem("a" * NAME_MAX) is None and name_problem("v1.hard-A_2") is None
    assert name_problem("a" * (NAME_MAX + 1)) == f"must be {RULE}, not '{'a' * 65}' (65 characters)"
    shown = name_problem("a" * 3000)  # a long name is shown cut, with its length
    assert shown is not None and "..." in shown and shown.endswith("a' (3,000 characters)") and len(shown) < 200
    for refused in ("", "Hard", "-soft", "1st", "two words", "a/b", "é", "a\n", "a\ud800"):
        assert name_problem(refused) == f"must be {RULE}, not {refused!r}", refused
    assert name_problem(7) == f"must be {RULE}, not 7"
    for weight in (WEIGHT_MIN, 1, 50.0, WEIGHT_MAX):
        assert weight_problem(weight) is None, weight
    for weight in (0, -1, 0.0009, 1_000_001, 10**400, 1e308, 1e-320, math.nan, math.inf, -math.inf, True, "50"):
        assert weight_problem(weight) is not None, weight
    assert ratio_problem({"a": 1000.0, "b": 1.0}) is None
    assert ratio_problem({"a": 1000.5, "b": 1.0, "c": 2.0}) == (
        "arm 'a' (weight 1000.5) weighs more than 1,000 times arm 'b' (weight 1): an arm that light gets too few "
        "sessions to compare"
    )
    assert WEIGHT_RATIO_MAX == 1000


def test_the_models_refuse_what_lint_refuses_in_its_words() -> None:
    """A Python-defined experiment out of the limits raises, with lint's message."""
    cases: list[tuple[dict[str, Any], str]] = [
        ({"name": "x" * 3000}, f"experiment name {name_problem('x' * 3000)}"),
        ({"arms": {"Hard": {"loop_mode": "hard"}, "soft": {"loop_mode": "soft"}}}, "experiment arm name must be"),
        ({"arms": {"hard": {"loop_mode": "hard", "weight": 1e308}, "soft": {"loop_mode": "soft"}}}, "not 1e+308"),
        (
            {"arms": {"hard": {"loop_mode": "hard", "weight": 2000}, "soft": {"loop_mode": "soft"}}},
            "weighs more than 1,000 times",
        ),
    ]
    for change, message in cases:
        data = {"name": "e", "arms": {"hard": {"loop_mode": "hard"}, "soft": {"loop_mode": "soft"}}, **change}
        with pytest.raises(ValidationError, match=re.escape(message)):
            ExperimentConfig.model_validate(data)


def _lint_accepts(name: str, arm: str, weight: Any) -> bool:
    data = {
        "experiment": {
            "name": name,
            "arms": {arm: {"loop_mode": "hard", "weight": weight}, "zz": {"loop_mode": "soft"}},
        }
    }
    return not list(experiment_problems("answer", data, None))


def _model_accepts(name: str, arm: str, weight: Any) -> bool:
    try:
        ExperimentConfig(
            name=name, arms={arm: ArmConfig(loop_mode="hard", weight=weight), "zz": ArmConfig(loop_mode="soft")}
        )
    except ValidationError:
        return False
    return True


NAMES = st.one_of(st.text(max_size=80), st.from_regex(r"[a-z][A-Za-z0-9_.-]{0,70}", fullmatch=True))
WEIGHTS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True),
    st.floats(min_value=0.0005, max_value=2000),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.sampled_from([WEIGHT_MIN, WEIGHT_MAX, 1000, 1001, 0.999, True, None, "1"]),
)


@given(name=NAMES, arm=NAMES, weight=WEIGHTS)
def test_lint_and_the_models_agree_on_every_name_and_weight(name: str, arm: str, weight: Any) -> None:
    """One source of truth: any name, arm name and weight is accepted by both or refused by both."""
    assert _lint_accepts(name, arm, weight) == _model_accepts(name, arm, weight)
