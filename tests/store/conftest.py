"""Store fixtures: one ``db_url`` per backend (a fresh SQLite file, a fresh PostgreSQL schema) and a ``store``.

PostgreSQL tests need the server at ``$MARSRAG_TEST_POSTGRES`` (default: trust auth on 127.0.0.1:5432,
database ``test``). When it is unreachable they are skipped, except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine
from sqlalchemy.exc import OperationalError

from marsrag.store import RunStore, open_store

POSTGRES_URL = os.environ.get("MARSRAG_TEST_POSTGRES", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
BACKENDS = ("sqlite", "postgresql")


@pytest.fixture(scope="session")
def postgres_admin() -> Iterator[Engine]:
    """An engine on the test PostgreSQL server, for creating and dropping schemas; skips (or fails) when down."""
    engine = create_engine(POSTGRES_URL, connect_args={"connect_timeout": 5})
    try:
        with engine.connect():
            pass
    except OperationalError as error:
        engine.dispose()
        reason = f"PostgreSQL at {POSTGRES_URL} is unreachable ({str(error.orig).splitlines()[0]})"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}; CI=true requires it")
        pytest.skip(f"{reason}; start it (pg_isready -h 127.0.0.1) or set MARSRAG_TEST_POSTGRES")
    yield engine
    engine.dispose()


@pytest.fixture
def postgres_url(postgres_admin: Engine) -> Iterator[str]:
    """The URL of a fresh, empty schema on the test server (dropped afterwards), selected via search_path."""
    schema = f"marsrag_test_{uuid.uuid4().hex[:16]}"
    with postgres_admin.begin() as connection:
        connection.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
    separator = "&" if "?" in POSTGRES_URL else "?"
    yield f"{POSTGRES_URL}{separator}options=-csearch_path%3D{schema}"
    with postgres_admin.begin() as connection:
        connection.exec_driver_sql(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of a fresh database on each backend; the SQLite file's directory exists, the file does not yet.

    (Only MarsRAG's data directory is created on demand: see tests/store/test_open_store.py.)
    """
    if request.param == "sqlite":
        (tmp_path / "store").mkdir(exist_ok=True)
        return f"sqlite:///{tmp_path}/store/marsrag.db"
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
def store(db_url: str) -> Iterator[RunStore]:
    """An open store on a fresh database of each backend."""
    with open_store(db_url) as opened:
        yield opened
