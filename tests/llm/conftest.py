"""Fixtures for the LLM boundary's tests: a fresh negotiator, a real SQLite store, the shipped sample."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from marsrag.llm.structured import NEGOTIATOR
from tests.runtime.conftest import sample, store  # noqa: F401 - shared fixtures


@pytest.fixture(autouse=True)
def fresh_negotiator() -> Iterator[None]:
    """No test sees what a server refused in another test (the negotiator lives as long as the process)."""
    NEGOTIATOR.forget()
    yield
    NEGOTIATOR.forget()
