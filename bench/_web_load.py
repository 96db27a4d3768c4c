"""The web benchmark's server process and load generator: ``marsrag serve`` on loopback, keep-alive clients.

The server runs as ``python -m marsrag serve`` on a free port with its own home directory, its output going
to a log file (a pipe nobody reads would stall it), and it may use every CPU (the bench process is pinned to
one). Each client is a thread holding one persistent HTTP/1.1 connection; it sends its next request as soon
as the previous response is read, and times each one from sending the request to reading the whole body.
Queue workers (``marsrag worker``) start the same way, from :func:`background`.
"""

from __future__ import annotations

import http.client
import math
import os
import random
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

HEALTH_TIMEOUT_S = 30.0


@dataclass
class Sample:
    """Latencies (seconds) of the requests completed in a timed window, and the window's length."""

    latencies: list[float]
    seconds: float

    def __add__(self, other: Sample) -> Sample:
        return Sample(self.latencies + other.latencies, self.seconds + other.seconds)

    def percentile(self, fraction: float) -> float:
        """Nearest-rank percentile: the latency that ``fraction`` of the requests did not exceed."""
        ordered = sorted(self.latencies)
        return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]

    @property
    def per_second(self) -> float:
        return len(self.latencies) / self.seconds


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def all_cpus() -> set[int]:
    """Every CPU of the machine (the bench process itself is pinned to one)."""
    return set(range(os.cpu_count() or 1))


def _unpin() -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, all_cpus())


def serve_argv(port: int, db_url: str) -> list[str]:
    """The command that starts the web app on ``port`` over the store at ``db_url``."""
    return [sys.executable, "-m", "marsrag", "serve", "--host", "127.0.0.1", "--port", str(port), "--db", db_url]


def worker_argv(db_url: str) -> list[str]:
    """The command that starts a queue worker over the store at ``db_url`` (the broker comes from its environment)."""
    return [sys.executable, "-m", "marsrag", "worker", "--db", db_url]


def _child_env(home: Path, extra_env: Mapping[str, str] | None) -> dict[str, str]:
    # No MARSRAG_* settings of the caller's (store, LLM, token, config) and no ./config: the shipped defaults.
    env = {k: v for k, v in os.environ.items() if not k.startswith("MARSRAG_")}
    env.update(HOME=str(home), MARSRAG_HOME=str(home / "marsrag"), XDG_DATA_HOME=str(home / "data"))
    env.update(XDG_CONFIG_HOME=str(home / "config"))
    env.update(extra_env or {})
    return env


def _start(argv: Sequence[str], home: Path, log: Path, extra_env: Mapping[str, str] | None) -> subprocess.Popen[bytes]:
    home.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out:
        # preexec_fn runs in the child before exec: the child gets every CPU whatever the bench is pinned to.
        return subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, env=_child_env(home, extra_env), cwd=home, preexec_fn=_unpin
        )


def _stop(proc: subprocess.Popen[bytes], grace: float) -> None:
    proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextmanager
def server(
    argv: Sequence[str],
    port: int,
    home: Path,
    *,
    extra_env: Mapping[str, str] | None = None,
    timeout: float = HEALTH_TIMEOUT_S,
) -> Iterator[Path]:
    """Run ``argv`` (a server on ``port``) with ``home`` as its home until the block ends; yields its log file.

    ``extra_env`` is added to its environment (which otherwise holds none of the caller's ``MARSRAG_*``).

    Raises:
        RuntimeError: the server exited, or did not answer ``GET /health`` with 200 within ``timeout`` (30 s).
    """
    log = home / "server.log"
    proc = _start(argv, home, log, extra_env)
    try:
        _wait_healthy(proc, port, log, timeout)
        try:
            yield log
        except Exception as error:
            error.add_note(f"the server's log ends:\n{tail(log)}")
            raise
    finally:
        _stop(proc, 10)


