"""``marsrag serve`` as a real process: it serves on embedded defaults, and bad settings are one-line errors."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests._net import free_port

pytestmark = pytest.mark.crewai


def serve(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "marsrag", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )


def test_serve_starts_on_an_empty_default_store_and_answers(tmp_path: Path) -> None:
    """No options but a port: the default store in the data dir, the sample config, the composer; pages answer."""
    port = free_port()
    server = serve("--port", str(port), env={"MARSRAG_HOME": str(tmp_path / "home")})
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
                    assert json.loads(response.read()) == {"status": "ok"}
                    break
            except OSError:
                assert server.poll() is None, server.communicate()[1]
                assert time.monotonic() < deadline, "the server did not answer within 60 s"
                time.sleep(0.2)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as response:
            assert "No runs yet" in response.read().decode()
        assert (tmp_path / "home" / "marsrag.db").exists()
    finally:
        server.terminate()
        _, stderr = server.communicate(timeout=30)
    assert f"serving on http://127.0.0.1:{port}" in stderr and "Traceback" not in stderr


def test_serve_in_a_project_serves_its_own_store_and_says_so(tmp_path: Path) -> None:
    """In a project's folder the server opens the project's store (.marsrag/marsrag.db), not the data directory's,
    and its first line names both."""
    project = tmp_path / "bot"
    project.mkdir()
    (project / "marsrag.toml").write_text('name = "Bot"\n', encoding="utf-8")
    port = free_port()
    server = serve("--port", str(port), env={"MARSRAG_HOME": str(tmp_path / "home")}, cwd=project)
    try:
        assert server.stderr is not None
        first = server.stderr.readline()
    finally:
        server.terminate()
        server.communicate(timeout=30)
    store = f"sqlite:///{project.resolve()}/.marsrag/marsrag.db"
    assert first == f"marsrag: serving on http://127.0.0.1:{port} (project Bot, store {store})\n"
    assert (project / ".marsrag" / "marsrag.db").is_file() and not (tmp_path / "home" / "marsrag.db").exists()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--host", "0.0.0.0"), "MARSRAG_TOKEN"),
        (("--db", "mysql://nowhere/x"), "mysql"),
        (("--llm", "replay:/no/such/file.jsonl"), "/no/such/file.jsonl"),
        (("--config", "/no/such/config"), "/no/such/config"),
        (("--port", "70000"), "--port"),
    ],
)
def test_bad_settings_are_one_line_errors_with_exit_2(args: tuple[str, ...], needle: str, tmp_path: Path) -> None:
    """Each bad setting: exit 2, one line on stderr naming it, no traceback, no server."""
    env = {"MARSRAG_HOME": str(tmp_path / "home"), "MARSRAG_TOKEN": ""}
    proc = serve(*args, "--port", str(free_port()), env=env) if "--port" not in args else serve(*args, env=env)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 2, (stdout, stderr)
    assert len(stderr.strip().splitlines()) == 1 and needle in stderr and "Traceback" not in stderr


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_serve_logs_one_access_line_per_request(tmp_path: Path, log_format: str) -> None:
    """Each request is one line on stderr (--log-format text or json) with its method, path and status."""
    port = free_port()
    server = serve("--port", str(port), "--log-format", log_format, env={"MARSRAG_HOME": str(tmp_path / "home")})
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                    break
            except OSError:
                assert server.poll() is None, server.communicate()[1]
                assert time.monotonic() < deadline, "the server did not answer within 60 s"
                time.sleep(0.2)
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/runs/nope?x=1", timeout=5)
        except urllib.error.HTTPError as error:
            assert error.code == 404
    finally:
        server.terminate()
        _, stderr = server.communicate(timeout=30)
    lines = [line for line in stderr.splitlines() if "/runs/nope" in line]
    assert len(lines) == 1, stderr
    if log_format == "json":
        entry = json.loads(lines[0])
        assert (entry["method"], entry["path"], entry["status"]) == ("GET", "/runs/nope?x=1", 404)
        assert entry["client"].startswith("127.0.0.1:") and entry["time"].endswith("+00:00")
    else:
        assert '"GET /runs/nope?x=1 HTTP/1.1" 404' in lines[0]
    assert any("/health" in line for line in stderr.splitlines()) and "Traceback" not in stderr


def test_a_port_in_use_is_one_line_naming_it_and_exit_2_at_once(tmp_path: Path) -> None:
    """Another process listens on the port: exit 2 within seconds, one line naming port and host, no serving."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        started = time.monotonic()
        proc = serve("--port", str(port), env={"MARSRAG_HOME": str(tmp_path / "home")})
        stdout, stderr = proc.communicate(timeout=60)
        elapsed = time.monotonic() - started
    assert proc.returncode == 2 and stdout == "", (stdout, stderr)
    assert (
        stderr
        == f"marsrag: error: port {port} on 127.0.0.1 is in use by another process: stop it or choose another --port\n"
    )
    # Bound before the app is made (CrewAI alone takes seconds to import).
    assert elapsed < 4, elapsed


def test_a_host_that_is_not_this_machines_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """192.0.2.1 (TEST-NET-1, documentation only) is no address of this machine."""
    proc = serve("--host", "192.0.2.1", "--port", str(free_port()), env={"MARSRAG_HOME": str(tmp_path / "home")})
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 2 and stdout == ""
    assert stderr.startswith("marsrag: error: cannot serve on 192.0.2.1: not an address of this machine")
    assert len(stderr.splitlines()) == 1


@pytest.mark.skipif(
    os.geteuid() == 0 or Path("/proc/sys/net/ipv4/ip_unprivileged_port_start").read_text().strip() == "0",
    reason="this user may bind any port",
)
def test_a_privileged_port_without_privileges_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """Port 1 as an ordinary user: the line says the port needs privileges."""
    proc = serve("--port", "1", env={"MARSRAG_HOME": str(tmp_path / "home")})
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 2 and stdout == ""
    assert stderr.startswith("marsrag: error: port 1 on 127.0.0.1 needs privileges") and len(stderr.splitlines()) == 1


def test_port_0_serves_on_the_port_the_system_picked(tmp_path: Path) -> None:
    """--port 0: the line names the real port, and the server answers on it."""
    server = serve("--port", "0", env={"MARSRAG_HOME": str(tmp_path / "home")})
    try:
        assert server.stderr is not None
        line = server.stderr.readline()
        port = int(line.split("http://127.0.0.1:", 1)[1].split()[0])
        assert port > 0
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=30) as response:
            assert json.loads(response.read()) == {"status": "ok"}
    finally:
        server.terminate()
        server.communicate(timeout=30)
