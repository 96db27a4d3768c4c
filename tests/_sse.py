"""Server-sent events in tests: the events of ``GET /api/runs/{run_id}/stream``, as a client reads them."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Event:
    """One event: its id (None when it has none), its kind (``task``, ``end``) and its JSON data."""

    id: str | None
    kind: str
    data: dict[str, Any]


def events(lines: Iterable[str]) -> list[Event]:
    """The events in a stream's lines (comments, the heartbeat among them, and a ``retry`` alone are skipped)."""
    found: list[Event] = []
    fields: dict[str, str] = {}
    for line in lines:
        if line.startswith(":"):
            continue
        if line:
            name, _, value = line.partition(": ")
            fields[name] = value
            continue
        if "event" in fields:
            found.append(Event(fields.get("id"), fields["event"], json.loads(fields["data"])))
        fields = {}
    return found
