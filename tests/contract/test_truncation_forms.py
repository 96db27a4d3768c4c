"""Truncation in every new form: a value cut by the token limit fails ``truncated`` wherever it sits, the
fields before it stand on their own, and a missing closing brace after a complete last string is no cut."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from marsrag.contract import FIELDS, ValidationResult, validate_output
from tests.contract.samples import CLEAN_JSON, CONTENT, labelled

PRETTY = json.dumps(CONTENT, indent=2)
CURLY = "{" + ", ".join(f"“{k}”: “{v}”" for k, v in CONTENT.items()) + "}"
ESCAPED = json.dumps(CLEAN_JSON)[1:-1]
TOOL_CALL = json.dumps({"name": "LoopOutput", "arguments": CLEAN_JSON})
JSON_LINES = "\n".join(json.dumps({k: v}) for k, v in CONTENT.items())
BARE = ",\n".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in CONTENT.items())
MARKDOWN = CLEAN_JSON.replace("pre-warm", "pre\\-warm")
EXAMPLE = json.dumps({name: f"An example {name} sentence." for name in FIELDS})

FORMS = {
    "after a think block": "<think>Let me answer. HOOK: no.</think>\n" + CLEAN_JSON,
    "after an unclosed-then-closed think": "Thinking it over.\n</think>\n\n" + PRETTY,
    "after a leaked turn token": "<|im_start|>assistant\n" + CLEAN_JSON,
    "escaped quotes": ESCAPED,
    "tool call arguments": TOOL_CALL,
    "curly quotes": CURLY,
    "markdown escapes": MARKDOWN,
    "json lines": JSON_LINES,
    "bare pairs": BARE,
    "after a realistic example": EXAMPLE + "\n\n" + CLEAN_JSON,
    "in a fence after a placeholder fence": '```json\n{"hook": "string"}\n```\n```json\n' + PRETTY,
}


def codes(result: ValidationResult) -> dict[str | None, str]:
    return {issue.field: issue.code for issue in result.errors}


def cut_in_loop(raw: str) -> str:
    """``raw`` cut a few characters into the loop's value (the last field of every form here)."""
    return raw[: raw.rindex("Should we") + 12]


@pytest.mark.parametrize("raw", FORMS.values(), ids=FORMS.keys())
@pytest.mark.parametrize("cut", [False, True])
def test_a_loop_cut_mid_string_is_truncated_and_the_rest_stands(raw: str, cut: bool) -> None:
    """Four complete fields and a cut loop: partial, never valid, the loop kept for the operator."""
    assert validate_output(raw).status == "valid"
    result = validate_output(cut_in_loop(raw), cut=cut)
    assert result.status == "partial", result.errors
    assert codes(result) == {"loop": "truncated"}
    assert (result.loop_output["loop"] or "").startswith("Should we")


UNCLOSED = {
    "after a think block": "<think>Done.</think>\n" + CLEAN_JSON[:-1],
    "escaped quotes": ESCAPED[:-1],
    "curly quotes": CURLY[:-1],
    "markdown escapes": MARKDOWN[:-1],
    "bare pairs": BARE,
}


@pytest.mark.parametrize("raw", UNCLOSED.values(), ids=UNCLOSED.keys())
def test_a_missing_closing_brace_after_a_complete_string_is_no_cut(raw: str) -> None:
    """Only the brace missing: repaired and valid without the provider's cut; with it, the loop is distrusted."""
    result = validate_output(raw)
    assert result.status == "valid", result.errors
    assert dict(result.loop_output) == CONTENT
    assert validate_output(raw, cut=True).status != "valid"


def test_a_cut_answer_beats_an_earlier_complete_example() -> None:
    """The text ends inside its last candidate, so that one is the answer: an earlier example never validates it."""
    for cut in (False, True):
        result = validate_output(EXAMPLE + "\n\n" + cut_in_loop(CLEAN_JSON), cut=cut)
        assert codes(result) == {"loop": "truncated"}
        assert result.loop_output["hook"] == CONTENT["hook"]


def test_with_the_providers_cut_the_last_labelled_form_is_truncated() -> None:
    """Tables, YAML and HTML lists have no closing mark for their last section either."""
    table = "| Part | Text |\n|---|---|\n" + "\n".join(f"| {k} | {v} |" for k, v in CONTENT.items())
    html = "<ul>" + "".join(f"<li><b>{k}:</b> {v}</li>" for k, v in CONTENT.items()) + "</ul>"
    for raw in (table, html, labelled("**{T}:** {v}", "\n\n")):
        assert validate_output(raw).status == "valid"
        assert codes(validate_output(raw, cut=True)) == {"loop": "truncated"}, raw


CUT_FORMS = [
    "<think>Plan: HOOK: x.</think>\n" + CLEAN_JSON,
    ESCAPED,
    TOOL_CALL,
    CURLY,
    JSON_LINES,
    BARE,
    MARKDOWN,
]


@given(st.sampled_from(CUT_FORMS), st.data())
def test_no_proper_prefix_of_any_form_validates_with_the_providers_cut(raw: str, data: st.DataObject) -> None:
    """With the provider's cut, no proper prefix of an answer in any of these forms is valid."""
    length = data.draw(st.integers(min_value=1, max_value=len(raw) - 1))
    assert validate_output(raw[:length], cut=True).status != "valid"


@given(st.sampled_from(CUT_FORMS), st.integers(min_value=1, max_value=60))
def test_any_cut_inside_the_last_value_is_never_valid(raw: str, keep: int) -> None:
    """Wherever the loop's value is cut, in any form, the answer is not valid and the loop is truncated."""
    start = raw.rindex("Should we")
    keep = min(keep, len(CONTENT["loop"]) - 1)
    result = validate_output(raw[: start + keep])
    assert result.status != "valid" and codes(result).get("loop") == "truncated"
