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
