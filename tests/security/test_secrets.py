"""Secrets never leak: the bearer token, LLM API keys in the environment and the database password stay out of
CLI output, the server's output and answers, logging, the events file, run documents and error messages.

The database is the real PostgreSQL server (trust auth: it accepts any password, so the URL can carry one).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine
from sqlalchemy.exc import OperationalError

from marsrag.errors import StoreError
from tests.web.conftest import answer

pytestmark = pytest.mark.crewai

PASSWORD = "s3cr3t-Pw-7731"
TOKEN = "tok-SECRET-6e1f0c2a9b-" + "k" * 16
API_KEYS = {"OPENAI_API_KEY": "sk-SECRET-openai-1c9a", "ANTHROPIC_API_KEY": "sk-ant-SECRET-22f0"}
SECRETS = (PASSWORD, TOKEN, *API_KEYS.values())
ADMIN_URL = os.environ.get("MARSRAG_TEST_POSTGRES", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


def assert_no_secret(text: str, where: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{where} shows {secret!r}"


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh schema on the test server, reached through a URL carrying :data:`PASSWORD`."""
    admin = create_engine(ADMIN_URL, connect_args={"connect_timeout": 5})
    try:
        with admin.connect():
            pass
    except OperationalError as error:
        admin.dispose()
        if os.environ.get("CI") == "true":
            pytest.fail(f"PostgreSQL at {ADMIN_URL} is unreachable: {error.orig}")
        pytest.skip(f"PostgreSQL at {ADMIN_URL} is unreachable")
    schema = f"marsrag_sec_{uuid.uuid4().hex[:12]}"
    with admin.begin() as connection:
        connection.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
    try:
        yield f"postgresql+psycopg://postgres:{PASSWORD}@127.0.0.1:5432/test?options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as connection:
            connection.exec_driver_sql(f'DROP SCHEMA "{schema}" CASCADE')
        admin.dispose()


@pytest.fixture
def env(tmp_path: Path, pg_url: str) -> dict[str, str]:
    """A process environment holding every secret: the token, API keys, and the store URL with its password."""
    home = tmp_path / "marsrag-home"
    return {
        **os.environ,
        **API_KEYS,
        "MARSRAG_TOKEN": TOKEN,
        "MARSRAG_DB": pg_url,
        "MARSRAG_HOME": str(home),
        "HOME": str(tmp_path / "home"),
    }


def replay(tmp_path: Path, outputs: list[str]) -> str:
    path = tmp_path / f"replay-{uuid.uuid4().hex[:8]}.jsonl"
    path.write_text("".join(json.dumps({"output": o}) + "\n" for o in outputs), encoding="utf-8")
    return f"replay:{path}"


def marsrag(*args: str, env: dict[str, str], timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "marsrag", *args], capture_output=True, text=True, env=env, timeout=timeout, check=False
    )


def test_cli_output_and_the_events_file_hold_no_secret(env: dict[str, str], pg_url: str, tmp_path: Path) -> None:
    """run (text and JSON, store from the environment and from --db), runs list/show, metrics, review, an error."""
    llm = replay(tmp_path, [answer()] * 6)
    outputs = []
    first = marsrag("run", "Checkout latency breached its SLO", "--llm", llm, env=env)
    assert first.returncode == 0, first.stderr
    outputs.append(first)
    second = marsrag("run", "second goal", "--llm", replay(tmp_path, [answer()] * 3), "--db", pg_url, env=env)
    assert second.returncode == 0 and "***" in second.stdout, second.stdout  # the "State stored in" line, masked
    outputs.append(second)
    shown = marsrag("run", "json goal", "--llm", replay(tmp_path, [answer()] * 3), "--format", "json", env=env)
    run_id = json.loads(shown.stdout)["run_id"]
    outputs += [
        shown,
        marsrag("runs", "list", env=env),
        marsrag("runs", "list", "--format", "json", env=env),
        marsrag("runs", "show", run_id, env=env),
        marsrag("runs", "show", run_id, "--format", "json", env=env),
        marsrag("metrics", "--format", "json", env=env),
        marsrag("review", "--out", str(tmp_path / "review.html"), env=env),
    ]
    missing = marsrag("runs", "show", "no-such-run", env=env)
    assert missing.returncode != 0 and "no-such-run" in missing.stderr
    outputs.append(missing)
    for proc in outputs:
        assert_no_secret(proc.stdout + proc.stderr, " ".join(str(a) for a in proc.args[3:5]))
    events = Path(env["MARSRAG_HOME"]) / "events.jsonl"
    assert events.stat().st_size > 0
    assert_no_secret(events.read_text(encoding="utf-8"), "events.jsonl")
    assert_no_secret((tmp_path / "review.html").read_text(encoding="utf-8"), "review.html")


