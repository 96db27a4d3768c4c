"""The Loop Contract: the LoopOutput model, validation and normalization, template and versioning.

Public interface::

    from marsrag.contract import LoopOutput, ValidationResult, is_cut_finish, validate_output

What stored records need (the fields, the template, versions, issues, the status types) loads with the package;
the model and the validator (pydantic model building, the parsers' patterns) load on first use of one of their
names, so reading runs from the store (``marsrag runs``, ``metrics``, ``review``) never pays for validation.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from marsrag.contract._status import Mode, Status
from marsrag.contract.issues import ContractIssue
from marsrag.contract.rules import FIELD_LIMITS
from marsrag.contract.template import (
    EXPECTED_OUTPUT_TEMPLATE,
    FIELDS,
    INSTRUCTIONS_NOT_ANSWER,
    SECTION_INSTRUCTIONS,
    render_example,
    render_expected_output,
    render_sections,
)
from marsrag.contract.truncation import is_cut_finish
from marsrag.contract.version import (
    LOOP_CONTRACT_VERSION,
    Version,
    check_compatible,
    compatibility_problem,
    is_compatible,
    parse_version,
)

if TYPE_CHECKING:
    from marsrag.contract._sections import section_labels
    from marsrag.contract.model import LoopField, LoopOutput
    from marsrag.contract.result import ValidationResult
    from marsrag.contract.schema import loop_output_json_schema
    from marsrag.contract.validate import validate_output

#: The names loaded on first use, and the module each is in.
_LAZY = {
    "LoopField": "marsrag.contract.model",
    "LoopOutput": "marsrag.contract.model",
    "ValidationResult": "marsrag.contract.result",
    "loop_output_json_schema": "marsrag.contract.schema",
    "section_labels": "marsrag.contract._sections",
    "validate_output": "marsrag.contract.validate",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'marsrag.contract' has no attribute {name!r}")
    value = getattr(import_module(_LAZY[name]), name)
    globals()[name] = value  # the next access is a plain attribute
    return value


__all__ = [
    "EXPECTED_OUTPUT_TEMPLATE",
    "FIELDS",
    "FIELD_LIMITS",
    "INSTRUCTIONS_NOT_ANSWER",
    "LOOP_CONTRACT_VERSION",
    "SECTION_INSTRUCTIONS",
    "ContractIssue",
    "LoopField",
    "LoopOutput",
    "Mode",
    "Status",
    "ValidationResult",
    "Version",
    "check_compatible",
    "compatibility_problem",
    "is_compatible",
    "is_cut_finish",
    "loop_output_json_schema",
    "parse_version",
    "render_example",
    "render_expected_output",
    "render_sections",
    "section_labels",
    "validate_output",
]
