"""LoopOutput and validate_output on the spec's regression cases (spec section 6, tests 1-4) and more."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from marsrag.contract import LoopOutput, ValidationResult, validate_output
from tests.contract.samples import CLEAN_JSON, CONTENT, FIELDS


def codes(result: ValidationResult) -> dict[str | None, str]:
    return {issue.field: issue.code for issue in result.errors}


def test_schema_conformance_success() -> None:
    """Spec test 1: a complete answer validates, as a model and through the validator."""
    model = LoopOutput.model_validate(CONTENT)
    assert model.model_dump() == CONTENT
    result = validate_output(CLEAN_JSON)
    assert result.status == "valid" and result.completes and result.errors == ()
    assert result.model == model
    assert dict(result.loop_output) == CONTENT


@pytest.mark.parametrize("field", FIELDS)
def test_missing_field_fails(field: str) -> None:
    """Spec test 2: a missing field fails the schema; four passing fields make the output partial."""
    payload = {name: value for name, value in CONTENT.items() if name != field}
    with pytest.raises(ValidationError):
        LoopOutput.model_validate(payload)
    result = validate_output(payload)
    assert result.status == "partial"
    assert codes(result) == {field: "missing"}
    assert result.loop_output[field] is None
    assert not result.completes


@pytest.mark.parametrize("empty", ["", "   ", "\n\t "])
def test_empty_string_fails(empty: str) -> None:
    """Spec test 3: an empty (or blank after trim) field fails with code 'empty'."""
    with pytest.raises(ValidationError):
        LoopOutput.model_validate({**CONTENT, "payoff": empty})
    result = validate_output({**CONTENT, "payoff": empty})
    assert result.status == "partial"
    assert codes(result) == {"payoff": "empty"}


def test_over_length_field_fails() -> None:
    """Spec test 4: more than 800 characters after trimming fails with code 'too_long'."""
    with pytest.raises(ValidationError):
        LoopOutput.model_validate({**CONTENT, "grip": "x" * 801})
    result = validate_output({**CONTENT, "grip": "x" * 801})
    assert codes(result) == {"grip": "too_long"}
    assert "801" in result.errors[0].message


def test_length_counts_after_trim_and_values_are_stored_trimmed() -> None:
    """800 characters surrounded by whitespace is valid, and stored without the whitespace."""
    text = "y" * 398 + ". " + "y" * 399 + "."
    padded = "  " + text + "\n\n"
    model = LoopOutput.model_validate({**CONTENT, "grip": padded})
    assert model.grip == text and len(text) == 800
    result = validate_output({**CONTENT, "grip": padded})
    assert result.status == "valid" and result.loop_output["grip"] == text


@pytest.mark.parametrize("value", [42, 4.2, None, True, ["a"], {"text": "a"}])
def test_non_string_values_are_not_coerced(value: object) -> None:
    """A field whose value is not a string is 'not_string', never converted."""
    with pytest.raises(ValidationError):
        LoopOutput.model_validate({**CONTENT, "hook": value})
    result = validate_output({**CONTENT, "hook": value})
    assert codes(result) == {"hook": "not_string"}
    assert result.loop_output["hook"] is None


@pytest.mark.parametrize("value", ["string", "<hook>", "...", "TBD", "[your answer here]", "hook"])
def test_placeholders_are_not_content(value: str) -> None:
    """Placeholder values (an echoed example) fail in the model and in the validator alike."""
    with pytest.raises(ValidationError):
        LoopOutput.model_validate({**CONTENT, "loop": value})
    assert codes(validate_output({**CONTENT, "loop": value})) == {"loop": "placeholder"}


def test_three_passing_fields_is_partial_and_two_is_failed() -> None:
    """Status thresholds: at least 3 individually passing fields is partial, fewer is failed."""
    three = {**CONTENT, "hook": "", "grip": 7}
    two = {**three, "payoff": "x" * 900}
    assert validate_output(three).status == "partial"
    assert validate_output(two).status == "failed"
    assert validate_output(two).passing_fields == ("reinforce", "loop")


def test_status_does_not_depend_on_mode_but_completion_does() -> None:
    """hard completes only valid, soft valid or partial, none always; the status is the same in all."""
    partial = {name: value for name, value in CONTENT.items() if name != "grip"}
    failed = {"hook": CONTENT["hook"]}
    expected = {
        "hard": (True, False, False),
        "soft": (True, True, False),
        "none": (True, True, True),
    }
    for mode, completions in expected.items():
        results = [validate_output(raw, mode=mode) for raw in (CONTENT, partial, failed)]  # type: ignore[arg-type]
        assert [r.status for r in results] == ["valid", "partial", "failed"]
        assert tuple(r.completes for r in results) == completions


def test_unknown_mode_is_a_programming_error() -> None:
    """An unknown mode raises ValueError naming it."""
    with pytest.raises(ValueError, match="strict"):
        validate_output(CLEAN_JSON, mode="strict")  # type: ignore[arg-type]


def test_model_is_frozen_and_renders_back_to_itself() -> None:
    """LoopOutput is immutable, and its canonical rendering validates to the same fields."""
    model = LoopOutput.model_validate(CONTENT)
    with pytest.raises(ValidationError):
        model.hook = "changed"  # type: ignore[misc]
    assert validate_output(model.render()).model == model


def test_loop_output_view_is_read_only() -> None:
    """The normalized fields of a valid result cannot be changed behind the model's back."""
    result = validate_output(CLEAN_JSON)
    with pytest.raises(TypeError):
        result.loop_output["hook"] = "x"  # type: ignore[index]


def test_other_pydantic_models_and_loop_outputs_are_accepted() -> None:
    """Any pydantic model with the five fields validates through its dump; a LoopOutput directly."""

    class Draft(BaseModel):
        hook: str
        grip: str
        payoff: str
        reinforce: str
        loop: str
        confidence: float = 0.5

    result = validate_output(Draft(**CONTENT))
    assert result.status == "valid"
    assert [(w.code, w.message) for w in result.warnings] == [("unknown_key", "unknown key 'confidence' ignored")]
    assert validate_output(LoopOutput(**CONTENT)).status == "valid"


def test_to_dict_shape() -> None:
    """to_dict gives status, completes, errors, warnings and all five loop_output keys."""
    data = validate_output({"hook": CONTENT["hook"]}, mode="soft").to_dict()
    assert set(data) == {"status", "completes", "errors", "warnings", "loop_output"}
    assert list(data["loop_output"]) == list(FIELDS)
    assert data["errors"][0] == {"field": "grip", "code": "missing", "message": "grip is missing"}
