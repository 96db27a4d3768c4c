"""Repairing JSON values stored before every text was made storable: an escaped lone surrogate or NUL becomes U+FFFD.

Up to migration 0013 a feedback comment (or any JSON value) could be stored holding ``\\ud800`` or ``\\u0000``
escapes: SQLite keeps them, and PostgreSQL's ``json`` accepts them on input but every JSON operator on the row
then fails ("Unicode low surrogate must follow a high surrogate"), so the metrics, ``--verify`` and ``--rebuild``
failed with it. Migration 0014 repairs such values once; ``metrics --rebuild`` repairs them again (rows written
by an older MarsRAG sharing the database). Only rows whose text holds an escape are looked at.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import JSON, ColumnClause, Connection, MetaData, Text, and_, cast, column, select, table, update

from marsrag.text import has_unstorable_escape, storable_value


@dataclass(frozen=True)
class JsonColumn:
    """A JSON column to repair, and the primary key that addresses its rows."""

    table: str
    column: str
    key: tuple[str, ...]


def json_columns(metadata: MetaData) -> list[JsonColumn]:
    """Every JSON column of ``metadata``'s tables (the schema as this MarsRAG defines it)."""
    return [
        JsonColumn(name, column_.name, tuple(key.name for key in tab.primary_key.columns))
        for name, tab in metadata.tables.items()
        for column_ in tab.columns
        if isinstance(column_.type, JSON)
    ]


def repair_json(connection: Connection, columns: Iterable[JsonColumn]) -> int:
    """Rewrite each value of ``columns`` holding an escaped lone surrogate or NUL, storable; how many were."""
    repaired = 0
    for target in columns:
        keys: list[ColumnClause[Any]] = [column(name) for name in target.key]
        value = column(target.column, JSON)
        rows = table(target.table, *keys, value)
        raw = cast(column(target.column), Text)
        # A cheap filter in the database (any escape), the exact test here.
        found = connection.execute(select(*keys, raw).select_from(rows).where(raw.like("%\\u%", escape="!")))
        for *key, text in found.all():
            if not has_unstorable_escape(text):
                continue
            fixed = storable_value(json.loads(text))
            where = and_(*(k == v for k, v in zip(keys, key, strict=True)))
            connection.execute(update(rows).where(where).values({target.column: fixed}))
            repaired += 1
    return repaired
