"""The limits of an ``experiment`` block: what its names and weights may be, checked once for lint and models.

Lint (LC111, :mod:`marsrag.tasks.experiment_rules`) reports each problem at its key; the models
(:class:`~marsrag.tasks.config.ExperimentConfig`, :class:`~marsrag.tasks.config.ArmConfig`) refuse the same
values with the same words, so a Python-defined config is held to them too. Plain Python: lint imports it.
"""

from __future__ import annotations

import re
import reprlib
from collections.abc import Mapping

#: The longest experiment or arm name. Both are stored on every run and in the rollups' primary key: a long
#: one made every run fail to store on PostgreSQL (a btree index row holds at most ~2.7 kB), and a name is
#: for people to read in a report, not a place for a description.
NAME_MAX = 64
#: An experiment or arm name: a lowercase letter, then letters, digits, ``_``, ``-`` or ``.``. What fits
#: unquoted in YAML, a URL, a Prometheus label value and a shell argument, and cannot be read as a flag.
NAME_PATTERN = re.compile(rf"[a-z][A-Za-z0-9_.-]{{0,{NAME_MAX - 1}}}")
#: The words for :data:`NAME_PATTERN` in a message.
NAME_RULE = f"a lowercase letter, then letters, digits, _, - or . (at most {NAME_MAX} characters)"

#: The range of an arm's weight. Weights are relative, and the usual ways of writing a split (1/1, 50/50,
#: 0.9/0.1, 9000/1000) all fall inside; the bounds keep every sum of weights finite and every share far from
#: float rounding (a weight of 1e308 summed to infinity, 1e-320 is subnormal: both broke the split and the
#: sample-ratio check).
WEIGHT_MIN = 0.001
WEIGHT_MAX = 1_000_000
#: How many times the largest weight may be the smallest. Past it an arm gets so few sessions that the report
#: could never have the sessions it plans for, and the sample-ratio check would test next to nothing: at this
#: ratio the smallest arm still gets one session in a thousand of a two-arm split.
WEIGHT_RATIO_MAX = 1000

#: The words for a weight's range in a message.
WEIGHT_RULE = f"a number from {WEIGHT_MIN:g} to {WEIGHT_MAX:,}"


_SHOWN = reprlib.Repr()
_SHOWN.maxstring = _SHOWN.maxother = 80


def shown(value: object) -> str:
    """``value`` as a message shows it: its repr, long text cut in the middle (a name may be 3,000 characters)."""
    return _SHOWN.repr(value)


def name_problem(name: object) -> str | None:
    """Why ``name`` cannot name an experiment or an arm (``must be ..., not ...``); None when it can."""
    if isinstance(name, str) and NAME_PATTERN.fullmatch(name):
        return None
    counted = f" ({len(name):,} characters)" if isinstance(name, str) and len(name) > NAME_MAX else ""
    return f"must be {NAME_RULE}, not {shown(name)}{counted}"


def weight_problem(weight: object) -> str | None:
    """Why ``weight`` cannot be an arm's weight (``must be ..., not ...``); None when it can."""
    # A boolean is an int to Python; "true" as a weight is a slip, not a share. An int is compared as it is
    # (a 400-digit one would overflow a float); nan compares false, inf is above the maximum.
    if isinstance(weight, int | float) and not isinstance(weight, bool) and WEIGHT_MIN <= weight <= WEIGHT_MAX:
        return None
    return f"must be {WEIGHT_RULE}, not {shown(weight)}"


def lightest_arm(weights: Mapping[str, float]) -> str:
    """The arm of the smallest weight (the first of equals): where a ratio problem is reported."""
    return min(weights, key=lambda arm: weights[arm])


def ratio_problem(weights: Mapping[str, float]) -> str | None:
    """Why arms of these weights (each within range) make no usable split; None when they do."""
    if len(weights) < 2:
        return None
    heaviest = max(weights, key=lambda arm: weights[arm])
    lightest = lightest_arm(weights)
    if weights[heaviest] <= WEIGHT_RATIO_MAX * weights[lightest]:
        return None
    return (
        f"arm {shown(heaviest)} (weight {weights[heaviest]:g}) weighs more than {WEIGHT_RATIO_MAX:,} times arm "
        f"{shown(lightest)} (weight {weights[lightest]:g}): an arm that light gets too few sessions to compare"
    )


__all__ = [
    "NAME_MAX",
    "NAME_PATTERN",
    "NAME_RULE",
    "WEIGHT_MAX",
    "WEIGHT_MIN",
    "WEIGHT_RATIO_MAX",
    "WEIGHT_RULE",
    "lightest_arm",
    "name_problem",
    "ratio_problem",
    "shown",
    "weight_problem",
]
