"""An attempt's LLM call line on its own: what was asked, of whom, and what it cost, unknown parts left out."""

from __future__ import annotations

from typing import Any

import pytest

from marsrag.state import AttemptRecord
from marsrag.views.viewmodel import attempt_call_line
from tests.store.records import CALL


def called(**call: Any) -> AttemptRecord:
    """A valid first attempt whose LLM call is ``call``."""
    return AttemptRecord(number=1, raw="raw", status="valid", **call)


def test_a_fully_known_call_is_one_line_in_a_fixed_order() -> None:
    """Model @ endpoint, mode used (modes refused), latency, prompt+completion tokens, finish reason."""
    line = attempt_call_line(called(**{**CALL, "structured_output_refused": ["json_schema"]}))
    assert line == "smollm2 @ 127.0.0.1:8088 · json_object (json_schema refused) · 2,950 ms · 412+96 tokens · stop"


def test_an_attempt_with_no_call_known_has_no_line() -> None:
    """Nothing known (an attempt stored before the calls were recorded): the empty string."""
    assert attempt_call_line(called()) == ""


@pytest.mark.parametrize(
    ("call", "line"),
    [
        ({"model": "gpt-4o-mini"}, "gpt-4o-mini"),
        ({"endpoint": "api.openai.com"}, "@ api.openai.com"),
        ({"model": "replay", "latency_ms": 0}, "replay · 0 ms"),
        ({"structured_output": "prompt"}, "prompt"),
        ({"structured_output_refused": ["json_schema", "grammar"]}, "(json_schema, grammar refused)"),
        (
            {"structured_output": "grammar", "structured_output_refused": ["json_schema"]},
            "grammar (json_schema refused)",
        ),
        ({"latency_ms": 1234567}, "1,234,567 ms"),
        ({"prompt_tokens": 1200, "completion_tokens": 0}, "1,200+0 tokens"),
        ({"prompt_tokens": 412}, "412 prompt tokens"),
        ({"completion_tokens": 96}, "96 completion tokens"),
        ({"model": "smollm2", "finish_reason": "length"}, "smollm2 · length"),
    ],
)
def test_unknown_parts_are_left_out(call: dict[str, Any], line: str) -> None:
    """Each part appears only when known, with its separators; zero is known, not unknown."""
    assert attempt_call_line(called(**call)) == line
