"""One flat JSON object broken the commonest way (no closing brace, a trailing comma, comments) takes a fast path.

The fast path must read exactly what the candidate pipeline reads: every property here compares the two.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from marsrag.contract import FIELDS, ValidationResult, _json_forms, validate_output
from marsrag.contract import _text as text_module
from marsrag.contract._json_forms import nearly_exact
from tests.contract.samples import CLEAN_JSON, CONTENT
from tests.contract.strategies import answers


@contextmanager
def pipeline_only() -> Iterator[None]:
    """Validation with the fast path switched off: the candidate pipeline reads every text."""
    with mock.patch.object(text_module, "_single_document", return_value=None):
        yield


def verdict(result: ValidationResult) -> dict[str, Any]:
    return {**result.to_dict(), "model": result.model}


def same_both_ways(text: str, cut: bool = False) -> ValidationResult:
    fast = validate_output(text, cut=cut)
    with pipeline_only():
        slow = validate_output(text, cut=cut)
    assert verdict(fast) == verdict(slow), text
    return fast


def codes(result: ValidationResult) -> dict[str | None, str]:
    return {issue.field: issue.code for issue in result.errors}


COMMENTED = CLEAN_JSON.replace(', "grip"', ',  // the diagnosis\n "grip"')


@pytest.mark.parametrize(
    "text",
    [
        CLEAN_JSON[:-1],
        CLEAN_JSON[:-1] + "\n",
        "  \n" + CLEAN_JSON[:-1],
        CLEAN_JSON[:-1] + ",",
        CLEAN_JSON[:-1] + ",}",
        CLEAN_JSON[:-1] + " ,\n}\n",
        COMMENTED,
        COMMENTED[:-1],
        CLEAN_JSON.replace(', "grip"', ', /* the diagnosis */ "grip"'),
        CLEAN_JSON[:-1] + " // end of answer",
    ],
)
def test_broken_the_common_way_is_valid_and_repaired(text: str) -> None:
    """A missing closing brace, a trailing comma or comments: valid, with the repaired note, as the pipeline says."""
    result = same_both_ways(text)
    assert result.status == "valid" and dict(result.loop_output) == CONTENT
    assert [note.code for note in result.warnings] == ["repaired_json"]


def test_the_common_breakage_is_read_without_the_repair_library() -> None:
    """The fast path reads it with the json module: the repair library is never called (nor imported)."""
    with mock.patch.object(_json_forms, "_repair_loads", side_effect=AssertionError("repair library called")):
        for text in (CLEAN_JSON[:-1], CLEAN_JSON[:-1] + ",}", COMMENTED):
            assert validate_output(text).ok


def test_a_url_in_a_value_is_not_a_comment() -> None:
    """``//`` inside a string is text: only comments outside strings are dropped."""
    content = {**CONTENT, "loop": "Should we read https://example.com/runbook // the cache section first?"}
    text = json.dumps(content)[:-1] + ", // ask the on-call\n"
    result = same_both_ways(text)
    assert result.status == "valid" and result.loop_output["loop"] == content["loop"]


def test_a_complete_final_string_without_its_brace_is_not_truncated() -> None:
    """The closing brace alone is missing: nothing was cut, every field stands."""
    result = same_both_ways(CLEAN_JSON[:-1])
    assert result.ok and not result.errors


def test_an_unterminated_final_string_is_truncated() -> None:
    """A value string open at the end was cut: the fast path does not apply, the field fails ``truncated``."""
    result = same_both_ways(CLEAN_JSON[:-20])
    assert codes(result) == {"loop": "truncated"} and result.status == "partial"


def test_the_providers_cut_leaves_the_last_field_unfinished() -> None:
    """With ``cut=True`` an object that never closed had its last field cut, complete string or not."""
    result = same_both_ways(CLEAN_JSON[:-1], cut=True)
    assert codes(result) == {"loop": "truncated"} and not result.ok


