"""The task commit's hot statements, compiled once by SQLAlchemy and run on the DBAPI cursor of the transaction.

A task commit is a handful of small statements, and SQLAlchemy's execution layer costs more per statement than
SQLite takes to run one (about 35 us against 2-8 us; ``bench/store_bench.py`` measures the commit). For those
statements the store compiles the SQL once per dialect and, at each commit:

- converts the parameters with the bind processors of the columns' own SQLAlchemy types, the ones an ordinary
  ``execute`` applies, so the stored values are the same and read back the same through SQLAlchemy (an empty
  JSON list, most of a commit's JSON values, is serialized once per statement, not once per value);
- applies the engine's text guard (``marsrag.text.storable``: a NUL or lone surrogate becomes U+FFFD), which an
  ordinary ``execute`` applies in its ``before_cursor_execute`` hook;
- runs them on the DBAPI cursor of the transaction's connection: a SQLAlchemy transaction's (which began it, on
  SQLite with a ``BEGIN IMMEDIATE`` sent to the DBAPI connection too, see ``_engine.DIRECT``, and will commit
  or roll it back), or on SQLite a pooled connection's own transaction (``_direct``);
- re-raises a database error as SQLAlchemy's own (``DBAPIError.instance``), marked (and the connection
  invalidated) when the dialect says the connection was lost, so the store's retries see what they would
  have seen.

Everything else the store does goes through SQLAlchemy Core as usual.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime
from operator import attrgetter, itemgetter
from typing import Any

from sqlalchemy import JSON, Connection, Date, DateTime
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import StatementError
from sqlalchemy.pool import PoolProxiedConnection
from sqlalchemy.sql import ClauseElement
from sqlalchemy.types import TypeEngine

from marsrag.store._engine import dbapi_error
from marsrag.text import has_unstorable, storable

Params = tuple[Any, ...] | dict[str, Any]


class Prepared:
    """One statement compiled for one dialect, with its parameters' and returned columns' converters."""

    def __init__(self, statement: ClauseElement, dialect: Dialect, keys: Sequence[str] | None = None) -> None:
        """Compile ``statement``; ``keys``: the columns an INSERT's rows give (all of them, in any order)."""
        compiled = statement.compile(dialect=dialect, column_keys=list(keys) if keys is not None else None)
        self.sql = compiled.string
        self._positional = bool(compiled.positional)  # type: ignore[attr-defined]
        binds = compiled.binds  # type: ignore[attr-defined]  # an SQLCompiler's, for a statement
        order = compiled.positiontup  # type: ignore[attr-defined]  # the binds in order, when positional
        names = list(order or ()) if self._positional else list(binds)
        self._names = names
        processors = [_converter(binds[name].type, dialect) for name in names]
        self._converting = [(index, convert) for index, convert in enumerate(processors) if convert is not None]
        # Values written into the statement itself (``status == "running"``) are binds with a value of their own.
        self._fixed = {name: binds[name].effective_value for name in names}
        # Without such values (an INSERT's rows, the heartbeat) a row's values are fetched in one C call; a
        # missing one is a KeyError, as SQLAlchemy refuses a required bind without a value.
        everyone_given = len(names) > 1 and all(binds[name].required for name in names)
        self._fetch = itemgetter(*names) if everyone_given else None
        # What comes back: an UPDATE's or INSERT's RETURNING columns, or a SELECT's columns.
        returned = getattr(statement, "_returning", ()) or getattr(statement, "selected_columns", ()) or ()
        self._results = [column.type.dialect_impl(dialect).result_processor(dialect, None) for column in returned]

    def params(self, values: Mapping[str, Any]) -> Params:
        """The DBAPI parameters for one row of values (by bind name)."""
        return self.params_of((values,))[0]

    def params_of(self, rows: Sequence[Mapping[str, Any]]) -> list[Params]:
        """The DBAPI parameters for rows of values (by bind name), in order."""
        if self._fetch is not None:
            fetch = self._fetch
            lists = [list(fetch(values)) for values in rows]
        else:
            fixed, names = self._fixed, self._names
            lists = [[values[name] if name in values else fixed[name] for name in names] for values in rows]
        converting = self._converting
        for out in lists:
            for index, convert in converting:
                out[index] = convert(out[index])
        # One check of all the rows' text in C for the common case (ASCII, no NUL), else value by value.
        joined = "".join([value for out in lists for value in out if type(value) is str])
        if not joined.isascii() or "\x00" in joined:
            lists = [[storable(v) if type(v) is str and has_unstorable(v) else v for v in out] for out in lists]
        if self._positional:
            return [tuple(out) for out in lists]
        names = self._names
        return [dict(zip(names, out, strict=True)) for out in lists]

    def row(self, raw: Sequence[Any] | None) -> tuple[Any, ...] | None:
        """A returned row with its columns converted as SQLAlchemy would (None stays None)."""
        if raw is None:
            return None
        return tuple(convert(value) if convert else value for convert, value in zip(self._results, raw, strict=True))


