"""Truncated answers: providers' finish reasons for an answer stopped at its token limit, and the issue it yields.

A cut answer never was a complete answer, so it never validates: the field the model was still writing fails
with the error code ``truncated`` (contract 1.1.0). Pass ``cut=is_cut_finish(finish_reason)`` to
:func:`~marsrag.contract.validate_output` when the provider says why the answer stopped.
"""

from __future__ import annotations

from typing import Final

from marsrag.contract.issues import ContractIssue

#: Finish reasons (casefolded) meaning "stopped at the token limit": OpenAI's ``length``, Anthropic's
#: ``max_tokens``, OpenAI Responses' ``max_output_tokens``, Gemini's ``MAX_TOKENS``.
CUT_FINISH_REASONS: Final = frozenset({"length", "max_tokens", "max_output_tokens"})


def is_cut_finish(finish_reason: str | None) -> bool:
    """Whether a provider's finish reason says the answer stopped at its token limit (any case)."""
    return isinstance(finish_reason, str) and finish_reason.strip().casefold() in CUT_FINISH_REASONS


def truncated_issue(field: str) -> ContractIssue:
    """The ``truncated`` error of the field a cut answer stopped in."""
    return ContractIssue(field, "truncated", f"{field} was cut off before it ended (the answer is truncated)")
