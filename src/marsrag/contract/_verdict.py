"""Build a :class:`ValidationResult` from values found in an output: the field rules applied once, in one place."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from marsrag.contract._json_forms import Conflict, normalize_keys, typed_value
from marsrag.contract._keyed import strip_markup_runs
from marsrag.contract._tokens import may_have_tokens, strip_special_tokens
from marsrag.contract.issues import ContractIssue, second_answer_issue
from marsrag.contract.model import LoopOutput
from marsrag.contract.result import Mode, ValidationResult, status_for
from marsrag.contract.rules import cross_field_problems, text_problem
from marsrag.contract.template import FIELDS
from marsrag.contract.truncation import truncated_issue

_ORDER: Final[Mapping[str | None, int]] = MappingProxyType({name: index for index, name in enumerate(FIELDS)})
_NO_FIELDS: Final[Mapping[str, str | None]] = MappingProxyType(dict.fromkeys(FIELDS))


def from_keys(
    mapping: Mapping[str, Any],
    mode: Mode,
    *lead_notes: ContractIssue,
    truncated: str | None = None,
    from_text: bool = False,
) -> ValidationResult:
    """Validate a mapping whose keys may be in any case or unknown (those become warnings)."""
    values, notes = normalize_keys(mapping)
    return from_mapping(values, mode, (*lead_notes, *notes), truncated=truncated, from_text=from_text)


def from_mapping(
    values: Mapping[str, Any],
    mode: Mode,
    notes: tuple[ContractIssue, ...],
    *,
    truncated: str | None = None,
    from_text: bool = False,
) -> ValidationResult:
    """Validate exactly-named field values with the contract's field rules (the model's own validator).

    ``truncated`` names the field a cut left unfinished: it fails ``truncated`` and keeps what was written.
    ``from_text``: the values were read from a model's text, so leaked special tokens are removed from them
    (a mapping handed over as data is judged as it is, exactly as :class:`LoopOutput` would judge it).
    """
    loop_output: dict[str, str | None] = {}
    errors: list[ContractIssue] = []
    for name in FIELDS:
        value = values.get(name)
        if from_text and isinstance(value, str) and may_have_tokens(value):
            value = strip_markup_runs(strip_special_tokens(value))
        if name == truncated:
            # The field rules judge a whole value; an unfinished one has only this error.
            loop_output[name] = value.strip() if isinstance(value, str) else None
            errors.append(truncated_issue(name))
            continue
        if name not in values:
            loop_output[name] = None
            errors.append(ContractIssue(name, "missing", f"{name} is missing"))
            continue
        if isinstance(value, Conflict):
            loop_output[name] = None
            errors.append(second_answer_issue(name))
            continue
        if from_text and isinstance(value, dict):
            value = typed_value(value)
        if not isinstance(value, str):
            loop_output[name] = None
            kind = "null" if value is None else f"a {type(value).__name__}"
            errors.append(ContractIssue(name, "not_string", f"{name} is {kind}, not a string"))
            continue
        loop_output[name] = text = value.strip()
        problem = text_problem(text)
        if problem is not None:
            errors.append(ContractIssue(name, problem[0], f"{name} {problem[1]}"))
    # Since 1.4.0 and 1.5.0: a field repeating an earlier one, or a stub among sentences (among those that passed).
    failing = {error.field for error in errors}
    crossed = cross_field_problems({name: value for name, value in loop_output.items() if name not in failing})
    if crossed:
        errors += [ContractIssue(name, code, f"{name} {detail}") for name, (code, detail) in crossed.items()]
        errors.sort(key=lambda issue: _ORDER.get(issue.field, -1))
    # Read-only: a valid result builds its model from these values later, so they must not change.
    view = MappingProxyType(loop_output)
    if errors:
        return ValidationResult(status_for(len(FIELDS) - len(errors)), mode, view, errors=tuple(errors), notes=notes)
    return ValidationResult("valid", mode, view, notes=notes)


def from_model(model: LoopOutput, mode: Mode, *, json_source: str | None = None) -> ValidationResult:
    """The valid result of a model pydantic already validated."""
    # A read-only view of the model's own field dict: no copy on the hot path, no way to corrupt the model.
    return ValidationResult("valid", mode, MappingProxyType(model.__dict__), model=model, json_source=json_source)


def input_failure(mode: Mode, code: str, message: str) -> ValidationResult:
    """A ``failed`` result for the whole input: one error without a field, then every field missing."""
    errors = (ContractIssue(None, code, message),) + tuple(
        ContractIssue(name, "missing", f"{name} is missing") for name in FIELDS
    )
    return ValidationResult(status="failed", mode=mode, loop_output=_NO_FIELDS, errors=errors)


def has_truncated(result: ValidationResult) -> bool:
    """Whether a field of ``result`` was cut off before it ended."""
    return any(issue.code == "truncated" for issue in result.errors)


def with_issues(result: ValidationResult, issues: list[ContractIssue]) -> ValidationResult:
    """``result`` with ``issues`` replacing whatever else was said about their fields (same values, new status)."""
    if not issues:
        return result
    fields = {issue.field for issue in issues}
    kept = [error for error in result.errors if error.field not in fields]
    errors = tuple(sorted([*kept, *issues], key=lambda issue: _ORDER.get(issue.field, -1)))
    failing = {error.field for error in errors}
    status = status_for(len(FIELDS) - len(failing & set(FIELDS))) if None not in failing else "failed"
    notes = tuple(note for note in result.warnings if note.code != "sentences")  # sentences are counted again
    return ValidationResult(status, result.mode, result.loop_output, errors=errors, notes=notes)
