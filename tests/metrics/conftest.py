"""Metrics fixtures: the store conformance fixtures (a fresh SQLite file and PostgreSQL schema per test)."""

from __future__ import annotations

from tests.store.conftest import db_url, postgres_admin, postgres_url, store  # noqa: F401 - shared fixtures
