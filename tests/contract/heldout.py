"""Reading a held-out corpus of model outputs (``data/heldout-formats*.json``) and judging each case.

A case is read right when a ``valid`` case gives exactly its five fields (white space collapsed) and an
``invalid`` case is anything but valid. A false valid is a valid verdict on an ``invalid`` case, or a valid one
whose fields differ: zero false valid outranks coverage.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from marsrag.contract import validate_output

Verdict = Literal["right", "false valid", "refused"]


def load(name: str) -> list[dict[str, Any]]:
    """The cases of ``data/NAME``: ``name``, ``source``, ``raw``, ``status`` and, when valid, ``fields``."""
    cases: list[dict[str, Any]] = json.loads(Path(__file__).with_name("data").joinpath(name).read_text("utf-8"))
    return cases


def collapse(text: str | None) -> str:
    return " ".join((text or "").split())


def verdicts(cases: Sequence[dict[str, Any]]) -> dict[str, Verdict]:
    """``{case name: "right" | "false valid" | "refused"}``."""
    out: dict[str, Verdict] = {}
    for case in cases:
        result = validate_output(case["raw"])
        if result.status != "valid":
            out[case["name"]] = "right" if case["status"] != "valid" else "refused"
        elif case["status"] != "valid":
            out[case["name"]] = "false valid"
        else:
            same = all(collapse(result.loop_output[name]) == collapse(value) for name, value in case["fields"].items())
            out[case["name"]] = "right" if same else "false valid"
    return out


def assert_shape(cases: Sequence[dict[str, Any]], total: int, valid: int) -> None:
    """The corpus is the one measured: ``total`` cases, ``valid`` of them valid, each with a source and, when valid,
    its five non-empty fields."""
    assert len(cases) == total and len({case["name"] for case in cases}) == total
    assert sum(case["status"] == "valid" for case in cases) == valid
    for case in cases:
        assert case["source"] and case["status"] in ("valid", "invalid")
        assert (case["fields"] is not None) == (case["status"] == "valid")
        if case["fields"] is not None:
            assert set(case["fields"]) == {"hook", "grip", "payoff", "reinforce", "loop"}
            assert all(value.strip() for value in case["fields"].values())


def assert_no_regression(
    cases: Sequence[dict[str, Any]], read_right: int, false_valid: set[str], not_read_right: set[str]
) -> None:
    """At least ``read_right`` cases read right, falsely valid only among ``false_valid``, missed only among
    ``not_read_right``: a new miss shows by name."""
    found = verdicts(cases)
    falsely = {name for name, verdict in found.items() if verdict == "false valid"}
    assert falsely <= false_valid, sorted(falsely - false_valid)
    missed = {name for name, verdict in found.items() if verdict != "right"}
    assert len(cases) - len(missed) >= read_right, sorted(missed)
    assert missed <= not_read_right, sorted(missed - not_read_right)
