"""Fuzzing ``validate_output``: any input gives a well-formed, deterministic verdict, never an exception.

tests/contract/test_properties.py checks that plain text, bytes and JSON never raise; here the inputs are
hostile (lone surrogates, control and bidi characters, near-miss section labels, deep and huge structures,
arbitrary Python objects) and every result is checked for its invariants, in every mode.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import BaseModel

from marsrag.contract import FIELDS, LoopOutput, ValidationResult, validate_output
from marsrag.contract.result import MODES, completes, status_for
from marsrag.contract.rules import MAX_FIELD_CHARS, MAX_INPUT_BYTES, MAX_INPUT_CHARS
from tests.fuzz.conftest import fuzz

STATUSES = {"valid", "partial", "failed"}

# Every code point, lone surrogates included (st.characters() leaves category Cs out by default).
any_char = st.characters(exclude_categories=())
any_text = st.text(any_char, max_size=3000)
# Characters that look like nothing or like something else: zero-width, bidi, BOM, NEL, line separators.
tricky_char = st.sampled_from(
    "\u200b\u200c\u200d\u2060\ufeff\u202e\u202d\u2066\u2028\u2029\x85\x0b\x0c\x00\ufffd\ud800"
)


def check(raw: object) -> ValidationResult:
    """Validate ``raw`` in every mode and check the invariants every result must hold; the hard-mode result."""
    first = validate_output(raw, mode="hard")
    assert_well_formed(first)
    # Determinism: the same input gives the same verdict, and the mode never changes the status.
    assert validate_output(raw, mode="hard").to_dict() == first.to_dict()
    for mode in MODES:
        other = validate_output(raw, mode=mode)  # type: ignore[arg-type]
        assert other.status == first.status and other.errors == first.errors
        assert other.completes == completes(first.status, mode)  # type: ignore[arg-type]
    return first


def assert_well_formed(result: ValidationResult) -> None:
    """The documented shape: a known status matching the passing fields, five keys, errors iff not valid."""
    assert result.status in STATUSES
    assert set(result.loop_output) == set(FIELDS)
    assert (result.status == "valid") == (result.errors == ())
    assert not set(result.passing_fields) & set(result.failing_fields)
    assert result.status == status_for(len(result.passing_fields))
    for value in result.loop_output.values():
        assert value is None or (isinstance(value, str) and value == value.strip())
    if result.status == "valid":
        model = result.model
        assert model is not None and model.model_dump() == dict(result.loop_output)
        assert all(0 < len(value or "") <= MAX_FIELD_CHARS for value in result.loop_output.values())
    else:
        assert result.model is None
    # The verdict serializes (the CLI prints it as JSON; surrogates are escaped by json.dumps).
    json.dumps(result.to_dict())
    assert all(issue.code and issue.message for issue in (*result.errors, *result.warnings))


# -- text ---------------------------------------------------------------------------------------------------


@fuzz(400)
@given(any_text)
@example("\ud800")
@example("HOOK: \udfff\nGRIP: a.\nPAYOFF: b.\nREINFORCE: c.\nLOOP: d.")
@example('{"hook": "\ud800", "grip": "a", "payoff": "b", "reinforce": "c", "loop": "d"}')
@example('{"hook": "\\ud800", "grip": "a", "payoff": "b", "reinforce": "c", "loop": "d"}')
def test_any_text_with_surrogates_gets_a_well_formed_verdict(raw: str) -> None:
    """Any code points, lone surrogates included, give a well-formed verdict, the same each time."""
    check(raw)


label_names = st.one_of(
    st.sampled_from(FIELDS),
    st.sampled_from(FIELDS).map(str.upper),
    st.sampled_from(FIELDS).map(str.title),
    # Near misses: homoglyphs, fullwidth letters, plurals, split and accented names, prefixes and suffixes.
    st.sampled_from(["H\u041eOK", "GR\u0399P", "ＨＯＯＫ", "hooks", "Gripp", "pay off", "re-inforce", "lo\u0301op"]),
    st.sampled_from(["Loops", "loop_", "-hook", "hookGRIP", "PAYOFFS", "Re\u200binforce", "LOOP\ufeff", "XHOOK"]),
)
decorations = st.sampled_from(
    ["", "**", "## ", "- ", "1. ", "(2) ", "> ", "\t", "   ", "__", "• ", "\u200b", "#######"]
)
separators = st.sampled_from(
    [":", "：", " -", " —", "", " :", "::", ";", "=", "**:", ":**", " (short):", " (" + "x" * 50 + "):", "\n", ": \n"]
)
bodies = st.one_of(
    st.text(any_char, max_size=120),
    st.sampled_from(["", " ", "...", "TBD", "N/A", "<hook>", "</loop>", "{", '"hook": "x"', "x" * 801]),
    st.text(tricky_char, max_size=8),
)
line_breaks = st.sampled_from(["\n", "\r\n", "\r", "\n\n", " ", "\u2028", "\x85", "", ". "])
near_miss_sections = st.lists(
    st.tuples(decorations, label_names, separators, st.sampled_from([" ", "", "\t"]), bodies).map("".join),
    max_size=12,
).flatmap(lambda parts: line_breaks.map(lambda sep: sep.join(parts)))


@fuzz(400)
@given(near_miss_sections)
@example("H\u041eOK: a.\nGRIP: b.\nPAYOFF: c.\nREINFORCE: d.\nLOOP: e.")
@example("HOOK:\r\nGRIP:\rPAYOFF:\u2028REINFORCE:\x85LOOP:")
@example("HOOK (" + "x" * 50 + "): a.\nGRIP: b.\nPAYOFF: c.\nREINFORCE: d.\nLOOP: e.")
def test_near_miss_section_labels_get_a_well_formed_verdict(raw: str) -> None:
    """Labels that are almost right (homoglyphs, odd separators, line ends, decoration) never break validation."""
    check(raw)


@fuzz(300)
@given(near_miss_sections, st.sampled_from(["Final Answer:", "```json\n", "```\n", "<hook>", "Thought: x\n"]))
def test_near_miss_sections_after_crewai_markers(raw: str, marker: str) -> None:
    """The same near misses after a ``Final Answer:`` marker, inside a fence or after a tag."""
    check(marker + raw)


# Fragments of every form real models write: reasoning marks, leaked tokens, escapes, curly quotes, doubled
# braces, tables, HTML, printed models, YAML, translated labels, tool calls.
real_model_fragments = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "<think>",
                "</think>",
                "\n<think>\n",
                "[THINK]",
                "[/THINK]",
                "◁think▷",
                "Thinking...\n",
                "\n...done thinking.\n",
                "<|channel|>analysis<|message|>",
                "<|channel|>final<|message|>",
                "assistantfinal",
                "<|eot_id|>",
                "<|im_start|>assistant\n",
                "</s>",
                "[EOS]",
                "<｜end▁of▁sentence｜>",
                '\\"hook\\": \\"',
                "\\n",
                "\\_",
                "“hook”: “",
                "”",
                "{{",
                "}}",
                "| Hook | ",
                "|---|---|\n",
                "<li><b>Grip:</b> ",
                "</li>",
                "<h2>Loop</h2>",
                "hook='",
                'loop="',
                "LoopOutput(",
                "payoff: |\n  ",
                "```yaml\n",
                ". 2. GRIP: ",
                "GANCHO: ",
                "🪝 Hook: ",
                '{"name": "LoopOutput", "arguments": "',
                '{"reinforce": "x"}\n',
                '"loop": "',
                "\n",
                " ",
            ]
        ),
        st.text(any_char, max_size=12),
    ),
    max_size=30,
).map("".join)


@fuzz(400)
@given(real_model_fragments, st.booleans())
@example("<think>\n<think>", False)
@example('{\\"hook\\": \\"a\\\\', True)
@example("| Hook | a |\n| Hook | b |", True)
@example("<|channel|>analysis<|message|><|channel|>final", False)
def test_fragments_of_real_model_forms_get_a_well_formed_verdict(raw: str, cut: bool) -> None:
    """Reasoning marks, tokens, escapes, tables, HTML, printed models in any mix: a well-formed verdict, with or
    without the provider's cut."""
    check(raw)
    assert_well_formed(validate_output(raw, cut=cut))


