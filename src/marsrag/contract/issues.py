"""``ContractIssue``: one error or warning about an output, the one issue type of validation and stored state."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ContractIssue:
    """One error or warning: the field it concerns (None for the whole input), a stable code, a message.

    Error codes: ``missing``, ``empty``, ``too_long``, ``not_string``, ``placeholder``, ``template_echo``,
    ``truncated`` (fields; ``truncated`` since contract 1.1.0), ``duplicate_section`` (a field two labelled
    answers in one text give different content) and ``unparseable``, ``too_long`` (whole input). Warning codes:
    ``sentences``, ``unknown_key``, ``duplicate_key``, ``duplicate_section`` (a section amended once),
    ``repaired_json``.
    """

    field: str | None
    code: str
    message: str

    def to_dict(self) -> dict[str, str | None]:
        """The issue as ``{field, code, message}``."""
        return {"field": self.field, "code": self.code, "message": self.message}


def second_answer_issue(field: str) -> ContractIssue:
    """The error of a field two answers in one text give different content (neither is chosen)."""
    return ContractIssue(
        field,
        "duplicate_section",
        f"{field} is given twice with different content (the text holds two answers): write one answer",
    )
