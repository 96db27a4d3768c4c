"""CrewAI is imported offline and contained, in a real subprocess with its own throwaway home."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.crewai

PROBE = """
import json, os
import marsrag.integrations.crewai
keys = ["CREWAI_DISABLE_TELEMETRY", "CREWAI_TRACING_ENABLED", "OTEL_SDK_DISABLED", "CREWAI_STORAGE_DIR"]
print(json.dumps({key: os.environ.get(key) for key in keys}))
"""


def probe(tmp_path: Path, **extra: str) -> dict[str, str | None]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CREWAI_", "OTEL_"))}
    env.update(HOME=str(tmp_path / "home"), MARSRAG_HOME=str(tmp_path / "data"), **extra)
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, env=env, check=True)
    result: dict[str, str | None] = json.loads(proc.stdout.decode().strip().splitlines()[-1])
    return result


def test_crewai_is_offline_and_stores_in_our_data_dir(tmp_path: Path) -> None:
    """Importing the binding sets telemetry, tracing and OTel off and points CrewAI's storage at our data."""
    seen = probe(tmp_path)
    assert seen == {
        "CREWAI_DISABLE_TELEMETRY": "true",
        "CREWAI_TRACING_ENABLED": "false",
        "OTEL_SDK_DISABLED": "true",
        "CREWAI_STORAGE_DIR": str((tmp_path / "data" / "crewai").resolve()),
    }


def test_user_configured_opentelemetry_is_left_enabled(tmp_path: Path) -> None:
    """When the user configured an OTLP endpoint, the OTel SDK is not disabled."""
    assert probe(tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:4318")["OTEL_SDK_DISABLED"] is None
