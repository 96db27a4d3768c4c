"""Contract versions: semver parsing and the compatibility policy of spec section 1.

Policy: the same major version is compatible; a config asking for a newer minor version than the running
contract is an error (it may rely on additions this MarsRAG lacks); patch differences never matter.
"""

from __future__ import annotations

import re
import reprlib
from typing import Final, NamedTuple

from marsrag.errors import ContractVersionError

#: The version of the Loop Contract this package implements.
LOOP_CONTRACT_VERSION: Final = "1.5.0"

_SEMVER = re.compile(
    r"(?P<major>0|[1-9]\d*)\.(?P<minor>0|[1-9]\d*)\.(?P<patch>0|[1-9]\d*)"
    r"(?:-(?P<pre>[0-9A-Za-z.-]+))?(?:\+(?P<build>[0-9A-Za-z.-]+))?"
)

# Values quoted in messages are shown bounded: a config value may be a huge string or a deeply shared structure.
_SHOWN = reprlib.Repr()
_SHOWN.maxstring = _SHOWN.maxother = 80
_SHOWN.maxlevel = 2


class Version(NamedTuple):
    """A parsed semantic version; pre-release and build metadata are kept as text."""

    major: int
    minor: int
    patch: int
    prerelease: str = ""

    def __str__(self) -> str:
        core = f"{self.major}.{self.minor}.{self.patch}"
        return f"{core}-{self.prerelease}" if self.prerelease else core


def parse_version(text: object) -> Version:
    """Parse ``MAJOR.MINOR.PATCH`` (optionally with ``-pre`` and ``+build``).

    Raises:
        ContractVersionError: the value is not a semantic version string.
    """
    if not isinstance(text, str):
        raise ContractVersionError(f"loop_contract_version must be a string like '1.0.0', got {_SHOWN.repr(text)}")
    match = _SEMVER.fullmatch(text.strip())
    if match is None:
        raise ContractVersionError(f"loop_contract_version {_SHOWN.repr(text)} is not a semantic version like '1.0.0'")
    try:
        return Version(int(match["major"]), int(match["minor"]), int(match["patch"]), match["pre"] or "")
    except ValueError:
        # int() refuses more digits than sys.get_int_max_str_digits() (4,300 by default).
        raise ContractVersionError(f"loop_contract_version {_SHOWN.repr(text)} has too many digits") from None


def compatibility_problem(requested: object, running: str = LOOP_CONTRACT_VERSION) -> str | None:
    """Explain why a config's ``loop_contract_version`` cannot run here; None when it can."""
    try:
        wanted = parse_version(requested)
    except ContractVersionError as error:
        return str(error)
    have = parse_version(running)
    if wanted.major != have.major:
        return (
            f"loop_contract_version {wanted} has major version {wanted.major}, but this MarsRAG implements "
            f"contract {have} (major {have.major}); majors are never compatible"
        )
    if wanted.minor > have.minor:
        return (
            f"loop_contract_version {wanted} needs contract {wanted.major}.{wanted.minor}, newer than the "
            f"running contract {have}; upgrade marsrag or lower the version"
        )
    return None


def check_compatible(requested: object, running: str = LOOP_CONTRACT_VERSION) -> Version:
    """Return the parsed version when it may run under ``running``.

    Raises:
        ContractVersionError: malformed, another major version, or a newer minor version.
    """
    problem = compatibility_problem(requested, running)
    if problem is not None:
        raise ContractVersionError(problem)
    return parse_version(requested)


def is_compatible(requested: object, running: str = LOOP_CONTRACT_VERSION) -> bool:
    """Whether a ``loop_contract_version`` may run under ``running`` (see :func:`check_compatible`)."""
    return compatibility_problem(requested, running) is None