@fuzz(200)
@given(st.integers(min_value=MAX_INPUT_CHARS - 3, max_value=MAX_INPUT_CHARS + 3), st.sampled_from(["x", "{", "\n"]))
def test_text_at_the_size_limit_is_refused_exactly_past_it(size: int, filler: str) -> None:
    """Text up to MAX_INPUT_CHARS is parsed; past it the verdict is failed with too_long, whatever the text."""
    valid = LoopOutput.model_validate({name: f"Short sentence on the {name}." for name in FIELDS}).render()
    raw = (valid + filler * size)[:size]
    result = check(raw)
    too_long = any(issue.field is None and issue.code == "too_long" for issue in result.errors)
    assert too_long == (size > MAX_INPUT_CHARS)


# -- bytes --------------------------------------------------------------------------------------------------


valid_json_bytes = json.dumps(dict.fromkeys(FIELDS, "A sentence.")).encode()


@fuzz(300)
@given(st.binary(max_size=64), st.integers(min_value=0, max_value=len(valid_json_bytes)))
@example(b"\xed\xa0\x80", 10)  # a UTF-8 encoded surrogate, which strict decoders refuse
@example(b"\xef\xbb\xbf", 0)  # a BOM in front
def test_invalid_utf8_spliced_into_json_bytes(junk: bytes, at: int) -> None:
    """Bytes that are JSON with arbitrary bytes (invalid UTF-8, NULs, BOMs) spliced in get a verdict."""
    check(valid_json_bytes[:at] + junk + valid_json_bytes[at:])


