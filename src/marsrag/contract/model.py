"""``LoopOutput``: the pydantic model every narrative task returns."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints
from pydantic_core import PydanticCustomError

from marsrag.contract.rules import MAX_FIELD_CHARS, non_content_reason
from marsrag.contract.template import FIELDS, SECTION_INSTRUCTIONS
from marsrag.contract.version import LOOP_CONTRACT_VERSION


def _require_content(value: str) -> str:
    reason = non_content_reason(value)
    if reason is not None:
        raise PydanticCustomError(reason[0], reason[1])
    return value


def _field(name: str) -> Any:
    return Field(
        description=f"{name.upper()}: {SECTION_INSTRUCTIONS[name]} 1-4 sentences; at most "
        f"{MAX_FIELD_CHARS} characters after trimming.",
        # JSON Schema consumers cannot express "non-empty after trim" with minLength alone.
        json_schema_extra={"pattern": r"\S"},
    )


#: One Loop Contract field: a string, trimmed, non-empty, at most 800 characters, and real content.
LoopField = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_FIELD_CHARS, strict=True),
    AfterValidator(_require_content),
]


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

    def render(self) -> str:
        """Render the answer as the canonical labelled text (which validates back to the same model)."""
        return "\n".join(f"{name.upper()}: {getattr(self, name)}" for name in FIELDS)
