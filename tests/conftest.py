"""Test session setup: keep every test out of the real $HOME and off the network.

This runs before any test module imports CrewAI, so CrewAI's import-time files land in a throwaway home.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

_SANDBOX = Path(tempfile.mkdtemp(prefix="marsrag-tests-"))
for _name in ("home", "xdg-data", "xdg-config", "xdg-cache", "crewai", "marsrag"):
    (_SANDBOX / _name).mkdir()
os.environ.update(
    HOME=str(_SANDBOX / "home"),
    XDG_DATA_HOME=str(_SANDBOX / "xdg-data"),
    XDG_CONFIG_HOME=str(_SANDBOX / "xdg-config"),
    XDG_CACHE_HOME=str(_SANDBOX / "xdg-cache"),
    CREWAI_STORAGE_DIR=str(_SANDBOX / "crewai"),
    MARSRAG_HOME=str(_SANDBOX / "marsrag"),
    CREWAI_DISABLE_TELEMETRY="true",
    CREWAI_TRACING_ENABLED="false",
    OTEL_SDK_DISABLED="true",
    # Starlette's test client sends Host: testserver; a loopback server answers to loopback names only.
    MARSRAG_ALLOWED_HOSTS="testserver",
)

# Bounded examples keep `make test` well inside its budget on a 2-core machine; no deadlines (no timing).
settings.register_profile("default", max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("deep", max_examples=5000, deadline=None, suppress_health_check=list(HealthCheck))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") == "true" else "default"))

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def sandbox() -> Path:
    """The throwaway directory standing in for $HOME and CrewAI's storage in this test session."""
    return _SANDBOX


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The real-model tests first: the longest file (minutes on one worker) overlaps everything else."""
    items.sort(key=lambda item: "tests/realmodel/" not in item.nodeid.replace("\\", "/"))
