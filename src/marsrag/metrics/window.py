"""Time windows for metrics: ``--since 7d|DATE`` and ``--until DATE``, over the runs' creation times.

Every time a user gives (``--since``, ``--until``, the dashboard's ``end`` day, the review's ``--week``) is
checked against one supported range, :data:`EARLIEST` to :data:`LATEST` (UTC days 1970-01-01 to 9000-12-31):
far enough inside what Python's dates hold that everything derived from it (the end of a day, the week
before, a 366-day series back, a timezone conversion) stays representable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from marsrag.errors import InputError

_RELATIVE = re.compile(r"^(\d{1,5})([dhw])$")
_UNITS = {"h": "hours", "d": "days", "w": "weeks"}
#: The first and last UTC day a window may touch (a date as an end means its end: up to LATEST's midnight).
FIRST_DAY = date(1970, 1, 1)
LAST_DAY = date(9000, 12, 31)
EARLIEST = datetime(FIRST_DAY.year, FIRST_DAY.month, FIRST_DAY.day, tzinfo=UTC)
LATEST = datetime(LAST_DAY.year + 1, 1, 1, tzinfo=UTC)
SUPPORTED = f"times from {FIRST_DAY.isoformat()} to {LAST_DAY.isoformat()} (UTC) are supported"


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


def parse_moment(text: str, *, now: datetime | None = None, end: bool = False, field: str = "since") -> datetime:
    """``7d``/``12h``/``2w`` (that long before now), or an ISO date or datetime (UTC when no offset is given).

    A bare date as an end means the end of that day. ``field`` names the parameter in errors.

    Raises:
        InputError: neither form, or a time outside the supported range (:data:`EARLIEST`..:data:`LATEST`).
    """
    now = now or datetime.now(UTC)
    value = text.strip()
    relative = _RELATIVE.match(value)
    try:
        if relative:
            moment = now - timedelta(**{_UNITS[relative.group(2)]: int(relative.group(1))})
        elif len(value) == 10:
            day = date.fromisoformat(value)
            if not FIRST_DAY <= day <= LAST_DAY:
                raise _out_of_range(field, text)
            moment = datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(days=1 if end else 0)
        else:
            parsed = datetime.fromisoformat(value)
            moment = parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
    except ValueError:
        raise InputError(
            f"{field} {text!r} is not a time: use 7d, 12h, 2w, a date (2026-11-30) or an ISO datetime", field=field
        ) from None
    except OverflowError:  # a datetime that leaves Python's years in UTC: 0001-01-01T00:00+01:00
        raise _out_of_range(field, text) from None
    if not EARLIEST <= moment <= LATEST:
        raise _out_of_range(field, text)
    return moment


def _out_of_range(field: str, text: str) -> InputError:
    return InputError(f"{field} {text!r} is out of range: {SUPPORTED}", field=field)


def check_day(day: date, *, field: str) -> date:
    """``day`` itself when it lies in the supported range (:data:`FIRST_DAY`..:data:`LAST_DAY`).

    Raises:
        InputError: an earlier or later day, naming ``field``.
    """
    if not FIRST_DAY <= day <= LAST_DAY:
        raise InputError(f"{field} {day.isoformat()} is out of range: {SUPPORTED}", field=field)
    return day


def window(since: str | None = None, until: str | None = None, *, now: datetime | None = None) -> Window:
    """A window from the CLI's ``--since``/``--until`` (the API's ``since``/``until``).

    Raises:
        InputError: an unreadable or out-of-range time, or ``since`` not before ``until``.
    """
    start = parse_moment(since, now=now, field="since") if since else None
    stop = parse_moment(until, now=now, end=True, field="until") if until else None
    if start is not None and stop is not None and start >= stop:
        raise InputError(f"--since ({since}) must be before --until ({until})", field="since")
    return Window(start, stop)
