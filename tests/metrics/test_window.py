"""Metrics windows: every time a user gives is read into the supported range, or refused naming its field."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from marsrag.errors import InputError
from marsrag.metrics.review import day_window, parse_week
from marsrag.metrics.window import EARLIEST, FIRST_DAY, LAST_DAY, LATEST, check_day, parse_moment, window

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)
offsets = st.builds(timezone, st.timedeltas(min_value=timedelta(hours=-23), max_value=timedelta(hours=23)))
moments = st.datetimes(timezones=st.none() | offsets).map(lambda moment: moment.isoformat())
times = st.one_of(
    moments,
    st.dates().map(date.isoformat),
    st.builds(lambda n, unit: f"{n}{unit}", st.integers(0, 99_999), st.sampled_from("dhw")),
    st.text(max_size=40),
)


@given(since=times | st.none(), until=times | st.none())
def test_a_window_is_in_range_or_an_input_error_naming_its_field(since: str | None, until: str | None) -> None:
    """Any since/until: a window inside EARLIEST..LATEST whose days can be stepped, or an InputError with a field."""
    try:
        chosen = window(since, until, now=NOW)
    except InputError as error:
        assert error.field in ("since", "until")
        return
    for moment in (chosen.since, chosen.until):
        if moment is not None:
            assert EARLIEST <= moment <= LATEST
            day_window(moment.date() - timedelta(days=366), moment.date() + timedelta(days=7))  # no overflow


@pytest.mark.parametrize(
    ("text", "end", "field"),
    [
        ("9999-12-31", True, "until"),
        ("9999-12-31T23:00:00-05:00", True, "until"),
        ("0001-01-01T00:00:00+01:00", False, "since"),
        ("1969-12-31", False, "since"),
        ("9001-01-01", False, "since"),
        ("99999w", False, "since"),
    ],
)
def test_times_out_of_range_are_refused_naming_the_field(text: str, end: bool, field: str) -> None:
    """Times Python cannot step past, and those outside 1970..9000, are input errors, never OverflowError."""
    with pytest.raises(InputError, match=r"out of range: times from 1970-01-01 to 9000-12-31") as raised:
        parse_moment(text, now=NOW, end=end, field=field)
    assert raised.value.field == field and str(raised.value).startswith(f"{field} {text!r}")


def test_the_range_edges_are_supported() -> None:
    """The first and last supported days read as themselves; the last day's end is LATEST."""
    assert parse_moment("1970-01-01") == EARLIEST
    assert parse_moment("9000-12-31", end=True) == LATEST
    assert window("1970-01-01", "9000-12-31").until == LATEST
    assert check_day(FIRST_DAY, field="end") == FIRST_DAY and check_day(LAST_DAY, field="end") == LAST_DAY
    with pytest.raises(InputError, match=r"^end 9999-12-31 is out of range") as raised:
        check_day(date(9999, 12, 31), field="end")
    assert raised.value.field == "end"


@pytest.mark.parametrize("week", ["9999-W52", "0001-W01", "1969-W52", "9001-W01"])
def test_weeks_out_of_range_are_refused(week: str) -> None:
    """An ISO week of a year outside 1970..9000 is an input error naming the week."""
    with pytest.raises(InputError, match="out of range: ISO weeks of the years 1970 to 9000") as raised:
        parse_week(week)
    assert raised.value.field == "week"


def test_the_edge_weeks_and_the_weeks_before_them_are_representable() -> None:
    """1970-W01 (starting 1969-12-29) and 9000-W52 parse, and so do the days the review derives from them."""
    for week in ("1970-W01", "9000-W52"):
        monday = parse_week(week)
        day_window(monday - timedelta(days=7), monday + timedelta(days=6))
