"""Truncated answers: providers' finish reasons for an answer stopped at its token limit, and the issue it yields.

A cut answer never was a complete answer, so it never validates: the field the model was still writing fails
with the error code ``truncated`` (contract 1.1.0). Pass ``cut=is_cut_finish(finish_reason)`` to
:func:`~marsrag.contract.validate_output` when the provider says why the answer stopped.
"""

from __future__ import annotations

from typing import Any, Final

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


#: Keys (casefolded, without ``_`` and ``-``) under which an envelope says why its answer stopped: OpenAI's
#: ``finish_reason``, Anthropic's ``stop_reason``, Gemini's ``finishReason``, Bedrock's ``stopReason`` and
#: ``completionReason``, Ollama's ``done_reason``.
STOP_REASON_KEYS: Final = frozenset({"finishreason", "stopreason", "completionreason", "donereason"})
#: Stop reasons (casefolded) meaning the answer stopped before it ended: at the token limit, or cut by a filter or
#: a refusal (Anthropic's ``refusal``, OpenAI's ``content_filter``, Gemini's ``SAFETY``, ``RECITATION``...).
EARLY_STOP_REASONS: Final = CUT_FINISH_REASONS | frozenset(
    {"refusal", "content_filter", "safety", "recitation", "blocklist", "prohibited_content", "spii", "max_length"}
)
#: Normal ends: with one of these beside an early stop, the envelope holds several answers and says nothing of one.
_NORMAL_STOPS: Final = frozenset({"stop", "end_turn", "stop_sequence", "eos", "eos_token", "complete", "finish"})
_WALK_DEPTH: Final = 6
_WALK_NODES: Final = 400


def stopped_early(envelope: Any) -> bool:
    """Whether a decoded envelope says its answer stopped before it ended (a cut finish or stop reason, and no
    normal one beside it); an OpenAI Responses object (or a Realtime response) with ``status: incomplete`` says so
    too."""
    early, normal = False, False
    stack: list[tuple[Any, int]] = [(envelope, 0)]
    nodes = 0
    while stack and nodes < _WALK_NODES:
        value, depth = stack.pop()
        nodes += 1
        if isinstance(value, dict):
            if value.get("status") == "incomplete" and ("incomplete_details" in value or "status_details" in value):
                early = True
            for key, item in value.items():
                name = key.casefold().replace("_", "").replace("-", "") if isinstance(key, str) else ""
                if name in STOP_REASON_KEYS and isinstance(item, str):
                    reason = item.strip().casefold()
                    early = early or reason in EARLY_STOP_REASONS
                    normal = normal or reason in _NORMAL_STOPS
                elif depth < _WALK_DEPTH and isinstance(item, dict | list):
                    stack.append((item, depth + 1))
        elif isinstance(value, list) and depth < _WALK_DEPTH:
            stack.extend((item, depth + 1) for item in value if isinstance(item, dict | list))
    return early and not normal
