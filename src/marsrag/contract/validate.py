"""``validate_output``: the contract validation interface of spec section 8.

Input: a raw task output in any shape CrewAI or a model may produce. Output: a :class:`ValidationResult`
with the status, the normalized fields and the errors. No LLM is ever called: every well-formed answer is
recovered by parsing, and nothing is invented when the answer is not there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from marsrag.contract._json_forms import answers, unwrap
from marsrag.contract._text import from_text
from marsrag.contract._verdict import from_keys, input_failure
from marsrag.contract.result import MODES, Mode, ValidationResult
from marsrag.contract.rules import MAX_INPUT_BYTES


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
        return from_text(raw, mode, cut)
    if isinstance(raw, bytes | bytearray | memoryview):
        data = bytes(raw)
        if len(data) > MAX_INPUT_BYTES:
            return input_failure(mode, "too_long", f"the output has more than {MAX_INPUT_BYTES:,} bytes")
        return from_text(data.decode("utf-8-sig", errors="replace"), mode, cut)
    if _is_task_output(raw):
        return _from_task_output(raw, mode, cut)
    if isinstance(raw, BaseModel):
        return validate_output(raw.model_dump(), mode)
    if isinstance(raw, Mapping):
        return _from_structure(raw, mode)
    kind = "no output" if raw is None else f"a {type(raw).__name__}"
    return input_failure(mode, "unparseable", f"got {kind}, not text, JSON or a mapping")


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


def _from_structure(mapping: Mapping[str, Any], mode: Mode) -> ValidationResult:
    """A mapping: its answer found through the same envelopes as JSON text (the last best one wins)."""
    best: ValidationResult | None = None
    for answer in answers(dict(mapping)):
        result = from_keys(answer, mode) if isinstance(answer, Mapping) else from_text(answer, mode, False, 1)
        if best is None or len(result.passing_fields) >= len(best.passing_fields):
            best = result
    if best is None:
        return input_failure(mode, "unparseable", "the mapping has none of the contract's keys")
    return best
