"""Keep CrewAI offline and contained: environment set before CrewAI is ever imported.

CrewAI phones home (telemetry, tracing) and writes files under the home directory unless told otherwise;
MarsRAG runs with no network and keeps CrewAI's files in its own data folder (the project's, inside one).
"""

from __future__ import annotations

import os
from pathlib import Path

from marsrag.project import current_data_dir, prepare_data_dir

# Any of these means the user configured OpenTelemetry themselves: then the SDK stays enabled.
_OTEL_CONFIGURED = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
    "OTEL_TRACES_EXPORTER",
)

#: The folder CrewAI's files went to in this process (at most one).
_CHOSEN: list[Path] = []


def prepare_crewai_environment(base: Path | None = None) -> Path:
    """Set CrewAI's telemetry, tracing and storage variables; return CrewAI's storage directory.

    Must run before ``import crewai`` (CrewAI reads them at import time). Idempotent: without ``base``, the folder
    of the first call stays (the pytest plugin names a temporary one, which a later import must not move back
    into the project it tests); with none before, the project's data folder, else the data directory.
    """
    folder = base or (_CHOSEN[0] if _CHOSEN else current_data_dir())
    _CHOSEN[:] = [folder]
    prepare_data_dir(folder)
    storage = folder / "crewai"
    storage.mkdir(exist_ok=True)
    os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"
    os.environ["CREWAI_TRACING_ENABLED"] = "false"
    os.environ["CREWAI_STORAGE_DIR"] = str(storage.resolve())
    if not any(os.environ.get(name) for name in _OTEL_CONFIGURED):
        os.environ["OTEL_SDK_DISABLED"] = "true"
    return storage
