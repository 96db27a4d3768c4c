"""Time windows for metrics: ``--since 7d|DATE`` and ``--until DATE``, over the runs' creation times."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from marsrag.errors import InputError

_RELATIVE = re.compile(r"^(\d{1,5})([dhw])$")
_UNITS = {"h": "hours", "d": "days", "w": "weeks"}


@dataclass(frozen=True)
class Window:
    """Runs created at or after ``since`` and before ``until`` (None: unbounded)."""

    since: datetime | None = None
    until: datetime | None = None

    def describe(self) -> str:
        """The window for a person."""
        if self.since is None and self.until is None:
            return "all history"
        start = self.since.isoformat(timespec="minutes") if self.since else "the beginning"
        end = self.until.isoformat(timespec="minutes") if self.until else "now"
        return f"{start} to {end}"


def parse_moment(text: str, *, now: datetime | None = None, end: bool = False) -> datetime:
    """``7d``/``12h``/``2w`` (that long before now), or an ISO date or datetime (UTC when no offset is given).

    A bare date as an end means the end of that day.

    Raises:
        InputError: neither form.
    """
    now = now or datetime.now(UTC)
    value = text.strip()
    relative = _RELATIVE.match(value)
    if relative:
        return now - timedelta(**{_UNITS[relative.group(2)]: int(relative.group(1))})
    try:
        if len(value) == 10:
            day = date.fromisoformat(value)
            moment = datetime(day.year, day.month, day.day, tzinfo=UTC)
            return moment + timedelta(days=1) if end else moment
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InputError(f"{text!r} is not a time: use 7d, 12h, 2w, a date (2026-11-30) or an ISO datetime") from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def window(since: str | None = None, until: str | None = None, *, now: datetime | None = None) -> Window:
    """A window from the CLI's ``--since``/``--until``.

    Raises:
        InputError: an unreadable time, or ``since`` not before ``until``.
    """
    start = parse_moment(since, now=now) if since else None
    stop = parse_moment(until, now=now, end=True) if until else None
    if start is not None and stop is not None and start >= stop:
        raise InputError(f"--since ({since}) must be before --until ({until})")
    return Window(start, stop)