@pytest.mark.parametrize(
    "text",
    [
        CLEAN_JSON + " // done",  # the object before the comment is exact JSON
        CLEAN_JSON[:-1] + ', "meta": {"model": "x"}',  # a nested object
        '{"hook": "' + "\\ud83d\\ude00" + CLEAN_JSON[11:-1],  # an escaped surrogate pair
        CLEAN_JSON[:-1] + ', "score": NaN',
        CLEAN_JSON.replace("pre-warm", "pre\\/warm")[:-1],  # the repair library keeps this escape as written
        CLEAN_JSON.replace("pre-warm", "pre\\fwarm")[:-1],
        CLEAN_JSON[:-1] + "\nHope this helps!",
        "```json\n" + CLEAN_JSON[:-1] + "\n```",
        "Final Answer: " + CLEAN_JSON[:-1],
        json.dumps({**CONTENT, "loop": "string"})[:-1],  # valid JSON shape, a placeholder value
        json.dumps({"name": "LoopOutput", "arguments": CLEAN_JSON})[:-1],  # an envelope
    ],
)
def test_other_shapes_read_as_the_pipeline_reads_them(text: str) -> None:
    """Texts beside the fast path's (nested, fenced, marked, odd constants) get the pipeline's verdict."""
    same_both_ways(text)


@pytest.mark.parametrize(
    "span",
    [CLEAN_JSON, CLEAN_JSON[:-1] + ', "grip"', '{"hook": "a"} // c', '{"hook": "a" /* open'],
)
def test_nearly_exact_refuses_what_is_not_its_breakage(span: str) -> None:
    """Exact JSON, a dangling key, a comment after the object or an open comment: not this reading's."""
    assert nearly_exact(span) is None


scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40)
keys = st.sampled_from([*FIELDS, *(name.title() for name in FIELDS), *(name.upper() for name in FIELDS)])
flat_objects = st.dictionaries(keys | st.text(max_size=8), scalars | st.lists(scalars, max_size=3), max_size=7)
# Mostly answers (so the fast path reads them): the five fields in any case, any text, and extra keys.
field_texts = st.text(min_size=1, max_size=60) | st.sampled_from(
    ["a // b", "x /* y */", "\f \b /", '“q” \\ "r"', "é ☃ 😀"]
)
near_answers = st.tuples(
    st.fixed_dictionaries({name: st.sampled_from([name, name.title(), name.upper()]) for name in FIELDS}),
    st.fixed_dictionaries(dict.fromkeys(FIELDS, field_texts)),
    st.dictionaries(st.text(max_size=8), scalars, max_size=2),
).map(lambda parts: {**{parts[0][name]: parts[1][name] for name in FIELDS}, **parts[2]})
breakages = st.sampled_from(["no brace", "trailing comma", "both", "comment", "comment, no brace"])
comments = st.sampled_from([" // a note\n", " // a note: 'x' \"y\"\n", ' /* a "note" */ ', " /* x */"])
# Where the comment goes: after the opening brace, after the first value, after the comma that follows it.
places = st.sampled_from(["open", "value", "comma"])


def broken(value: dict[str, Any], breakage: str, ascii_only: bool, indent: bool, comment: str, place: str) -> str:
    """``value`` as JSON (on one line or indented) broken one way; a comment goes at ``place`` of its first member."""
    gap = "\n  " if indent else " "
    parts = ["{"]
    for number, (key, item) in enumerate(value.items()):
        parts += [",", gap] if number else [gap]
        parts.append(f"{json.dumps(key, ensure_ascii=ascii_only)}: {json.dumps(item, ensure_ascii=ascii_only)}")
    if breakage.startswith("comment"):
        at = {"open": 1, "value": 3, "comma": 4}[place]
        parts.insert(min(at, len(parts)), comment)
        return "".join(parts) if breakage == "comment, no brace" else "".join(parts) + "\n}"
    text = "".join(parts)
    return {"no brace": text, "trailing comma": text + ",\n}", "both": text + ","}[breakage]


@given(flat_objects | near_answers, breakages, st.booleans(), st.booleans(), comments, places)
def test_any_flat_object_broken_one_way_reads_as_the_pipeline_reads_it(
    value: dict[str, Any], breakage: str, ascii_only: bool, indent: int | None, comment: str, place: str
) -> None:
    """Any keys, any values: the fast path's verdict is the pipeline's, or it leaves the text to the pipeline."""
    same_both_ways(broken(value, breakage, ascii_only, indent, comment, place))


@given(answers, breakages, comments, st.sampled_from(["open", "comma"]), st.booleans())
def test_any_answer_broken_one_way_is_valid_both_ways(
    content: dict[str, str], breakage: str, comment: str, place: str, cut: bool
) -> None:
    """A valid answer broken the common way validates, fast or not; a provider's cut is judged the same."""
    result = same_both_ways(broken(content, breakage, False, False, comment, place), cut=cut)
    if not cut:
        assert result.ok and dict(result.loop_output) == content
