"""Reading an answer while it is being written: the sections seen so far, by the contract's own grammar.

A streamed answer is text that grows. At any moment it is a prefix of the final answer, so it is read exactly
as a cut answer is (``validate_output(text, cut=True)``): JSON whose object never closed, labelled sections,
any format the contract reads. What that reading recovers is what a viewer may be shown; what is validated and
stored is always the final answer, read again in full when it is complete.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from marsrag.contract.fields import FIELDS
from marsrag.contract.validate import validate_output

__all__ = ["PartialAnswer", "read_partial"]


@dataclass(frozen=True)
class PartialAnswer:
    """The sections of a prefix of an answer: their text so far, in contract order, and the one being written."""

    #: Each section seen so far and its text (the last one possibly cut mid-sentence), in contract order.
    sections: dict[str, str] = field(default_factory=dict)
    #: The section the text ends in (its value may still grow), or None before the first section.
    writing: str | None = None

    def to_dict(self) -> dict[str, object]:
        """The JSON form: ``{"sections": {...}, "writing": name | null}``."""
        return {"sections": dict(self.sections), "writing": self.writing}


def read_partial(text: str) -> PartialAnswer:
    """The sections a prefix of an answer holds, read as the contract reads a cut answer.

    A section appears once its label or key and the start of its value are seen. The section being written is
    the last one in the text: a later section's label has not been seen yet (sections are read in contract
    order, but a model may write them out of order; the last present one in contract order is reported).
    """
    if not text.strip():
        return PartialAnswer()
    result = validate_output(text, cut=True)
    sections = {name: value for name in FIELDS if (value := result.loop_output.get(name))}
    writing = next((name for name in reversed(FIELDS) if name in sections), None)
    return PartialAnswer(sections, writing)
