"""Loop events (spec section 8): typed records, stored with the state they describe, then sent to sinks."""

from marsrag.events.otel import OtelSink, otel_sink_from_env
from marsrag.events.sinks import EventCapture, EventSink, JsonlSink, capture_events, dispatch, installed
from marsrag.state import EVENT_NAMES, LoopEvent

__all__ = [
    "EVENT_NAMES",
    "EventCapture",
    "EventSink",
    "JsonlSink",
    "LoopEvent",
    "OtelSink",
    "capture_events",
    "dispatch",
    "installed",
    "otel_sink_from_env",
]
