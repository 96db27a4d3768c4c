"""The prepared statements' parameters are what SQLAlchemy's own execute would send, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import JSON, Column, Date, DateTime, Integer, MetaData, String, Table, insert
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Dialect

from marsrag.store._prepared import Prepared

TABLE = Table(
    "sample",
    MetaData(),
    Column("id", Integer, primary_key=True),
    Column("text", String),
    Column("moment", DateTime(timezone=True)),
    Column("day", Date),
    Column("doc", JSON(none_as_null=True)),
)
MOMENTS = [
    datetime(2026, 12, 2, 3, 4, 5, 678901, tzinfo=UTC),
    datetime(2026, 12, 2, 3, 4, 5, tzinfo=UTC),  # no microseconds
    datetime(999, 1, 2, 3, 4, 5, 6),  # naive, a three-digit year
    datetime(2026, 6, 1, 12, 0, tzinfo=timezone(timedelta(hours=2))),  # another offset
    None,
]
DAYS = [date(2026, 12, 2), date(5, 6, 7), datetime(2026, 12, 2, 23, 59), None]
DOCS = [[], [{"a": 1}], {"k": [1, 2.5, True, None]}, "text", None, ()]
DIALECTS = [pytest.param(sqlite.dialect(), id="sqlite"), pytest.param(postgresql.psycopg.dialect(), id="postgresql")]


def processed(dialect: Dialect, column: str, value: Any) -> Any:
    """``value`` as SQLAlchemy's own bind processor for the column converts it."""
    convert = TABLE.c[column].type.dialect_impl(dialect).bind_processor(dialect)
    return value if convert is None else convert(value)


def comparable(value: Any) -> Any:
    """A parameter in a form ``==`` compares: psycopg's JSON wrapper (which has no ``==``) as its type and value."""
    return (type(value), value.obj) if type(value).__name__ == "Json" else value


@pytest.mark.parametrize("dialect", DIALECTS)
def test_parameters_are_the_values_sqlalchemy_would_send(dialect: Dialect) -> None:
    """Dates, datetimes (any offset, no microseconds, early years) and JSON (empty lists too) convert alike."""
    keys = ("id", "text", "moment", "day", "doc")
    prepared = Prepared(insert(TABLE), dialect, keys)
    rows = [
        {"id": n, "text": "t", "moment": moment, "day": day, "doc": doc}
        for n, (moment, day, doc) in enumerate(zip(MOMENTS * 2, DAYS * 2, DOCS, strict=False))
    ]
    for row, params in zip(rows, prepared.params_of(rows), strict=True):
        expected = {key: comparable(processed(dialect, key, row[key])) for key in keys}
        values = params if isinstance(params, tuple) else tuple(params[key] for key in keys)
        assert {key: comparable(value) for key, value in zip(keys, values, strict=True)} == expected


def test_text_is_guarded_in_every_row_of_many() -> None:
    """A NUL or lone surrogate in any row's text becomes U+FFFD; the other rows stay as they are."""
    prepared = Prepared(insert(TABLE), sqlite.dialect(), ("id", "text"))
    rows = [{"id": 1, "text": "plain"}, {"id": 2, "text": "nul\x00 and \udc80"}, {"id": 3, "text": "ünï"}]
    assert prepared.params_of(rows) == [(1, "plain"), (2, "nul\ufffd and \ufffd"), (3, "ünï")]


def test_a_row_missing_a_value_is_refused() -> None:
    """Every bind of an INSERT comes from the row: a missing value is an error, never a silent NULL."""
    prepared = Prepared(insert(TABLE), sqlite.dialect(), ("id", "text"))
    with pytest.raises(KeyError):
        prepared.params({"id": 1})
