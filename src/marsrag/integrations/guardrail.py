"""The contract guardrail: validate each attempt, allow one repair, never make CrewAI raise.

It works on CrewAI's ``TaskOutput`` by duck typing (``raw``, ``pydantic``, ``model_copy``), so it is tested
and usable without importing CrewAI. Attempts are kept on the guardrail, in order, for the runtime to store,
each with what the LLM boundary recorded of its calls (model, endpoint, mode, cost, finish reason).
"""

# No "from __future__ import annotations" here: CrewAI inspects the guardrail's return annotation at
# runtime and accepts only a real tuple[bool, Any], not its string form.
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from marsrag.contract import FIELD_LIMITS, FIELDS, Mode, ValidationResult, is_cut_finish, validate_output
from marsrag.faults import failpoint
from marsrag.integrations.calls import JOURNAL, AttemptCalls
from marsrag.state import AttemptKind, AttemptRecord
from marsrag.tracing import semconv
from marsrag.tracing.spans import TASKS

#: How many attempts a contract task gets: its first answer and one repair.
MAX_ATTEMPTS = 2


@dataclass(frozen=True)
class Attempt:
    """One validated answer of a task: its number (1 = first answer, 2 = repair), raw text, verdict and calls."""

    number: int
    raw: str
    result: ValidationResult
    calls: AttemptCalls = AttemptCalls()

    @property
    def is_repair(self) -> bool:
        """Whether this attempt was the repair."""
        return self.number > 1

    def record(self, number: int, kind: AttemptKind) -> AttemptRecord:
        """This attempt as the task's attempt ``number`` of ``kind``, with what its LLM calls were and cost."""
        return AttemptRecord(
            number=number,
            raw=self.raw,
            status=self.result.status,
            errors=list(self.result.errors),
            kind=kind,
            **self.calls.fields(),
        )


def needs_repair(result: ValidationResult) -> bool:
    """Whether a result is repaired under its mode: hard repairs anything not valid, soft only failed."""
    return not result.completes


def repair_instructions(result: ValidationResult) -> str:
    """The feedback given to the agent for its one repair attempt: what failed and what to return."""
    problems = "; ".join(
        issue.message for issue in result.errors if issue.field is not None or not result.passing_fields
    )
    if not problems:
        problems = "; ".join(issue.message for issue in result.errors)
    kept = [name.upper() for name in result.passing_fields]
    keep = f" Keep the sections that passed ({', '.join(kept)}) as they were." if kept else ""
    return (
        f"the answer does not satisfy the Loop Contract ({result.status}): {problems}.{keep} Return all five "
        f"sections {', '.join(name.upper() for name in FIELDS)}, each non-empty, {FIELD_LIMITS}, as one JSON "
        "object with those keys in lower case."
    )


class ContractGuardrail:
    """A CrewAI task guardrail enforcing the Loop Contract under a loop mode, with exactly one repair.

    Give CrewAI the bound :meth:`check` as ``guardrail``, with ``guardrail_max_retries=1``. The first attempt
    that needs repair returns ``(False, feedback)``; every other attempt returns ``(True, output)`` with
    ``output.pydantic`` set to the LoopOutput when valid (else None), so CrewAI never raises for the
    contract: the runtime reads :attr:`attempts` and decides.
    """

    def __init__(self, mode: Mode = "hard", on_attempt: "Callable[[Attempt], None] | None" = None) -> None:
        if mode == "none":
            raise ValueError("loop_mode none tasks have no contract guardrail")
        self.mode: Mode = mode
        self.on_attempt = on_attempt
        self.attempts: list[Attempt] = []
        self.task: Any = None
        self._lock = threading.Lock()

    def bind(self, task: Any) -> None:
        """The CrewAI task this guardrail judges: its LLM calls are read from the journal for each attempt."""
        self.task = task

    @property
    def final(self) -> Attempt | None:
        """The last attempt, whose verdict is the task's."""
        return self.attempts[-1] if self.attempts else None

    # CrewAI tokenizes the guardrail's source (inspect.getsource) for the event it emits before every attempt:
    # check stays a one-line entry (a millisecond per attempt to tokenize when it held the whole body).
    def check(self, output: Any) -> tuple[bool, Any]:
        """Validate one attempt (CrewAI calls this bound method, see :meth:`_check`)."""
        return self._check(output)

    def _check(self, output: Any) -> tuple[bool, Any]:
        """Validate one attempt: record it, then ask for the one repair or hand CrewAI the typed output."""
        calls = AttemptCalls.of(JOURNAL.drain(self.task)) if self.task is not None else AttemptCalls()
        # An answer the provider says it cut at its token limit is never taken as complete.
        result = validate_output(output, mode=self.mode, cut=is_cut_finish(calls.finish_reason))
        raw = output.raw if isinstance(getattr(output, "raw", None), str) else ""
        with self._lock:
            attempt = Attempt(len(self.attempts) + 1, raw, result, calls)
            self.attempts.append(attempt)
        _traced(self.task, attempt)
        if self.on_attempt is not None:
            self.on_attempt(attempt)
        if attempt.number < MAX_ATTEMPTS and needs_repair(result):
            failpoint("guardrail.repair_requested")  # a crash here happens during the repair
            return False, repair_instructions(result)
        model = result.model
        update = {"pydantic": model, "json_dict": model.model_dump() if model is not None else None}
        return True, output.model_copy(update=update)


def _traced(task: Any, attempt: Attempt) -> None:
    """Put the attempt's verdict on its task's span: the calls that follow it are the next attempt's."""
    span = TASKS.get(JOURNAL.owner(task) if task is not None else None)
    if span:
        span.attempts = attempt.number
        span.event(
            semconv.ATTEMPT_EVENT,
            {
                semconv.ATTEMPT: attempt.number,
                semconv.VALIDATION_STATUS: attempt.result.status,
                "marsrag.attempt.errors": len(attempt.result.errors),
            },
        )
