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

from marsrag.contract._json_cut import cut_field
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
from marsrag.contract.issues import ContractIssue
from marsrag.contract.model import LoopOutput
from marsrag.contract.result import MODES, Mode, ValidationResult, status_for
from marsrag.contract.rules import MAX_INPUT_BYTES, MAX_INPUT_CHARS, text_problem
from marsrag.contract.template import FIELDS
from marsrag.contract.truncation import truncated_issue

_NON_SPACE: Final = re.compile(r"\S")
_FINAL_ANSWER_MARKERS: Final = ("Final Answer:", "final answer:", "FINAL ANSWER:", "Final answer:")
_NO_FIELDS: Final[Mapping[str, str | None]] = MappingProxyType(dict.fromkeys(FIELDS))


def validate_output(raw: object, mode: Mode = "hard", *, cut: bool = False) -> ValidationResult:
    """Validate and normalize a raw task output against the Loop Contract.

    Args:
        raw: ``str``, ``bytes``, a mapping, a :class:`LoopOutput` (or any pydantic model with the five
            fields), or a CrewAI ``TaskOutput`` (its ``pydantic``/``json_dict`` when set, else ``raw``).
        mode: ``hard``, ``soft`` or ``none``; it decides :attr:`ValidationResult.completes`, never the status.
        cut: the provider reported that the answer stopped at its token limit (see
            :func:`~marsrag.contract.is_cut_finish`). Text whose JSON never closed, or labelled sections, then
            fail ``truncated`` on the last field written. A JSON value string left open at the end fails
            ``truncated`` whatever ``cut`` says. A closed JSON object, a mapping or a model is complete.

    Returns:
        The verdict. Bad input never raises: it yields a ``failed`` result whose errors say why.

    Raises:
        ValueError: ``mode`` is not one of hard, soft, none (a programming error, not bad input).
    """
    if mode not in MODES:
        raise ValueError(f"unknown loop_mode {mode!r}: use hard, soft or none")
    if isinstance(raw, str):
        return _from_text(raw, mode, cut)
    if isinstance(raw, bytes | bytearray | memoryview):
        data = bytes(raw)
        if len(data) > MAX_INPUT_BYTES:
            return _input_failure(mode, "too_long", f"the output has more than {MAX_INPUT_BYTES:,} bytes")
        return _from_text(data.decode("utf-8-sig", errors="replace"), mode, cut)
    if _is_task_output(raw):
        return _from_task_output(raw, mode, cut)
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


def _from_task_output(task_output: Any, mode: Mode, cut: bool) -> ValidationResult:
    text = getattr(task_output, "raw", None)
    if cut and isinstance(text, str | bytes) and text.strip():
        # The raw text is what the model wrote before the cut; a structured form CrewAI converted from it
        # may have had its ending filled in, so it cannot say whether the answer was complete.
        return validate_output(text, mode, cut=True)
    # CrewAI leaves .pydantic and .json_dict None on a guardrail's first attempt: fall back to .raw.
    structured = getattr(task_output, "pydantic", None)
    if isinstance(structured, BaseModel):
        return validate_output(structured, mode)
    json_dict = getattr(task_output, "json_dict", None)
    if isinstance(json_dict, Mapping) and unwrap(json_dict) is not None:
        return validate_output(json_dict, mode)
    return validate_output(text if isinstance(text, str | bytes) else None, mode, cut=cut)


def _from_text(text: str, mode: Mode, cut: bool) -> ValidationResult:
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
        best, repair_tried = _from_leading_object(text, first, mode, cut)
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
        # Sections have no closing mark to prove the last one ended: after a cut, it did not.
        last = next(reversed(sections)) if cut and sections else None
        best = _better(best, _from_mapping(sections, mode, tuple(section_notes), truncated=last))
        if best is not None and best.ok:
            return best
    if needs_repair:
        span = repair_span(region)
        if span is not None:
            best = _better(best, _repaired(span, mode, cut))
    if best is not None:
        return best
    return _input_failure(mode, "unparseable", "no JSON object or labelled sections with contract fields found")


