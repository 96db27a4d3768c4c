"""Arize Phoenix, a real OpenTelemetry receiver, started for the tracing tests and read back through its REST API.

Phoenix lives in a virtualenv of its own (``make phoenix``: ``.cache/phoenix``), serves offline with its working
directory in a temporary folder (never ``$HOME``), takes OTLP/HTTP at ``/v1/traces`` on its HTTP port and OTLP/gRPC
on its gRPC port, and lists a project's spans at ``GET /v1/projects/{project}/spans``.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests._net import free_port

ROOT = Path(__file__).resolve().parents[2]
#: Where ``make phoenix`` puts Phoenix's virtualenv.
VENV = Path(os.environ.get("MARSRAG_PHOENIX_VENV", ROOT / ".cache" / "phoenix"))
#: A bound on waiting for Phoenix to start and for spans to arrive (nothing is timed: this only stops a hang).
WAIT_SECONDS = 180.0


@dataclass(frozen=True)
class Phoenix:
    """A running Phoenix: its OTLP endpoints and its REST API."""

    http_port: int
    grpc_port: int
    log: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def grpc_endpoint(self) -> str:
        return f"http://127.0.0.1:{self.grpc_port}"

    def spans(self, project: str = "default") -> list[dict[str, Any]]:
        """Every span of ``project`` Phoenix has stored, all pages."""
        found: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"limit": 1000, **({"cursor": cursor} if cursor else {})}
            response = httpx.get(f"{self.base}/v1/projects/{project}/spans", params=params, timeout=30)
            if response.status_code == 404:
                return found  # no span has reached the project yet
            response.raise_for_status()
            body = response.json()
            found.extend(body["data"])
            cursor = body.get("next_cursor")
            if not cursor:
                return found

    def trace(self, trace_id: str, project: str = "default") -> list[dict[str, Any]]:
        """The spans of one trace."""
        return [span for span in self.spans(project) if span["context"]["trace_id"] == trace_id]

    def wait_for_spans(self, count: int, match: Any, what: str, project: str = "default") -> list[dict[str, Any]]:
        """Poll until at least ``count`` spans satisfy ``match``; those spans (a bounded wait, not a timing check)."""
        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            found = [span for span in self.spans(project) if match(span)]
            if len(found) >= count or time.monotonic() > deadline:
                assert len(found) >= count, f"Phoenix got {len(found)} of the {count} spans of {what}"
                return found
            time.sleep(0.3)


def installed() -> bool:
    """Whether Phoenix's virtualenv is there (``make phoenix``)."""
    return (VENV / "bin" / "phoenix").exists()


@contextmanager
def running(folder: Path) -> Iterator[Phoenix]:
    """Start Phoenix with its working directory in ``folder``; stop it at the end."""
    folder.mkdir(parents=True, exist_ok=True)
    phoenix = Phoenix(free_port(), free_port(), folder / "phoenix.log")
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(folder),
        "PHOENIX_WORKING_DIR": str(folder / "work"),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(phoenix.http_port),
        "PHOENIX_GRPC_PORT": str(phoenix.grpc_port),
        # Phoenix is the receiver here, not a traced application: it must not export its own spans anywhere.
        "OTEL_SDK_DISABLED": "true",
    }
    with phoenix.log.open("wb") as out:
        process = subprocess.Popen(
            [str(VENV / "bin" / "phoenix"), "serve"], stdout=out, stderr=subprocess.STDOUT, env=env, cwd=folder
        )
        try:
            _wait_serving(phoenix, process)
            yield phoenix
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_serving(phoenix: Phoenix, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"Phoenix exited ({process.returncode}):\n{phoenix.log.read_text(errors='replace')}")
        try:
            if httpx.get(f"{phoenix.base}/v1/projects", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"Phoenix did not serve:\n{phoenix.log.read_text(errors='replace')[-3000:]}")
