"""The web benchmark's server process and load generator: ``marsrag serve`` on loopback, keep-alive clients.

The server runs as ``python -m marsrag serve`` on a free port with its own home directory, its output going
to a log file (a pipe nobody reads would stall it), and it may use every CPU (the bench process is pinned to
one). Each client is a thread holding one persistent HTTP/1.1 connection; it sends its next request as soon
as the previous response is read, and times each one from sending the request to reading the whole body.
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
from collections.abc import Callable, Iterator, Sequence
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


@contextmanager
def server(argv: Sequence[str], port: int, home: Path) -> Iterator[Path]:
    """Run ``argv`` (a server on ``port``) with ``home`` as its home until the block ends; yields its log file.

    Raises:
        RuntimeError: the server exited, or did not answer ``GET /health`` with 200 within 30 s.
    """
    home.mkdir(parents=True, exist_ok=True)
    log = home / "server.log"
    # No MARSRAG_* settings of the caller's (store, LLM, token, config) and no ./config: the shipped defaults.
    env = {k: v for k, v in os.environ.items() if not k.startswith("MARSRAG_")}
    env.update(HOME=str(home), MARSRAG_HOME=str(home / "marsrag"), XDG_DATA_HOME=str(home / "data"))
    env.update(XDG_CONFIG_HOME=str(home / "config"))
    with log.open("wb") as out:
        # preexec_fn runs in the child before exec: the server gets every CPU whatever the bench is pinned to.
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=home, preexec_fn=_unpin)
    try:
        _wait_healthy(proc, port, log)
        try:
            yield log
        except Exception as error:
            error.add_note(f"the server's log ends:\n{tail(log)}")
            raise
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_healthy(proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + HEALTH_TIMEOUT_S
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
            waited = f"{HEALTH_TIMEOUT_S:.0f} s"
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
