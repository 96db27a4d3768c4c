"""Runaway generation: a text ending in a repetition loop was cut at the token limit, so its last field fails
``truncated`` whatever the provider said; repeated characters that are no loop change nothing."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from marsrag.contract import validate_output
from marsrag.contract._runaway import MIN_REPEATS, ends_in_loop
from tests.contract.samples import CONTENT, labelled
from tests.contract.strategies import answers

LOOPS = {
    "periods": "Should I restart both nodes at once or" + "." * 300,
    "a word": "Should I restart" + " the" * 80,
    "a phrase": "Should I restart" + " both nodes, then" * 40,
    "a line": "Should I restart?\n" + "Restart now.\n" * 30,
}


@pytest.mark.parametrize("loop", LOOPS.values(), ids=LOOPS.keys())
def test_a_labelled_answer_ending_in_a_loop_is_truncated(loop: str) -> None:
    result = validate_output(labelled("{L}: {v}", content={**CONTENT, "loop": loop}))
    assert result.status == "partial"
    assert {issue.field: issue.code for issue in result.errors} == {"loop": "truncated"}


NOT_LOOPS = {
    "an ellipsis": "Should I restart both nodes…or wait...",
    "a closing rule": "Should I restart both nodes?\n\n" + "=" * 40,
    "a short run": "Should I restart both nodes?!?!?!",
    "a table of dashes": "Should I restart?\n\n| a | b |\n|---|---|",
}


@pytest.mark.parametrize("loop", NOT_LOOPS.values(), ids=NOT_LOOPS.keys())
def test_repeated_characters_that_are_no_loop_change_nothing(loop: str) -> None:
    result = validate_output(labelled("{L}: {v}", content={**CONTENT, "loop": loop}))
    assert result.status == "valid", result.errors


def test_a_closed_json_answer_is_never_taken_for_a_loop() -> None:
    """A loop inside a closed JSON string is not at the end of the text: the document closed, so it ended."""
    assert validate_output(json.dumps({**CONTENT, "loop": "Or shall we wait" + "." * 300})).status == "valid"


@given(answers, st.integers(min_value=1, max_value=12), st.integers(min_value=MIN_REPEATS, max_value=40))
def test_any_answer_with_a_loop_appended_is_never_valid(answer: dict[str, str], size: int, repeats: int) -> None:
    unit = ("abcdefghijkl"[:size]).replace(" ", "x")
    raw = labelled("{L}: {v}", content=answer) + " " + unit * repeats
    assert ends_in_loop(raw)
    assert validate_output(raw).status != "valid"


def test_a_loop_inside_the_string_or_call_the_answer_sat_in_is_truncated() -> None:
    loop = "Should I" + "\nShould I" * 30
    body = labelled("{L}: {v}", content={**CONTENT, "loop": loop})
    for raw in (f'Output [Text 0 Beam 0]: "{body}"', f"finish(message='{body}')"):
        assert validate_output(raw).status != "valid", raw
