"""Issue 40: a held-out corpus of formats the reader was never shown, read right and never falsely valid.

``data/heldout-formats.json`` holds 51 raw answers whose markup is taken from real model outputs pasted in public
GitHub threads (Ollama, LM Studio, llama.cpp, koboldcpp, text-generation-webui, Semantic Kernel, AutoGen,
LlamaIndex, LangChain, PydanticAI, Guardrails, Haystack, CrewAI) and from chat templates of families the catalog
did not list (EXAONE, InternLM's first chat models, Nemotron-4, StableLM, Aya, Falcon, Baichuan, ChatGLM), each
reworded into the five fields. It was written, and measured (42 of 51 read right, 8 falsely valid), before any
change was made for it; ``source`` names where each format was taken from.

A case is read right when a ``valid`` case gives exactly its five fields (white space collapsed) and an
``invalid`` case is anything but valid. A false valid is a valid verdict on an ``invalid`` case, or a valid one
whose fields differ: zero false valid outranks coverage.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from marsrag.contract import validate_output

CASES: list[dict[str, Any]] = json.loads(
    Path(__file__).with_name("data").joinpath("heldout-formats.json").read_text(encoding="utf-8")
)
#: Read right after the issue 40 fixes; the count may only grow.
READ_RIGHT = 48
#: The cases still not read right, each refused (never falsely valid). Their expected verdict is the first of
#: two answers written without any token between them, which the text cannot show to be the one meant; see the
#: report of issue 40.
NOT_READ_RIGHT = {
    "llama2_inst_then_second_answer",
    "alpaca_response_then_instruction",
    "falcon_user_continuation",
}


def collapse(text: str | None) -> str:
    return " ".join((text or "").split())


def verdicts() -> dict[str, str]:
    """``{case name: "right" | "false valid" | "refused"}``."""
    out = {}
    for case in CASES:
        result = validate_output(case["raw"])
        if result.status != "valid":
            out[case["name"]] = "right" if case["status"] != "valid" else "refused"
        elif case["status"] != "valid":
            out[case["name"]] = "false valid"
        else:
            same = all(collapse(result.loop_output[name]) == collapse(value) for name, value in case["fields"].items())
            out[case["name"]] = "right" if same else "false valid"
    return out


def test_the_corpus_is_the_measured_one() -> None:
    """51 cases, about 60% valid, each with a source and, when valid, its five fields."""
    assert len(CASES) == 51 and len({case["name"] for case in CASES}) == 51
    assert sum(case["status"] == "valid" for case in CASES) == 29
    for case in CASES:
        assert case["source"] and case["status"] in ("valid", "invalid")
        assert (case["fields"] is not None) == (case["status"] == "valid")


def test_no_held_out_case_is_falsely_valid() -> None:
    """Zero false valid: no invalid case passes, no valid one passes with other fields."""
    false_valid = sorted(name for name, verdict in verdicts().items() if verdict == "false valid")
    assert false_valid == []


def test_held_out_cases_read_right_do_not_regress() -> None:
    """At least the 48 of 51 read right after issue 40; the ones missed are named, so a new miss shows."""
    found = verdicts()
    missed = {name for name, verdict in found.items() if verdict != "right"}
    assert len(CASES) - len(missed) >= READ_RIGHT, sorted(missed)
    assert missed <= NOT_READ_RIGHT, sorted(missed - NOT_READ_RIGHT)