def test_a_failing_llm_call_shows_no_api_key(env: dict[str, str], tmp_path: Path) -> None:
    """A real CrewAI model string with an unreachable endpoint: the run fails, the key is in no output or record."""
    db = f"sqlite:///{tmp_path}/llm.db"
    proc = marsrag(
        "run", "goal", "--llm", "openai/gpt-4o-mini", "--base-url", "http://127.0.0.1:1/v1", "--db", db,
        "--format", "json", env=env, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert_no_secret(proc.stdout + proc.stderr, "marsrag run with an unreachable LLM")
    # CrewAI's event bus may print a warning to stdout before the document (reported: it breaks --format json).
    document = json.loads(proc.stdout[proc.stdout.index('{"') :])
    assert document["status"] == "failed" and document["status_reason"]


@pytest.mark.parametrize(
    "template",
    [
        "postgresql+psycopg://postgres:{pw}@127.0.0.1:1/test",  # unreachable
        "postgresql+psycopg://postgres:{pw}@127.0.0.1:5432/no_such_database_x",  # refused by the server
        "postgresql+psycopg://postgres:{pw}@127.0.0.1:notaport/test",  # unparseable
        "postgresql+psycopg://postgres:{pw}@[::1/test",  # unparseable host
        "postgresql+psycopg://postgres:{pw}@127.0.0.1:5432/test?connect_timeout=abc",  # bad option
        "postgresql+psycopg://postgres:{pw}@127.0.0.1:5432/test?sslmode=bogus",  # bad option, libpq's words
        "postgresql+psycopg://postgres:{pw}%2Fx@127.0.0.1:1/test",  # percent-encoded
        "postgresql+psycopg://postgres:{pw}/x@127.0.0.1:1/test",  # a slash in the password
        "mysql://root:{pw}@127.0.0.1/db",  # unsupported scheme
        "postgresql+psycopg://postgres:{pw}@127.0.0.1:1/test?options=-c%20statement_timeout%3D1",
    ],
)
def test_bad_database_urls_never_echo_the_password(template: str, tmp_path: Path) -> None:
    """StoreError messages and the CLI's one-line error mask the password, whatever is wrong with the URL."""
    from marsrag.store import open_store

    url = template.format(pw=PASSWORD)
    with pytest.raises(StoreError) as raised:
        open_store(url).close()
    assert_no_secret(str(raised.value), "StoreError")
    env = {**os.environ, "MARSRAG_HOME": str(tmp_path / "h"), "HOME": str(tmp_path / "home")}
    proc = marsrag("runs", "list", "--db", url, env=env, timeout=60)
    assert proc.returncode != 0 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert_no_secret(proc.stdout + proc.stderr, "marsrag runs list --db")


def test_a_password_with_a_raw_at_sign_is_not_echoed(tmp_path: Path) -> None:
    """``postgres:p@SECRET@host``: the part of the password after the first '@' is masked too."""
    from marsrag.store import open_store

    with pytest.raises(StoreError) as raised:
        open_store(f"postgresql+psycopg://postgres:p@{PASSWORD}@127.0.0.1:1/test").close()
    assert_no_secret(str(raised.value), "StoreError")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _get(url: str, headers: dict[str, str] | None = None, data: bytes | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_the_server_shows_no_secret_in_its_output_or_answers(env: dict[str, str], tmp_path: Path) -> None:
    """``marsrag serve`` with every secret in its environment: its stderr/stdout and every answer are clean."""
    port = _free_port()
    llm = replay(tmp_path, [answer()] * 6)
    server = subprocess.Popen(
        [sys.executable, "-m", "marsrag", "serve", "--port", str(port), "--llm", llm],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    bodies: list[str] = []
    try:
        deadline = time.monotonic() + 120  # only stops a hang; nothing asserts on time
        while True:
            try:
                if _get(f"{base}/health")[0] == 200:
                    break
            except OSError:
                pass
            assert server.poll() is None, server.communicate()[1]
            assert time.monotonic() < deadline, "the server did not answer"
            time.sleep(0.2)
        json_headers = {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"}
        status, started = _get(f"{base}/api/runs", json_headers, json.dumps({"goal": "g"}).encode())
        assert status == 202, started
        run_id = json.loads(started)["run_id"]
        for _ in range(600):
            status, document = _get(f"{base}/api/runs/{run_id}")
            if json.loads(document)["status"] not in ("pending", "running"):
                break
            time.sleep(0.1)
        bodies.append(document)
        for path in ("/health", "/api/runs", f"/runs/{run_id}", "/", "/dashboard", "/metrics", "/api/metrics"):
            status, body = _get(base + path)
            assert status == 200, path
            bodies.append(body)
        for path in ("/api/runs/no-such-run", "/runs/no-such-run", "/sessions/nope", "/api/runs/x/tasks/y/repair"):
            bodies.append(_get(base + path)[1])
    finally:
        server.terminate()
        stdout, stderr = server.communicate(timeout=60)
    assert "serving on" in stderr and "***" in stderr, stderr  # the store URL is shown, masked
    assert_no_secret(stdout + stderr, "the server's output")
    for body in bodies:
        assert_no_secret(body, "an answer of the server")


def test_logging_in_process_holds_no_secret(
    pg_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """Every log record (all loggers, DEBUG) and all output of the app and a run, including a failing request."""
    from marsrag.settings import resolve_settings
    from marsrag.web.app import create_app
    from marsrag.web.settings import WebSettings

    for name, value in API_KEYS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("MARSRAG_TOKEN", TOKEN)
    caplog.set_level(logging.DEBUG)
    app = create_app(WebSettings(resolve_settings(db=pg_url, llm=replay(tmp_path, [answer()] * 3)), run_threads=1))
    with TestClient(app, raise_server_exceptions=False) as client:
        assert client.post("/api/runs", json={"goal": "g"}).status_code == 202
        assert app.state.backend.executor.wait(timeout=120)
        run_id = client.get("/api/runs").json()[0]["run_id"]
        texts = [
            client.get(path).text for path in (f"/api/runs/{run_id}", f"/runs/{run_id}", "/runs/nope", "/dashboard")
        ]
    captured = capfd.readouterr()
    assert caplog.records, "nothing was logged: the check proves nothing"
    log_text = "\n".join(f"{r.name} {r.getMessage()} {r.exc_text or ''}" for r in caplog.records)
    assert_no_secret(log_text, "logging")
    assert_no_secret(captured.out + captured.err, "output")
    for text in texts:
        assert_no_secret(text, "answer")
