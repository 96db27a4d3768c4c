"""The canonical ``expected_output`` template of spec section 2, as data and as rendered text."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Final, Literal

from marsrag.contract.example import EXAMPLE_GOAL, WORKED_EXAMPLE
from marsrag.contract.fields import FIELDS, SECTION_INSTRUCTIONS
from marsrag.contract.rules import FIELD_LIMITS

__all__ = [
    "EXPECTED_OUTPUT_TEMPLATE",
    "FIELDS",
    "INSTRUCTIONS_NOT_ANSWER",
    "SECTION_INSTRUCTIONS",
    "TemplateFormat",
    "drop_example",
    "render_example",
    "render_expected_output",
    "render_sections",
]

#: The canonical template: five numbered lines, in this exact order and wording.
EXPECTED_OUTPUT_TEMPLATE: Final = "\n".join(
    f"{number}. {field.upper()}: {SECTION_INSTRUCTIONS[field]}" for number, field in enumerate(FIELDS, start=1)
)

_JSON_HINT: Final = (
    "Answer with one JSON object with exactly these string keys, in this order: "
    f"{', '.join(FIELDS)}. Each value is {FIELD_LIMITS}."
)
_LABELS_HINT: Final = "Answer with the five labelled sections above, in this order, each on its own line."

TemplateFormat = Literal["plain", "json", "labels"]

#: Said before the template in a task's prompt: small models otherwise write the instructions into the fields.
INSTRUCTIONS_NOT_ANSWER: Final = (
    "The five lines below say what each section must do; they are not the answer. Never copy them: write "
    "your own sentences about the user's goal."
)


def render_expected_output(format: TemplateFormat = "plain", *, extra: str | None = None) -> str:
    """Render the canonical template for a task's ``expected_output``.

    Args:
        format: ``plain`` gives the five lines alone; ``json`` and ``labels`` append one line telling the
            model which answer shape to use (the sections and their order never change).
        extra: task-specific guidance appended after the template, e.g. tone or audience.

    Returns:
        The text to use as ``expected_output``; it always starts with :data:`EXPECTED_OUTPUT_TEMPLATE`.
    """
    parts = [EXPECTED_OUTPUT_TEMPLATE]
    if format == "json":
        parts.append(_JSON_HINT)
    elif format == "labels":
        parts.append(_LABELS_HINT)
    elif format != "plain":
        raise ValueError(f"unknown template format {format!r}: use plain, json or labels")
    if extra and extra.strip():
        parts.append(extra.strip())
    return "\n\n".join(parts)


def render_example() -> str:
    """The worked example as a prompt shows it: one JSON answer for an unrelated goal, its form to follow."""
    answer = json.dumps(WORKED_EXAMPLE, ensure_ascii=False)
    return f'Example for another goal ("{EXAMPLE_GOAL}"), to follow in form only:\n{answer}'


def drop_example(text: str) -> str:
    """``text`` without the worked example (:func:`render_example` and the blank line after it), where it has one.

    For a request whose decoder is made to follow the contract's schema: the example only shows the form, which
    the decoder enforces, and small models copy its sentences into their fields.
    """
    return text.replace(render_example() + "\n\n", "")


def render_sections(values: Mapping[str, str | None]) -> str:
    """The sections that have a value as canonical labelled lines (``HOOK: ...``), in contract order."""
    return "\n".join(f"{name.upper()}: {value}" for name in FIELDS if (value := values.get(name)))