@dataclass
class Background:
    """A child process started by :func:`background`, and the log file its output goes to."""

    proc: subprocess.Popen[bytes]
    log: Path

    def wait_for_output(self, text: str, timeout: float) -> None:
        """Wait until the log contains ``text`` (e.g. a worker's "ready.").

        Raises:
            RuntimeError: the process exited, or ``text`` did not appear within ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        while text not in self.log.read_text(errors="replace"):
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.proc.args!r} exited with code {self.proc.returncode}:\n{tail(self.log)}")
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{self.proc.args!r} did not print {text!r} within {timeout:.0f} s:\n{tail(self.log)}"
                )
            time.sleep(0.2)

    def wait_healthy(self, port: int, timeout: float = HEALTH_TIMEOUT_S) -> None:
        """Wait until the process (a server) answers ``GET /health`` on ``port`` with 200.

        Raises:
            RuntimeError: it exited, or did not answer within ``timeout`` seconds.
        """
        _wait_healthy(self.proc, port, self.log, timeout)


@contextmanager
def background(
    argv: Sequence[str], home: Path, name: str, *, extra_env: Mapping[str, str] | None = None, grace: float = 20.0
) -> Iterator[Background]:
    """Run ``argv`` (e.g. a queue worker) like :func:`server`, without waiting for anything; stopped at the end.

    Its output goes to ``home/<name>.log``. The end sends SIGTERM and, after ``grace`` seconds (a worker's warm
    shutdown lets its jobs finish), SIGKILL.
    """
    log = home / f"{name}.log"
    proc = _start(argv, home, log, extra_env)
    try:
        yield Background(proc, log)
    finally:
        _stop(proc, grace)


def _wait_healthy(proc: subprocess.Popen[bytes], port: int, log: Path, timeout: float = HEALTH_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with code {proc.returncode} before answering:\n{tail(log)}")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            try:
                connection.request("GET", "/health")
                response = connection.getresponse()
                body = response.read()
            finally:
                connection.close()
            if response.status == 200:
                return
            problem = f"GET /health answered {response.status}: {body[:200]!r}"
        except OSError as error:
            problem = f"GET /health: {error}"
        if time.monotonic() > deadline:
            waited = f"{timeout:.0f} s"
            raise RuntimeError(f"the server did not become healthy within {waited} ({problem}):\n{tail(log)}")
        time.sleep(0.1)


def tail(log: Path, lines: int = 20) -> str:
    """The last lines of the server's log."""
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError as error:
        return f"(no log: {error})"


class Clients:
    """``count`` keep-alive connections to one server, reused by every load phase.

    Like a browser tab, each client sends back the cookies it was given (the pages set a CSRF cookie once).
    """

    def __init__(self, port: int, count: int, seed: int = 11) -> None:
        self.connections = [http.client.HTTPConnection("127.0.0.1", port, timeout=30) for _ in range(count)]
        self.rngs = [random.Random(seed + n) for n in range(count)]
        self.cookies: list[dict[str, str]] = [{} for _ in range(count)]

    def close(self) -> None:
        for connection in self.connections:
            connection.close()

    def get(self, path: str, client: int = 0) -> bytes:
        """One request on client ``client``'s connection; the body.

        Raises:
            RuntimeError: any status other than 200.
        """
        connection, cookies = self.connections[client], self.cookies[client]
        headers = {"Cookie": "; ".join(f"{name}={value}" for name, value in cookies.items())} if cookies else {}
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        body = response.read()
        for cookie in response.headers.get_all("Set-Cookie") or ():
            name, _, value = cookie.partition(";")[0].partition("=")
            cookies[name.strip()] = value.strip()
        if response.status != 200:
            raise RuntimeError(f"GET {path} answered {response.status}: {body[:300]!r}")
        return body

    def load(self, paths: Callable[[random.Random], str], seconds: float) -> Sample:
        """Every client requests ``paths(rng)`` back to back for ``seconds``; the latencies of all of them.

        Raises:
            RuntimeError: a response other than 200, or a client's connection failed.
        """
        count = len(self.connections)
        latencies: list[list[float]] = [[] for _ in range(count)]
        errors: list[Exception] = []
        start_line = threading.Barrier(count + 1)
        deadline = 0.0

        def client(number: int) -> None:
            rng, record = self.rngs[number], latencies[number].append
            start_line.wait()
            try:
                while time.perf_counter() < deadline and not errors:
                    path = paths(rng)
                    sent = time.perf_counter()
                    self.get(path, number)
                    record(time.perf_counter() - sent)
            except Exception as error:  # re-raised in the caller's thread
                errors.append(error)

        threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(count)]
        for thread in threads:
            thread.start()
        start = time.perf_counter()
        deadline = start + seconds
        start_line.wait()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - start
        if errors:
            raise RuntimeError(f"a client failed: {errors[0]}") from errors[0]
        return Sample([latency for per_client in latencies for latency in per_client], elapsed)
