"""``validate_output``: the contract validation interface of spec section 8.

Input: a raw task output in any shape CrewAI or a model may produce. Output: a :class:`ValidationResult`
with the status, the normalized fields and the errors. No LLM is ever called: every well-formed answer is
recovered by parsing, and nothing is invented when the answer is not there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from pydantic import BaseModel, ValidationError

from marsrag.contract._json_forms import (
    decoded_objects,
    json_spans,
    loads,
    normalize_keys,
    repair,
    repair_span,
    unwrap,
)
from marsrag.contract._sections import find_sections
from marsrag.contract.model import LoopOutput
from marsrag.contract.result import MODES, ContractIssue, Mode, ValidationResult, status_for
from marsrag.contract.rules import MAX_FIELD_CHARS, MAX_INPUT_BYTES, MAX_INPUT_CHARS
from marsrag.contract.template import FIELDS

_NON_SPACE: Final = re.compile(r"\S")
_FINAL_ANSWER_MARKERS: Final = ("Final Answer:", "final answer:", "FINAL ANSWER:", "Final answer:")
_NO_FIELDS: Final[Mapping[str, str | None]] = dict.fromkeys(FIELDS)


def validate_output(raw: object, mode: Mode = "hard") -> ValidationResult:
    """Validate and normalize a raw task output against the Loop Contract.

    Args:
        raw: ``str``, ``bytes``, a mapping, a :class:`LoopOutput` (or any pydantic model with the five
            fields), or a CrewAI ``TaskOutput`` (its ``pydantic``/``json_dict`` when set, else ``raw``).
        mode: ``hard``, ``soft`` or ``none``; it decides :attr:`ValidationResult.completes`, never the status.

    Returns:
        The verdict. Bad input never raises: it yields a ``failed`` result whose errors say why.

    Raises:
        ValueError: ``mode`` is not one of hard, soft, none (a programming error, not bad input).
    """
    if mode not in MODES:
        raise ValueError(f"unknown loop_mode {mode!r}: use hard, soft or none")
    if isinstance(raw, str):
        return _from_text(raw, mode)
    if isinstance(raw, bytes | bytearray | memoryview):
        data = bytes(raw)
        if len(data) > MAX_INPUT_BYTES:
            return _input_failure(mode, "too_long", f"the output has more than {MAX_INPUT_BYTES:,} bytes")
        return _from_text(data.decode("utf-8-sig", errors="replace"), mode)
    if _is_task_output(raw):
        return _from_task_output(raw, mode)
    if isinstance(raw, BaseModel):
        return validate_output(raw.model_dump(), mode)
    if isinstance(raw, Mapping):
        mapping = unwrap(raw)
        if mapping is None:
            return _input_failure(mode, "unparseable", "the mapping has none of the contract's keys")
        return _from_keys(mapping, mode)
    kind = "no output" if raw is None else f"a {type(raw).__name__}"
    return _input_failure(mode, "unparseable", f"got {kind}, not text, JSON or a mapping")


def _is_task_output(value: object) -> bool:
    # Duck-typed so validation never imports CrewAI: a TaskOutput has raw, pydantic and json_dict.
    return hasattr(value, "raw") and hasattr(value, "pydantic") and hasattr(value, "json_dict")


def _from_task_output(task_output: Any, mode: Mode) -> ValidationResult:
    # CrewAI leaves .pydantic and .json_dict None on a guardrail's first attempt: fall back to .raw.
    structured = getattr(task_output, "pydantic", None)
    if isinstance(structured, BaseModel):
        return validate_output(structured, mode)
    json_dict = getattr(task_output, "json_dict", None)
    if isinstance(json_dict, Mapping) and unwrap(json_dict) is not None:
        return validate_output(json_dict, mode)
    text = getattr(task_output, "raw", None)
    return validate_output(text if isinstance(text, str | bytes) else None, mode)


def _from_text(text: str, mode: Mode) -> ValidationResult:
    if len(text) > MAX_INPUT_CHARS:
        return _input_failure(mode, "too_long", f"the output has more than {MAX_INPUT_CHARS:,} characters")
    if text[:1] == "\ufeff":
        text = text[1:]
    if text[:1] == "{":
        first = 0
    else:
        match = _NON_SPACE.search(text)
        if match is None:
            return _input_failure(mode, "empty", "the output is empty")
        first = match.start()
    best: ValidationResult | None = None
    repair_tried = False
    if text[first] == "{":
        # An object with no closing brace anywhere cannot be valid JSON: skip the exact parse.
        if text.endswith("}") or "}" in text:
            try:
                model = LoopOutput.model_validate_json(text)
            except ValidationError as error:
                repair_tried = _is_broken_json(error)
            else:
                return _valid(model, mode, json_source=text)
        else:
            repair_tried = True
        if repair_tried:
            # The text is one malformed JSON document: the exact parsers below cannot succeed and
            # labelled-section parsing does not apply, so go straight to repair.
            span = repair_span(text)
            best = _repaired(span, mode) if span is not None else None
            if best is not None and best.ok:
                return best
    region = _final_answer_region(text)
    needs_repair = False
    if "{" in region or "[" in region:
        candidate = _from_json(region, mode)
        if candidate is None:
            needs_repair = not repair_tried
        else:
            best = _better(best, candidate)
            if best is not None and best.ok:
                return best
    found = find_sections(region)
    if found is not None:
        sections, section_notes = found
        best = _better(best, _from_mapping(sections, mode, tuple(section_notes)))
        if best is not None and best.ok:
            return best
    if needs_repair:
        span = repair_span(region)
        if span is not None:
            best = _better(best, _repaired(span, mode))
    if best is not None:
        return best
    return _input_failure(mode, "unparseable", "no JSON object or labelled sections with contract fields found")


def _from_json(region: str, mode: Mode) -> ValidationResult | None:
    """The result from the first exactly-parsing JSON span that holds contract keys, or None."""
    for span in json_spans(region):
        if span[:1] == "{":
            try:
                return _valid(LoopOutput.model_validate_json(span), mode, json_source=span)
            except ValidationError:
                pass
        mapping = unwrap(loads(span))
        if mapping is not None:
            return _from_keys(mapping, mode)
    for value in decoded_objects(region):
        mapping = unwrap(value)
        if mapping is not None:
            return _from_keys(mapping, mode)
    return None


def _is_broken_json(error: ValidationError) -> bool:
    """Whether pydantic rejected the JSON syntax itself (not its fields, nor text after a whole object)."""
    detail = error.errors(include_url=False, include_context=False, include_input=False)[0]
    return detail["type"] == "json_invalid" and "trailing characters" not in detail["msg"]


_REPAIRED: Final = ContractIssue(None, "repaired_json", "the JSON was malformed and was repaired")


def _repaired(span: str, mode: Mode) -> ValidationResult | None:
    mapping = repair(span)
    if mapping is None:
        return None
    return _from_keys(mapping, mode, _REPAIRED)


def _better(best: ValidationResult | None, candidate: ValidationResult | None) -> ValidationResult | None:
    """The candidate with more passing fields; the earlier one wins ties."""
    if best is None:
        return candidate
    if candidate is None or len(candidate.passing_fields) <= len(best.passing_fields):
        return best
    return candidate


def _final_answer_region(text: str) -> str:
    """The text after CrewAI's last ``Final Answer:`` marker, or the whole text when there is none."""
    for marker in _FINAL_ANSWER_MARKERS:
        index = text.rfind(marker)
        if index >= 0:
            rest = text[index + len(marker) :]
            if rest.strip():
                return rest
    return text


