"""``LoopOutput``: the pydantic model every narrative task returns."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, Strict, model_validator
from pydantic_core import PydanticCustomError

from marsrag.contract.fields import FIELDS, SECTION_INSTRUCTIONS
from marsrag.contract.rules import MAX_FIELD_CHARS, SOFT_SENTENCES, cross_field_problems, text_problem
from marsrag.contract.template import render_sections
from marsrag.contract.version import LOOP_CONTRACT_VERSION


def _checked(value: str) -> str:
    # Trimming and every rule live in rules.text_problem, shared with validate_output's parsed-value path.
    text = value.strip()
    problem = text_problem(text)
    if problem is not None:
        raise PydanticCustomError(problem[0], "Value " + problem[1])
    return text


def _field(name: str) -> Any:
    low, high = SOFT_SENTENCES
    return Field(
        description=f"{name.upper()}: {SECTION_INSTRUCTIONS[name]} {low}-{high} sentences; at most "
        f"{MAX_FIELD_CHARS} characters after trimming.",
        # The rules run in Python (see _checked); the schema states them for non-Python consumers, and
        # "pattern" says what minLength cannot: non-empty after trimming.
        json_schema_extra={"minLength": 1, "maxLength": MAX_FIELD_CHARS, "pattern": r"\S"},
    )


#: One Loop Contract field: a string (never coerced), trimmed, non-empty, at most 800 characters, content.
LoopField = Annotated[str, Strict(), AfterValidator(_checked)]


class LoopOutput(BaseModel):
    """The Loop Contract answer of a narrative task: five sections, hook, grip, payoff, reinforce, loop.

    Every field is a non-empty string of real content, stored trimmed, at most 800 characters. Unknown keys
    are ignored. Use it as the output_pydantic of narrative CrewAI tasks.
    """

    model_config = ConfigDict(
        extra="ignore",
        frozen=True,
        title="LoopOutput",
        json_schema_extra={"x-loop-contract-version": LOOP_CONTRACT_VERSION},
    )

    FIELDS: ClassVar[tuple[str, ...]] = FIELDS

    hook: LoopField = _field("hook")
    grip: LoopField = _field("grip")
    payoff: LoopField = _field("payoff")
    reinforce: LoopField = _field("reinforce")
    loop: LoopField = _field("loop")

    @model_validator(mode="after")
    def _sections_differ(self) -> LoopOutput:
        # Since 1.4.0 and 1.5.0 (rules.cross_field_problems): a section repeating an earlier one word for word, or a
        # stub among sentences, says nothing.
        crossed = cross_field_problems(self.__dict__)
        if crossed:
            name, (code, detail) = next(iter(crossed.items()))
            raise PydanticCustomError(code, f"Value of {name} " + detail)
        return self

    def render(self) -> str:
        """Render the answer as the canonical labelled text (which validates back to the same model)."""
        return render_sections(self.model_dump())