def test_bytes_past_the_limit_are_refused_without_decoding() -> None:
    """More than MAX_INPUT_BYTES bytes: failed with too_long, whatever they hold."""
    result = check(memoryview(b"\xff" * (MAX_INPUT_BYTES + 1)))
    assert result.errors[0].code == "too_long"


# -- JSON-like and arbitrary Python values ------------------------------------------------------------------


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),  # NaN and infinities included: they are not JSON, but a caller may pass them
    st.text(any_char, max_size=50),
    st.text(max_size=1000),
    st.binary(max_size=20),
)
field_keys = st.one_of(
    st.sampled_from(FIELDS),
    st.sampled_from(["HOOK", "Grip:", " payoff ", "re-inforce", "LOOP!", "\ufeffhook", "hook\x00", "h00k", "output"]),
    st.text(any_char, max_size=10),
)
hashable_keys = st.one_of(field_keys, st.integers(), st.none(), st.booleans(), st.tuples(st.integers()))
python_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.tuples(children, children),
        st.frozensets(st.integers(), max_size=3),
        st.dictionaries(hashable_keys, children, max_size=6),
    ),
    max_leaves=20,
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(any_char, max_size=60),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(field_keys, children, max_size=6),
    max_leaves=20,
)


@fuzz(400)
@given(python_values)
@example({1: "x", None: "y", (1,): "z", "hook": b"bytes"})
@example({"hook": float("nan"), "grip": float("inf")})
@example([dict.fromkeys(FIELDS, "Nested in a list.")])
def test_any_python_value_gets_a_well_formed_verdict(value: object) -> None:
    """Mappings with keys of any type, tuples, sets, bytes, NaN: a verdict, never an exception."""
    check(value)


@fuzz(400)
@given(json_values, st.sampled_from(["{}", "```json\n{}\n```", "Final Answer: {}", "prose {} prose", '"{}"']))
def test_any_json_value_as_text_in_any_wrapping(value: object, wrapping: str) -> None:
    """Any JSON value (surrogate-escaped strings included), bare, fenced, after a marker or double-encoded."""
    text = json.dumps(value)
    if wrapping == '"{}"':
        text = json.dumps(text)  # double encoding: a JSON string holding the JSON
    check(wrapping.replace("{}", text))
    check(value)


