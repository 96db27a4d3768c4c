"""``ValidationResult``: what contract validation says about one raw output."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from marsrag.contract._json_forms import unknown_key_notes
from marsrag.contract._status import MODES, Mode, Status
from marsrag.contract.issues import ContractIssue
from marsrag.contract.model import LoopOutput
from marsrag.contract.rules import PARTIAL_MIN_FIELDS, SOFT_SENTENCES, count_sentences
from marsrag.contract.template import FIELDS

__all__ = ["MODES", "Mode", "Status", "ValidationResult", "completes", "status_for"]


def status_for(passing: int) -> Status:
    """The contract status for a given number of individually passing fields."""
    if passing == len(FIELDS):
        return "valid"
    return "partial" if passing >= PARTIAL_MIN_FIELDS else "failed"


def completes(status: Status, mode: Mode) -> bool:
    """Whether a task with this status may complete under ``mode`` (hard: valid; soft: not failed)."""
    if mode == "hard":
        return status == "valid"
    if mode == "soft":
        return status != "failed"
    return True


class ValidationResult:
    """The verdict on one raw output: status, normalized fields, errors and warnings.

    ``status`` never depends on ``mode``; ``completes`` does. Sentence-count warnings are computed on first
    access to :attr:`warnings`, so callers that only need the verdict do not pay for them.
    """

    __slots__ = ("status", "mode", "errors", "loop_output", "_model", "_notes", "_warnings", "_json_source")

    status: Status
    mode: Mode
    errors: tuple[ContractIssue, ...]
    loop_output: Mapping[str, str | None]

    def __init__(
        self,
        status: Status,
        mode: Mode,
        loop_output: Mapping[str, str | None],
        errors: tuple[ContractIssue, ...] = (),
        notes: tuple[ContractIssue, ...] = (),
        model: LoopOutput | None = None,
        json_source: str | None = None,
    ) -> None:
        self.status = status
        self.mode = mode
        self.errors = errors
        #: The five normalized (trimmed) values that were found; None where a field was missing or not text.
        self.loop_output = loop_output
        self._model = model
        self._notes = notes
        self._warnings: tuple[ContractIssue, ...] | None = None
        # Clean JSON validated in one pydantic pass: its unknown keys are looked up only if warnings are read.
        self._json_source = json_source

    @property
    def completes(self) -> bool:
        """Whether the task may complete under this result's mode."""
        return completes(self.status, self.mode)

    @property
    def ok(self) -> bool:
        """Shorthand for ``status == "valid"``."""
        return self.status == "valid"

    @property
    def model(self) -> LoopOutput | None:
        """The validated :class:`LoopOutput` when the status is ``valid``, else None."""
        if self._model is None and self.status == "valid":
            # Every field already passed the model's own rules (rules.text_problem): build without re-checking.
            fields: dict[str, Any] = {name: self.loop_output[name] for name in FIELDS}
            self._model = LoopOutput.model_construct(**fields)
        return self._model

    @property
    def failing_fields(self) -> tuple[str, ...]:
        """Fields with at least one error, in contract order."""
        bad = {issue.field for issue in self.errors}
        return tuple(name for name in FIELDS if name in bad)

    @property
    def passing_fields(self) -> tuple[str, ...]:
        """Fields that individually pass, in contract order."""
        bad = {issue.field for issue in self.errors}
        if None in bad:
            bad.update(name for name in FIELDS if self.loop_output.get(name) is None)
        return tuple(name for name in FIELDS if name not in bad)

    @property
    def warnings(self) -> tuple[ContractIssue, ...]:
        """Warnings: notes from normalization plus fields outside the soft sentence target."""
        if self._warnings is None:
            if self._json_source is not None:
                self._notes = unknown_key_notes(self._json_source) + self._notes
                self._json_source = None
            low, high = SOFT_SENTENCES
            sentence_notes = []
            for name in self.passing_fields:
                value = self.loop_output[name]
                count = count_sentences(value) if value else 0
                if not low <= count <= high:
                    sentence_notes.append(
                        ContractIssue(name, "sentences", f"{count} sentences; the soft target is {low}-{high}")
                    )
            self._warnings = self._notes + tuple(sentence_notes)
        return self._warnings

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON-ready data: status, completes, errors, warnings, loop_output."""
        return {
            "status": self.status,
            "completes": self.completes,
            "errors": [issue.to_dict() for issue in self.errors],
            "warnings": [issue.to_dict() for issue in self.warnings],
            "loop_output": {name: self.loop_output.get(name) for name in FIELDS},
        }

    def __repr__(self) -> str:
        codes = ", ".join(f"{issue.field}:{issue.code}" for issue in self.errors)
        return f"ValidationResult(status={self.status!r}, mode={self.mode!r}, errors=[{codes}])"
