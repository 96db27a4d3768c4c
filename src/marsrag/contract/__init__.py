"""The Loop Contract: the LoopOutput model, validation and normalization, template and versioning.

Public interface::

    from marsrag.contract import LoopOutput, ValidationResult, is_cut_finish, validate_output
"""

from marsrag.contract._sections import section_labels
from marsrag.contract.issues import ContractIssue
from marsrag.contract.model import LoopField, LoopOutput
from marsrag.contract.result import Mode, Status, ValidationResult
from marsrag.contract.rules import FIELD_LIMITS
from marsrag.contract.schema import loop_output_json_schema
from marsrag.contract.template import (
    EXPECTED_OUTPUT_TEMPLATE,
    FIELDS,
    SECTION_INSTRUCTIONS,
    render_expected_output,
    render_sections,
)
from marsrag.contract.truncation import is_cut_finish
from marsrag.contract.validate import validate_output
from marsrag.contract.version import (
    LOOP_CONTRACT_VERSION,
    Version,
    check_compatible,
    compatibility_problem,
    is_compatible,
    parse_version,
)

__all__ = [
    "EXPECTED_OUTPUT_TEMPLATE",
    "FIELDS",
    "FIELD_LIMITS",
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
    "render_expected_output",
    "render_sections",
    "section_labels",
    "validate_output",
]
