"""Queue fixtures: the real Redis on 127.0.0.1:6379 (a queue of its own per test) and real worker processes."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import httpx
import pytest

from tests.store.conftest import db_url, postgres_admin, postgres_url  # noqa: F401 - fixtures used by the tests here

REDIS_URL = os.environ.get("MARSRAG_TEST_REDIS", "redis://127.0.0.1:6379/15")
#: Seconds before a dead worker's job goes to another worker, in tests (production: an hour).
REDELIVER_AFTER = "3"
#: Bounds on waiting for processes and runs (nothing is timed: these only stop a hang).
WAIT_SECONDS = 120.0


def _redis_up() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=2):
            return True
    except OSError:
        return False


@pytest.fixture
def queue_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The environment of this test's servers, workers and executors: a broker and a queue of its own."""
    if not _redis_up():
        if os.environ.get("CI") == "true":
            pytest.fail("Redis is not running on 127.0.0.1:6379 (CI must start it)")
        pytest.skip("Redis is not running on 127.0.0.1:6379")
    env = {
        "MARSRAG_BROKER": REDIS_URL,
        "MARSRAG_QUEUE": f"marsrag-test-{uuid.uuid4().hex[:12]}",
        "MARSRAG_REDELIVER_AFTER": REDELIVER_AFTER,
        "MARSRAG_ACTION_TIMEOUT": str(WAIT_SECONDS),
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


def replay_script(path: Path, outputs: list[str]) -> str:
    """A replay LLM spec over ``outputs`` written to ``path``."""
    path.write_text("".join(json.dumps({"output": output}) + "\n" for output in outputs))
    return f"replay:{path}"


class Process:
    """A ``marsrag`` subprocess with its output in a log file."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        self.log = log
        self._out: IO[bytes] = log.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "marsrag", *args], stdout=self._out, stderr=subprocess.STDOUT, env=env
        )

    def output(self) -> str:
        """What it printed so far."""
        return self.log.read_text(errors="replace")

    def wait_dead(self) -> int:
        """Wait for it to exit by itself; its return code."""
        try:
            return self.proc.wait(timeout=WAIT_SECONDS)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{self.proc.args} did not exit:\n{self.output()}") from None

    def stop(self) -> None:
        """SIGTERM (a warm shutdown), then SIGKILL if it lingers."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._out.close()


@pytest.fixture
def spawn(queue_env: dict[str, str], tmp_path: Path) -> Iterator[Callable[..., Process]]:
    """Start ``marsrag`` subprocesses (workers, servers) on this test's queue; all stopped at the end."""
    started: list[Process] = []

    def start(
        *args: str, failpoints: str | None = None, name: str | None = None, env: dict[str, str] | None = None
    ) -> Process:
        """Start ``marsrag ARGS``; ``env`` adds to (or overrides) the test's queue environment."""
        environ = {**os.environ, **queue_env, "NO_COLOR": "1", **(env or {})}
        environ.pop("MARSRAG_FAILPOINTS", None)
        if failpoints:
            environ["MARSRAG_FAILPOINTS"] = failpoints
        process = Process(list(args), environ, tmp_path / f"{name or args[0]}-{len(started)}.log")
        started.append(process)
        return process

    yield start
    for process in started:
        process.stop()


def serving(base: str) -> Callable[[], bool]:
    """A check (for :func:`wait_for`) that the server at ``base`` answers its health check."""

    def check() -> bool:
        try:
            return httpx.get(f"{base}/health", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    return check


def wait_for(check: Callable[[], Any], what: str, on_timeout: Callable[[], str] = lambda: "") -> Any:
    """Poll ``check`` until it returns something truthy (a bounded wait, not a timing assertion)."""
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"gave up waiting for {what}\n{on_timeout()}")