_MESSAGES: Final = {
    "missing": "{field} is missing",
    "not_string": "{field} is {kind}, not a string",
    "empty": "{field} is empty after trimming",
    "too_long": "{field} has {size:,} characters after trimming; the limit is {limit}",
}
_PYDANTIC_CODES: Final = {
    "missing": "missing",
    "string_type": "not_string",
    "string_too_short": "empty",
    "string_too_long": "too_long",
}


def _field_issue(name: str, code: str, value: Any, pydantic_message: str) -> ContractIssue:
    template = _MESSAGES.get(code)
    if template is None:
        return ContractIssue(name, code, f"{name}: {pydantic_message}")
    kind = "null" if value is None else f"a {type(value).__name__}"
    size = len(value.strip()) if isinstance(value, str) else 0
    return ContractIssue(name, code, template.format(field=name, kind=kind, size=size, limit=MAX_FIELD_CHARS))


def _from_keys(mapping: Mapping[str, Any], mode: Mode, *lead_notes: ContractIssue) -> ValidationResult:
    """Validate a mapping whose keys may be in any case or unknown (those become warnings)."""
    values, notes = normalize_keys(mapping)
    return _from_mapping(values, mode, (*lead_notes, *notes))


def _from_mapping(values: Mapping[str, Any], mode: Mode, notes: tuple[ContractIssue, ...]) -> ValidationResult:
    """Validate exactly-named field values with the LoopOutput model itself (one source of rules)."""
    try:
        model = LoopOutput.model_validate(values)
    except ValidationError as error:
        issues: dict[str, ContractIssue] = {}
        for detail in error.errors(include_url=False, include_context=False, include_input=False):
            name = str(detail["loc"][0]) if detail["loc"] else ""
            if name in issues or name not in FIELDS:
                continue
            code = _PYDANTIC_CODES.get(detail["type"], detail["type"])
            issues[name] = _field_issue(name, code, values.get(name), detail["msg"])
        errors = tuple(issues[name] for name in FIELDS if name in issues)
        loop_output = {name: _trimmed(values.get(name)) for name in FIELDS}
        status = status_for(len(FIELDS) - len(errors))
        return ValidationResult(status=status, mode=mode, loop_output=loop_output, errors=errors, notes=notes)
    return _valid(model, mode, notes=notes)


def _valid(
    model: LoopOutput, mode: Mode, *, notes: tuple[ContractIssue, ...] = (), json_source: str | None = None
) -> ValidationResult:
    # A read-only view of the model's own field dict: no copy on the hot path, no way to corrupt the model.
    return ValidationResult(
        "valid", mode, MappingProxyType(model.__dict__), notes=notes, model=model, json_source=json_source
    )


def _trimmed(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) else None


def _input_failure(mode: Mode, code: str, message: str) -> ValidationResult:
    errors = (ContractIssue(None, code, message),) + tuple(
        ContractIssue(name, "missing", f"{name} is missing") for name in FIELDS
    )
    return ValidationResult(status="failed", mode=mode, loop_output=_NO_FIELDS, errors=errors)