def _from_leading_object(text: str, first: int, mode: Mode, cut: bool) -> tuple[ValidationResult | None, bool]:
    """Text starting with ``{``: one pydantic parse when it is clean JSON, else straight to repair.

    Returns the result (None when nothing was recovered) and whether repair was already tried.
    """
    # An object with no closing brace anywhere cannot be valid JSON: skip the exact parse.
    if text.endswith("}") or "}" in text:
        try:
            model = LoopOutput.model_validate_json(text)
        except ValidationError as error:
            if not _is_broken_json(error):
                return None, False  # valid JSON with bad fields, or text after the object: parse it below
        else:
            return _valid(model, mode, json_source=text), False
    # One malformed JSON document: the exact parsers cannot succeed and labelled sections do not apply.
    span = repair_span(text, first)
    return (_repaired(span, mode, cut) if span is not None else None), True


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


def _repaired(span: str, mode: Mode, cut: bool) -> ValidationResult | None:
    mapping = repair(span)
    if mapping is None:
        return None
    # Repair closes whatever was left open, so a value cut mid-string would read as complete: ask the text.
    return _from_keys(mapping, mode, _REPAIRED, truncated=cut_field(span, cut))


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


def _from_keys(
    mapping: Mapping[str, Any], mode: Mode, *lead_notes: ContractIssue, truncated: str | None = None
) -> ValidationResult:
    """Validate a mapping whose keys may be in any case or unknown (those become warnings)."""
    values, notes = normalize_keys(mapping)
    return _from_mapping(values, mode, (*lead_notes, *notes), truncated=truncated)


def _from_mapping(
    values: Mapping[str, Any], mode: Mode, notes: tuple[ContractIssue, ...], *, truncated: str | None = None
) -> ValidationResult:
    """Validate exactly-named field values with the contract's field rules (the model's own validator).

    ``truncated`` names the field a cut left unfinished: it fails ``truncated`` and keeps what was written.
    """
    loop_output: dict[str, str | None] = {}
    errors: list[ContractIssue] = []
    for name in FIELDS:
        if name == truncated:
            # The field rules judge a whole value; an unfinished one has only this error.
            value = values.get(name)
            loop_output[name] = value.strip() if isinstance(value, str) else None
            errors.append(truncated_issue(name))
            continue
        if name not in values:
            loop_output[name] = None
            errors.append(ContractIssue(name, "missing", f"{name} is missing"))
            continue
        value = values[name]
        if not isinstance(value, str):
            loop_output[name] = None
            kind = "null" if value is None else f"a {type(value).__name__}"
            errors.append(ContractIssue(name, "not_string", f"{name} is {kind}, not a string"))
            continue
        loop_output[name] = text = value.strip()
        problem = text_problem(text)
        if problem is not None:
            errors.append(ContractIssue(name, problem[0], f"{name} {problem[1]}"))
    # Read-only: a valid result builds its model from these values later, so they must not change.
    view = MappingProxyType(loop_output)
    if errors:
        return ValidationResult(status_for(len(FIELDS) - len(errors)), mode, view, errors=tuple(errors), notes=notes)
    return ValidationResult("valid", mode, view, notes=notes)


def _valid(model: LoopOutput, mode: Mode, *, json_source: str | None = None) -> ValidationResult:
    # A read-only view of the model's own field dict: no copy on the hot path, no way to corrupt the model.
    return ValidationResult("valid", mode, MappingProxyType(model.__dict__), model=model, json_source=json_source)


def _input_failure(mode: Mode, code: str, message: str) -> ValidationResult:
    errors = (ContractIssue(None, code, message),) + tuple(
        ContractIssue(name, "missing", f"{name} is missing") for name in FIELDS
    )
    return ValidationResult(status="failed", mode=mode, loop_output=_NO_FIELDS, errors=errors)