def _converter(type_: TypeEngine[Any], dialect: Dialect) -> Callable[[Any], Any] | None:
    """The bind processor of ``type_`` on ``dialect`` (None when values go as they are)."""
    impl = type_.dialect_impl(dialect)
    convert = impl.bind_processor(dialect)
    if convert is None:
        return None
    if isinstance(type_, JSON):
        # An empty list is most JSON values of a commit (no errors, no citations): serialized once, not each time.
        empty = convert([])
        return lambda value: empty if type(value) is list and not value else convert(value)
    storage = getattr(impl, "_storage_format", None)  # SQLite's DATETIME and DATE: text in this format
    if isinstance(storage, str) and isinstance(type_, DateTime | Date):
        return _formatted(convert, storage, datetime if isinstance(type_, DateTime) else date)
    return convert


_FIELD = re.compile(r"%\((\w+)\)")


def _formatted(convert: Callable[[Any], Any], storage: str, kind: type[date]) -> Callable[[Any], Any]:
    """``convert`` (SQLite's processor of a date or datetime type), faster for values of exactly ``kind``.

    SQLAlchemy fills the storage format from a dict per value; the same format filled from a tuple of the
    value's fields takes half the time. Any other value (None, a subclass) goes to ``convert``, and so does
    every value if the two disagree on a probe.
    """
    positional, fields = _FIELD.sub("%", storage), attrgetter(*_FIELD.findall(storage))
    probe = datetime(2001, 2, 3, 4, 5, 6, 7) if kind is datetime else date(2001, 2, 3)
    if positional % fields(probe) != convert(probe):
        return convert
    return lambda value: positional % fields(value) if type(value) is kind else convert(value)


class Cursor:
    """The DBAPI cursor of a pooled connection's transaction, running :class:`Prepared` statements."""

    def __init__(
        self, dialect: Dialect, pooled: PoolProxiedConnection, invalidate: Callable[[BaseException], None]
    ) -> None:
        """A cursor of ``pooled``; ``invalidate`` discards the connection when an error says it was lost."""
        self._dialect, self._pooled, self._invalidate = dialect, pooled, invalidate
        self._error = dialect.loaded_dbapi.Error
        self._cursor = pooled.driver_connection.cursor()  # type: ignore[union-attr]

    @classmethod
    def of(cls, connection: Connection) -> Cursor:
        """A cursor of a SQLAlchemy connection's transaction (which began, and will end, the transaction)."""
        return cls(connection.dialect, connection.connection, connection.invalidate)

    def one(self, prepared: Prepared, values: Mapping[str, Any]) -> tuple[Any, ...] | None:
        """Execute with one row of values; the first returned row (None when none)."""
        params = prepared.params(values)
        cursor = self._cursor
        # try/except, not a context manager: this runs several times per commit.
        try:
            cursor.execute(prepared.sql, params)
            return prepared.row(cursor.fetchone() if cursor.description else None)
        except self._error as error:
            raise self.error(prepared.sql, params, error) from error

    def all(self, prepared: Prepared, values: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        """Execute with one row of values; every returned row."""
        params = prepared.params(values)
        cursor = self._cursor
        try:
            cursor.execute(prepared.sql, params)
            rows = cursor.fetchall() if cursor.description else []
        except self._error as error:
            raise self.error(prepared.sql, params, error) from error
        return [prepared.row(raw) for raw in rows]  # type: ignore[misc]  # a row in, a row out

    def many(self, prepared: Prepared, rows: Sequence[Mapping[str, Any]]) -> None:
        """Execute once per row of values (one ``executemany``)."""
        if not rows:
            return
        params = prepared.params_of(rows)
        try:
            self._cursor.executemany(prepared.sql, params)
        except self._error as error:
            raise self.error(prepared.sql, params, error) from error

    def error(self, statement: str | None, params: Any, error: Any) -> StatementError:
        """A DBAPI error of this cursor's connection as SQLAlchemy raises it (see ``_engine.dbapi_error``)."""
        return dbapi_error(self._dialect, self._invalidate, statement, params, error, self._pooled, self._cursor)

    def close(self) -> None:
        """Close the cursor (the connection stays with its owner)."""
        self._cursor.close()