@fuzz(200)
@given(st.text(max_size=40), st.integers(min_value=1, max_value=MAX_FIELD_CHARS * 3))
def test_huge_and_unicode_field_values_in_a_mapping(word: str, size: int) -> None:
    """Field values of any length: valid up to MAX_FIELD_CHARS after trimming, too_long past it."""
    value = ("ü" + word) * (size // (len(word) + 1) + 1)
    value = value[:size]
    result = check(dict.fromkeys(FIELDS, value))
    trimmed = value.strip()
    if trimmed and len(trimmed) > MAX_FIELD_CHARS:
        assert {issue.code for issue in result.errors} == {"too_long"}


def nested_list(depth: int, leaf: object) -> object:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def nested_dict(depth: int, key: str, leaf: object) -> object:
    value = leaf
    for _ in range(depth):
        value = {key: value}
    return value


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(nested_list(100_000, "hook"), id="python-list-100k-deep"),
        pytest.param(nested_dict(100_000, "hook", "x"), id="python-dict-100k-deep"),
        pytest.param(nested_dict(100_000, "output", "x"), id="python-wrapper-100k-deep"),
        pytest.param("[" * 40_000 + "]" * 40_000, id="json-list-40k-deep"),
        pytest.param('{"hook":' * 10_000 + '"x"' + "}" * 10_000, id="json-dict-10k-deep"),
        pytest.param('{"hook": ' + "{" * 3_000, id="broken-json-for-repair"),
        pytest.param("{'hook': " + "(" * 3_000 + ")" * 3_000 + "}", id="python-literal-3k-deep"),
        pytest.param("<hook>" * 15_000 + "</hook>", id="unclosed-tags"),
        pytest.param("HOOK:\n" * 15_000, id="labels-only"),
        pytest.param(". Hook: x" * 10_000, id="inline-labels"),
        pytest.param("```\n" * 20_000, id="fences"),
        pytest.param("Final Answer: {" * 6_000, id="markers-and-braces"),
        pytest.param("x" * 5_000_000, id="5-MB-text"),
        pytest.param(b"\x00" * (MAX_INPUT_BYTES + 1), id="bytes-over-limit"),
    ],
)
def test_deep_and_huge_inputs_end_with_a_failed_verdict(raw: object) -> None:
    """Deep nesting and huge inputs end in a failed verdict (no RecursionError, no MemoryError)."""
    assert check(raw).status == "failed"


# -- objects a caller may hand in -----------------------------------------------------------------------------


class _TaskOutputLike:
    """Duck-typed like CrewAI's TaskOutput, with fields of any type."""

    def __init__(self, raw: Any, pydantic: Any, json_dict: Any) -> None:
        self.raw = raw
        self.pydantic = pydantic
        self.json_dict = json_dict


class _Other(BaseModel):
    hook: Any = None
    grip: Any = None


@fuzz(300)
@given(python_values | any_text, python_values, python_values)
def test_task_output_shaped_objects_with_any_fields(raw: Any, pydantic: Any, json_dict: Any) -> None:
    """A TaskOutput whose raw, pydantic and json_dict hold anything gets a verdict."""
    check(_TaskOutputLike(raw, pydantic, json_dict))


@fuzz(200)
@given(python_values, python_values)
def test_other_pydantic_models_get_a_verdict(hook: Any, grip: Any) -> None:
    """A pydantic model that is not LoopOutput is validated by its fields (never crashes on their types)."""
    check(_Other(hook=hook, grip=grip))


@pytest.mark.parametrize("raw", [object(), 3, 2.5, Ellipsis, {1, 2}, print, type, ValueError("x"), iter([1])])
def test_values_of_no_known_shape_are_failed(raw: object) -> None:
    """Objects with no text, JSON or mapping shape are failed as unparseable."""
    result = check(raw)
    assert result.status == "failed" and result.errors[0].code == "unparseable"


@fuzz(200)
@given(st.text(any_char, max_size=20).filter(lambda mode: mode not in MODES))
def test_an_unknown_mode_is_the_only_documented_raise(mode: str) -> None:
    """``mode`` outside hard, soft, none raises ValueError (a programming error), whatever the input."""
    with pytest.raises(ValueError, match="unknown loop_mode"):
        validate_output("HOOK: x", mode=mode)  # type: ignore[arg-type]
