"""Loop events as OpenTelemetry attributes: the same on a log record (:mod:`marsrag.events.otel`) and a span event."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Final

from marsrag.state import LoopEvent

if TYPE_CHECKING:
    from opentelemetry.util.types import AttributeValue

__all__ = ["ATTRIBUTE_FIELDS", "ATTRIBUTE_PREFIX", "DETAIL_PREFIX", "event_attributes", "nanoseconds"]

ATTRIBUTE_PREFIX: Final = "marsrag."
#: The event fields carried as attributes; the name is the record's event name, the timestamp its timestamp.
ATTRIBUTE_FIELDS: Final = (
    "run_id",
    "task_id",
    "loop_contract_version",
    "loop_mode",
    "validation_status",
    "transition_mode",
)
#: ``detail`` keys exported as ``marsrag.detail.<key>`` (scalars only: OTel has no null and no nested map in an
#: attribute).
DETAIL_PREFIX: Final = ATTRIBUTE_PREFIX + "detail."

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


def event_attributes(event: LoopEvent) -> dict[str, AttributeValue]:
    """The event's fields as ``marsrag.``-prefixed attributes, its ``detail`` as ``marsrag.detail.<key>``.

    Null fields are left out (OTel has no null), and so are detail values that are not a string, a number or a
    boolean.
    """
    values = {name: getattr(event, name) for name in ATTRIBUTE_FIELDS}
    attributes: dict[str, AttributeValue] = {
        ATTRIBUTE_PREFIX + name: value for name, value in values.items() if value is not None
    }
    for key, value in (event.detail or {}).items():
        if isinstance(value, str | int | float | bool):
            attributes[DETAIL_PREFIX + key] = value
    return attributes


def nanoseconds(moment: datetime) -> int:
    """Nanoseconds since the epoch, exactly (float seconds would lose the microseconds)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)  # MarsRAG timestamps are UTC; a naive one comes from a store round trip
    return (moment - _EPOCH) // timedelta(microseconds=1) * 1_000
