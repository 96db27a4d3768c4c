"""The loop event record: flat, with the same fields for every event name (null where not applicable)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from marsrag.state import utcnow

EventName = Literal[
    "loop.contract.validated",
    "loop.contract.failed",
    "loop.transition.planned",
    "loop.transition.fallback_used",
    "loop.ui.rendered",
    "loop.action.followed",
]
EVENT_NAMES: tuple[str, ...] = EventName.__args__  # type: ignore[attr-defined]


class LoopEvent(BaseModel):
    """One event of spec section 8."""

    model_config = ConfigDict(frozen=True)

    name: EventName
    run_id: str
    task_id: str | None = None
    loop_contract_version: str | None = None
    loop_mode: str | None = None
    validation_status: str | None = None
    transition_mode: str | None = None
    timestamp: datetime = Field(default_factory=utcnow)

    def to_dict(self) -> dict[str, Any]:
        """The event as a flat JSON-ready record."""
        return self.model_dump(mode="json")
