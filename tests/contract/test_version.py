"""Contract versions: semver parsing and the compatibility policy (spec section 1)."""

from __future__ import annotations

import pytest

from marsrag.contract import (
    LOOP_CONTRACT_VERSION,
    Version,
    check_compatible,
    compatibility_problem,
    is_compatible,
    parse_version,
)
from marsrag.errors import ContractVersionError


def test_running_contract_is_1_5_0() -> None:
    """The running contract is 1.5.0: 1.4.0 plus a stub (one word that asks nothing, two that end no sentence)
    among sections that are sentences."""
    assert LOOP_CONTRACT_VERSION == "1.5.0"


def test_configs_declaring_1_0_0_or_1_1_0_run_on_1_2_0() -> None:
    """An older minor of the same major runs: configs written for 1.0.0 or 1.1.0 need no change."""
    assert compatibility_problem("1.0.0") is None and compatibility_problem("1.1.0") is None
    assert check_compatible("1.0.0") == Version(1, 0, 0)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1.0.0", Version(1, 0, 0)),
        ("2.13.7", Version(2, 13, 7)),
        (" 1.2.3 ", Version(1, 2, 3)),
        ("1.0.0-rc.1+build.5", Version(1, 0, 0, "rc.1")),
    ],
)
def test_parse_version(text: str, expected: Version) -> None:
    """Semantic versions parse; pre-release is kept, build metadata dropped."""
    assert parse_version(text) == expected


@pytest.mark.parametrize("text", ["1.0", "v1.0.0", "01.0.0", "1.0.0.0", "", "one", 1.0, None])
def test_malformed_versions_are_errors(text: object) -> None:
    """Anything but MAJOR.MINOR.PATCH is a ContractVersionError naming the value."""
    with pytest.raises(ContractVersionError, match="loop_contract_version"):
        parse_version(text)


@pytest.mark.parametrize(
    ("requested", "running"),
    [("1.0.0", "1.0.0"), ("1.0.5", "1.0.0"), ("1.0.0", "1.0.9"), ("1.0.0", "1.3.0"), ("1.2.0", "1.3.1")],
)
def test_same_major_and_no_newer_minor_is_compatible(requested: str, running: str) -> None:
    """Same major is compatible; patch differences never matter; older minors run on newer contracts."""
    assert is_compatible(requested, running)
    assert check_compatible(requested, running) == parse_version(requested)


def test_newer_minor_is_a_clear_error() -> None:
    """A config asking for a newer minor than the running contract says so and what to do."""
    problem = compatibility_problem("1.2.0", "1.0.0")
    assert problem is not None and "newer than the running contract 1.0.0" in problem and "upgrade" in problem
    with pytest.raises(ContractVersionError):
        check_compatible("1.2.0", "1.0.0")


@pytest.mark.parametrize(("requested", "running"), [("2.0.0", "1.0.0"), ("0.9.0", "1.0.0"), ("1.0.0", "2.0.0")])
def test_other_major_is_incompatible(requested: str, running: str) -> None:
    """Majors are never compatible, in either direction."""
    problem = compatibility_problem(requested, running)
    assert problem is not None and "major" in problem
