"""Load-held benchmark (reliability): under concurrent load MarsRAG loses no run and answers no server error.

Three setups, each on an empty store, started as in production, on loopback:

- (a) a SQLite file and one ``marsrag serve``: runs execute on the server's thread pool (2 threads, the default);
- (b) PostgreSQL (a fresh schema) and one ``marsrag serve``, likewise;
- (c) PostgreSQL and the Redis job queue: two ``marsrag serve`` and two ``marsrag worker`` (concurrency 1) on one
  fresh schema, with a queue of their own (``MARSRAG_QUEUE``); runs execute on the workers.

PostgreSQL is ``MARSRAG_TEST_POSTGRES`` (as in ``bench._web_seed``), Redis ``MARSRAG_BENCH_REDIS`` (default
``redis://127.0.0.1:6379/14``); a setup whose service is unreachable is skipped, saying why.

Each uses the shipped sample config and the default LLM, the offline composer, through real CrewAI crews (no
network). Eight clients, each a thread holding one keep-alive HTTP/1.1 connection per server, send requests back
to back for 15 s, taking the servers in turn request by request, as a load balancer without sticky sessions
would (in (c) a run started on one server is read on the other). Every fifth request of a client starts a run
(``POST /api/runs`` with a JSON goal and no Origin header: a script on loopback) unless two of its runs are still
unfinished as its own reads of them last showed: a user who waits for answers before asking more. That keeps the
runs started in step with what the executors finish, so the backlog (up to 16 runs, 8 times the executors'
slots) drains within the bench's time on 2 cores. The other requests are, in equal shares, ``GET
/api/runs/{id}`` of one of the client's runs (an unfinished one first, as the run page's reload does), ``GET
/runs/{id}`` (the page, which also stores ``loop.ui.rendered`` events), ``GET /`` and ``GET /api/runs?limit=20``.

Before that, a warm-up run per server is started and waited for (these count with the others) and every client
sends each kind of request once to each server; then the same clients send ``GET /health`` back to back for 3 s:
the baseline, the framework's own cost per request on the same server(s), with nothing running.

Every response's status and latency (from sending the request to having read the whole body) is recorded, and
every transport error (refused, reset, a 20 s timeout; the client reconnects). Twice a second a thread reads the
runs' statuses from the store (``SELECT status, count(*) FROM runs GROUP BY status``): the peaks of runs
``running`` at once (at most the executors' slots) and ``pending`` (queued). After the window the bench waits
for every run to end (bounded: 300 s, or 60 s without any run changing status), then reads each run started
through the API (on the other server in (c)) and from the store. A run is lost when the store does not hold it
``completed`` or ``failed`` by then, or not at all; an API answer other than the store's status is a wrong read.
The servers' and workers' logs are scanned for tracebacks and errors.

Figures per setup: mixed requests/s and latency next to /health's, then the reliability counts, each with target
0: 5xx responses, transport errors, other unexpected statuses, lost runs and wrong reads; with the runs completed
and failed, the peaks and the time the backlog took to drain. Any miss, failed runs and log errors are printed
loudly under the table, with log excerpts; none stops the bench.

CPUs: as in ``bench.web_bench``, ``python -m bench`` pins the bench (the clients) to one CPU while the servers,
workers and PostgreSQL may use both; standalone (``python -m bench.load_bench``), the clients float too.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import re
import socket
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import func, select

from bench._timing import Report
from bench._web_load import Sample, background, free_port, serve_argv, server, worker_argv
from bench._web_seed import GOALS, postgres_schema
from marsrag.store import open_store
from marsrag.store.schema import runs, task_states
from marsrag.store.sql import SqlRunStore

CLIENTS = 8
WINDOW_S = 15.0
HEALTH_S = 3.0
POST_EVERY = 5
UNFINISHED_PER_CLIENT = 2
REQUEST_TIMEOUT_S = 20.0
WARMUP_TIMEOUT_S = 120.0
#: Bound on a process's start: importing CrewAI alone takes ~8 s of CPU here, and (c) starts four at once.
START_TIMEOUT_S = 120.0
#: uvicorn closes a keep-alive connection idle for 5 s; a client reconnects after 4 s idle, as browsers do,
#: instead of racing the close (a request sent as the server closes fails without an answer).
IDLE_RECONNECT_S = 4.0
DRAIN_TIMEOUT_S = 300.0
STALL_S = 60.0
SAMPLE_EVERY_S = 0.5
#: Examples of each kind of trouble kept for the report (all are counted).
EXAMPLES = 5
#: Runs executing at once: ``marsrag serve``'s default 2 run threads; in (c) two workers of concurrency 1.
SLOTS = 2
REDIS = os.environ.get("MARSRAG_BENCH_REDIS", "redis://127.0.0.1:6379/14")
TERMINAL = frozenset({"completed", "failed"})
#: Log lines that mean trouble (uvicorn's "Exception in ASGI application", Celery's ERROR records, tracebacks).
TROUBLE = re.compile(r"Traceback|ERROR|CRITICAL|Exception in ASGI application|database is locked")

POST = "POST /api/runs"
DOC = "GET /api/runs/{id}"
PAGE = "GET /runs/{id}"
INDEX = "GET /"
LIST = "GET /api/runs?limit=20"
HEALTH = "GET /health"
READS = (DOC, PAGE, INDEX, LIST)
_RUN_ID = re.compile(r"[0-9a-f]{32}")


class Skipped(Exception):
    """A setup's service (PostgreSQL, Redis) is not reachable: its table says so instead."""


class SetupFailed(RuntimeError):
    """A setup did not come up, or could not execute its warm-up run: printed loudly, the next setup runs."""


@dataclass
class Tally:
    """What clients saw: latencies and statuses per kind of request, transport errors, unexpected answers."""

    latencies: dict[str, list[float]] = field(default_factory=dict)
    statuses: Counter[tuple[str, int]] = field(default_factory=Counter)
    transport: Counter[str] = field(default_factory=Counter)
    odd: Counter[str] = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)

    def __iadd__(self, other: Tally) -> Tally:
        for kind, latencies in other.latencies.items():
            self.latencies.setdefault(kind, []).extend(latencies)
        self.statuses += other.statuses
        self.transport += other.transport
        self.odd += other.odd
        for example in other.examples:
            self.note(example)
        return self

    def note(self, example: str) -> None:
        """Keep ``example`` if it is one of the first few of its kind (run ids aside)."""
        shapes = {_RUN_ID.sub("{id}", seen) for seen in self.examples}
        if len(self.examples) < EXAMPLES and _RUN_ID.sub("{id}", example) not in shapes:
            self.examples.append(example)

    def answered(self, kinds: tuple[str, ...] | None = None) -> list[float]:
        """The latencies of the requests answered (any status), of ``kinds`` or of all."""
        return [x for kind, values in self.latencies.items() if kinds is None or kind in kinds for x in values]

    @property
    def requests(self) -> int:
        return sum(self.statuses.values()) + sum(self.transport.values())

    @property
    def server_errors(self) -> int:
        return sum(count for (_, status), count in self.statuses.items() if status >= 500)


class Client:
    """One user: a keep-alive connection to each server, taken in turn; the runs it started and their last status."""

    def __init__(self, number: int, ports: list[int]) -> None:
        self.number = number
        self.connections = [http.client.HTTPConnection("127.0.0.1", p, timeout=REQUEST_TIMEOUT_S) for p in ports]
        self.cookies: list[dict[str, str]] = [{} for _ in ports]
        self.used = [0.0 for _ in ports]
        self.rng = random.Random(101 + number)
        self.turn = number
        self.sent = 0
        self.runs: dict[str, str] = {}
        self.started: list[tuple[str, int]] = []
        self.tally = Tally()
        self.last_status: int | None = None

    def close(self) -> None:
        for connection in self.connections:
            connection.close()

    def send(self, kind: str, path: str, body: dict[str, Any] | None = None, at: int | None = None) -> Any:
        """One request to the next server (or server ``at``); the JSON or HTML body when the status is expected.

        Everything is recorded in ``tally``; nothing raises: an unexpected status or transport error gives None.
        """
        if at is None:
            at, self.turn = self.turn % len(self.connections), self.turn + 1
        connection, cookies = self.connections[at], self.cookies[at]
        if time.monotonic() - self.used[at] > IDLE_RECONNECT_S:
            connection.close()  # the server may be closing it right now; the request opens a new one
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items())} if cookies else {}
        payload = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            payload = json.dumps(body).encode()
        sent = time.perf_counter()
        try:
            connection.request("POST" if body is not None else "GET", path, body=payload, headers=headers)
            response = connection.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException) as error:
            connection.close()  # the next request on it reconnects
            self.last_status = None
            self.tally.transport[kind] += 1
            self.tally.note(f"{kind} {path} on server {at + 1}: {type(error).__name__}: {error}")
            time.sleep(0.05)  # a server that is gone would otherwise be hammered with connection attempts
            return None
        self.tally.latencies.setdefault(kind, []).append(time.perf_counter() - sent)
        self.used[at] = time.monotonic()
        self.last_status = response.status
        self.tally.statuses[kind, response.status] += 1
        for cookie in response.headers.get_all("Set-Cookie") or ():
            name, _, value = cookie.partition(";")[0].partition("=")
            cookies[name.strip()] = value.strip()
        if response.status != (202 if kind == POST else 200):
            self.tally.odd[f"{kind} -> {response.status}"] += 1
            self.tally.note(f"{kind} {path} on server {at + 1}: {response.status} {data[:300]!r}")
            return None
        if response.headers.get("Content-Type", "").startswith("application/json"):
            return json.loads(data)
        return data

    def post(self) -> str | None:
        """Start a run; its id."""
        goal = (
            f"{GOALS[(self.number + len(self.started)) % len(GOALS)]} (client {self.number}, run {len(self.started)})"
        )
        at = self.turn % len(self.connections)
        answer = self.send(POST, "/api/runs", {"goal": goal})
        if answer is None:
            return None
        self.runs[answer["run_id"]] = answer["status"]
        self.started.append((answer["run_id"], at))
        return str(answer["run_id"])

    def read(self, run_id: str, at: int | None = None) -> dict[str, Any] | None:
        """The run's document (its last status is kept)."""
        document: dict[str, Any] | None = self.send(DOC, f"/api/runs/{run_id}", at=at)
        if document is not None:
            self.runs[run_id] = document["status"]
        return document

    def step(self) -> None:
        """The next request of the mixed workload."""
        self.sent += 1
        unfinished = [run_id for run_id, status in self.runs.items() if status not in TERMINAL]
        if self.sent % POST_EVERY == 1 and len(unfinished) < UNFINISHED_PER_CLIENT:
            self.post()
            return
        kind = self.rng.choice(READS if self.runs else (INDEX, LIST))
        if kind == DOC:
            self.read(self.rng.choice(unfinished or list(self.runs)))
        elif kind == PAGE:
            self.send(PAGE, f"/runs/{self.rng.choice(list(self.runs))}")
        else:
            self.send(kind, "/" if kind == INDEX else "/api/runs?limit=20")


def drive(clients: list[Client], seconds: float, step: Callable[[Client], object]) -> float:
    """Every client runs ``step`` back to back for ``seconds``; the seconds it took (a request in flight finishes).

    Raises:
        RuntimeError: ``step`` raised (a bug of the bench: the server's answers are recorded, never raised).
    """
    failures: list[BaseException] = []
    start_line = threading.Barrier(len(clients) + 1)
    deadline = 0.0

    def loop(client: Client) -> None:
        start_line.wait()
        try:
            while time.perf_counter() < deadline and not failures:
                step(client)
        except Exception as error:  # re-raised in the caller's thread
            failures.append(error)

    threads = [threading.Thread(target=loop, args=(client,), daemon=True) for client in clients]
    for thread in threads:
        thread.start()
    start = time.perf_counter()
    deadline = start + seconds
    start_line.wait()
    for thread in threads:
        thread.join()
    if failures:
        raise RuntimeError(f"a client failed: {failures[0]!r}") from failures[0]
    return time.perf_counter() - start


class StoreWatch:
    """Reads the runs' statuses from the store twice a second, in a thread; keeps the peaks and the last change."""

    def __init__(self, url: str) -> None:
        store = open_store(url)
        assert isinstance(store, SqlRunStore)
        self.store = store
        self.peak: Counter[str] = Counter()
        self.last: Counter[str] = Counter()
        self.changed = time.monotonic()
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        # Bounded even if close() is never reached: the longest a setup can take, and some.
        deadline = time.monotonic() + WARMUP_TIMEOUT_S + WINDOW_S + DRAIN_TIMEOUT_S + 120
        while not self._stop.wait(SAMPLE_EVERY_S) and time.monotonic() < deadline:
            self.sample()

    def sample(self) -> Counter[str]:
        """Read the statuses now (also updating the peaks); the counts."""
        try:
            with self.store.engine.connect() as connection:
                rows = connection.execute(select(runs.c.status, func.count()).group_by(runs.c.status)).all()
        except Exception as error:  # noqa: BLE001 - reported, never fatal: the store is the servers' to keep up
            self.errors.append(f"{type(error).__name__}: {error}")
            return self.last
        counts = Counter({str(status): int(count) for status, count in rows})
        with self._lock:
            if counts != self.last:
                self.last, self.changed = counts, time.monotonic()
            for status, count in counts.items():
                self.peak[status] = max(self.peak[status], count)
        return counts

    def drain(self) -> float | None:
        """Wait until no run is pending or running; the seconds it took, or None (300 s, or 60 s without change)."""
        start = time.monotonic()
        while time.monotonic() - start < DRAIN_TIMEOUT_S and time.monotonic() - self.changed < STALL_S:
            counts = self.sample()
            if counts and not counts["pending"] and not counts["running"]:
                return time.monotonic() - start
            time.sleep(0.25)
        return None

    def runs(self) -> tuple[dict[str, tuple[str, str | None]], Counter[str]]:
        """Every stored run's status and reason, and each run's number of task states."""
        with self.store.engine.connect() as connection:
            stored = connection.execute(select(runs.c.run_id, runs.c.status, runs.c.status_reason)).all()
            tasks = connection.execute(select(task_states.c.run_id, func.count()).group_by(task_states.c.run_id))
            counts = Counter({str(run_id): int(count) for run_id, count in tasks})
        return {str(run_id): (str(status), reason) for run_id, status, reason in stored}, counts

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.store.close()


@dataclass
class Setup:
    """A running setup: the store, the servers' ports, every process's log."""

    tag: str
    title: str
    url: str
    ports: list[int]
    logs: list[Path]
    details: list[str] = field(default_factory=list)


def _sqlite(stack: ExitStack, tmp: Path) -> Setup:
    url = f"sqlite:///{tmp}/load.db"
    port = free_port()
    log = stack.enter_context(server(serve_argv(port, url), port, tmp / "home-sqlite", timeout=START_TIMEOUT_S))
    return Setup("(a) SQLite", "SQLite file, one marsrag serve (runs on its 2 threads)", url, [port], [log])


def _postgres(stack: ExitStack, tmp: Path) -> Setup:
    url, why = stack.enter_context(postgres_schema())
    if url is None:
        raise Skipped(why)
    port = free_port()
    log = stack.enter_context(server(serve_argv(port, url), port, tmp / "home-postgres", timeout=START_TIMEOUT_S))
    return Setup("(b) PostgreSQL", "PostgreSQL, one marsrag serve (runs on its 2 threads)", url, [port], [log])


def _queue(stack: ExitStack, tmp: Path) -> Setup:
    broker = urlsplit(REDIS)
    try:
        socket.create_connection((broker.hostname or "127.0.0.1", broker.port or 6379), timeout=2).close()
    except OSError as error:
        raise Skipped(f"Redis at {REDIS} is unreachable ({error})") from None
    url, why = stack.enter_context(postgres_schema())
    if url is None:
        raise Skipped(why)
    queue = f"marsrag-load-bench-{uuid.uuid4().hex[:12]}"
    stack.callback(_forget_queue, queue)  # after the processes have stopped (an ExitStack unwinds backwards)
    env = {"MARSRAG_BROKER": REDIS, "MARSRAG_QUEUE": queue}
    # All four start at once (their migrations queue on PostgreSQL's advisory lock), using both cores.
    workers = [
        stack.enter_context(background(worker_argv(url), tmp / f"home-worker-{n}", "worker", extra_env=env))
        for n in (1, 2)
    ]
    ports = [free_port(), free_port()]
    while ports[1] == ports[0]:
        ports[1] = free_port()
    servers = [
        stack.enter_context(background(serve_argv(port, url), tmp / f"home-serve-{n}", "server", extra_env=env))
        for n, port in enumerate(ports, 1)
    ]

    def terminate_all() -> None:
        for process in servers + workers:
            if process.proc.poll() is None:
                process.proc.terminate()

    # Stopping: SIGTERM to all four at once (this runs first), then each is waited for (and killed if it lingers).
    stack.callback(terminate_all)
    deadline = time.monotonic() + START_TIMEOUT_S
    for process, port in zip(servers, ports, strict=True):
        process.wait_healthy(port, max(1.0, deadline - time.monotonic()))
    for worker in workers:
        worker.wait_for_output(" ready.", max(1.0, deadline - time.monotonic()))
    title = "PostgreSQL + Redis queue, two marsrag serve, two marsrag worker (concurrency 1)"
    logs = [process.log for process in servers + workers]
    return Setup("(c) queue", title, url, ports, logs, [f"queue {queue} on {REDIS}"])


def _forget_queue(queue: str) -> None:
    """Delete what Celery left in Redis for ``queue`` (the bench's own queue: nothing else uses it)."""
    import redis

    client = redis.Redis.from_url(REDIS, socket_timeout=5)
    try:
        keys = [queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}"]
        client.delete(*keys, *client.scan_iter(match=f"{queue}\x06*", count=1000))
    except redis.RedisError as error:
        print(f"  note: could not delete the queue {queue} from {REDIS}: {error}")
    finally:
        client.close()


@dataclass
class Outcome:
    """What one setup measured."""

    mixed: Tally
    mixed_seconds: float
    health: Tally
    health_seconds: float
    other: Tally
    started: list[tuple[str, int]]
    stored: dict[str, tuple[str, str | None]]
    tasks: Counter[str]
    seen: dict[str, str]
    peak: Counter[str]
    drained: float | None
    watch_errors: list[str]


def measure(setup: Setup) -> Outcome:
    """Warm up, load with /health then the mixed workload, drain, and read back every run."""
    clients = [Client(number, setup.ports) for number in range(CLIENTS)]
    watch = StoreWatch(setup.url)
    try:
        _warm_up(clients)
        other = _collect(clients)
        health_seconds = drive(clients, HEALTH_S, lambda client: client.send(HEALTH, "/health"))
        health = _collect(clients)
        mixed_seconds = drive(clients, WINDOW_S, Client.step)
        mixed = _collect(clients)
        drained = watch.drain()
        started = [run for client in clients for run in client.started]
        # Read each run back through the API, on the server it was not started on when there are two.
        checker = clients[0]
        seen: dict[str, str] = {}
        for run_id, at in started:
            document = checker.read(run_id, at=(at + 1) % len(setup.ports))
            if document is not None:
                seen[run_id] = str(document["status"])
            else:
                seen[run_id] = "no answer" if checker.last_status is None else f"HTTP {checker.last_status}"
        other += checker.tally
        watch.sample()
        stored, tasks = watch.runs()
        return Outcome(
            mixed=mixed,
            mixed_seconds=mixed_seconds,
            health=health,
            health_seconds=health_seconds,
            other=other,
            started=started,
            stored=stored,
            tasks=tasks,
            seen=seen,
            peak=watch.peak,
            drained=drained,
            watch_errors=watch.errors,
        )
    finally:
        watch.close()
        for client in clients:
            client.close()


def _warm_up(clients: list[Client]) -> None:
    """A run per server, waited for (crews built, CrewAI and the queue connections warm), each request once per client.

    Raises:
        SetupFailed: a warm-up run could not be started, or did not end within 120 s.
    """
    first = clients[0]
    for _ in first.connections:
        if first.post() is None:
            raise SetupFailed(f"a warm-up run could not be started: {first.tally.examples}")
    deadline = time.monotonic() + WARMUP_TIMEOUT_S
    while unfinished := [run_id for run_id, status in first.runs.items() if status not in TERMINAL]:
        if time.monotonic() > deadline:
            raise SetupFailed(f"warm-up runs {unfinished} did not end within {WARMUP_TIMEOUT_S:.0f} s")
        time.sleep(0.2)
        first.read(unfinished[0])
    run_id = first.started[0][0]
    for client in clients:
        for _ in client.connections:
            client.send(INDEX, "/")
            client.send(LIST, "/api/runs?limit=20")
            client.send(PAGE, f"/runs/{run_id}")
            client.send(HEALTH, "/health")


def _collect(clients: list[Client]) -> Tally:
    tally = Tally()
    for client in clients:
        tally += client.tally
        client.tally = Tally()
    return tally


class LoadReport(Report):
    """A :class:`Report` that also takes counts, whose target is a number and which have no ratio."""

    def add_count(self, name: str, ours: str, base: str, target: str, ok: bool) -> None:
        self.rows.append((name, ours, base, "-", target, "ok" if ok else "MISS"))


def report(setup: Setup, outcome: Outcome) -> bool:
    """Print the setup's table and, loudly, every miss; whether the load was held."""
    mixed = Sample(outcome.mixed.answered(), outcome.mixed_seconds)
    health = Sample(outcome.health.answered(), outcome.health_seconds)
    everything = Tally()
    for tally in (outcome.mixed, outcome.health, outcome.other):
        everything += tally
    table = LoadReport(
        f"load held, {setup.tag}: {setup.title}; {CLIENTS} keep-alive clients, "
        f"{WINDOW_S:.0f} s of mixed requests vs {HEALTH_S:.0f} s of /health"
    )
    posts = sum(count for (kind, _), count in outcome.mixed.statuses.items() if kind == POST)
    table.add(
        f"{setup.tag}: requests per s, mixed ({len(mixed.latencies):,} answered, {posts} runs started) "
        f"vs /health ({len(health.latencies):,})",
        f"{mixed.per_second:.0f}/s",
        f"{health.per_second:.0f}/s",
        mixed.per_second / health.per_second,
        "(info)",
        True,
    )
    for label, fraction in (("p50", 0.50), ("p95", 0.95)):
        ours, base = mixed.percentile(fraction), health.percentile(fraction)
        table.add(f"{setup.tag}: {label} latency, mixed vs /health", _ms(ours), _ms(base), ours / base, "(info)", True)
    post = Sample(outcome.mixed.answered((POST,)), outcome.mixed_seconds)
    if post.latencies:
        ours, base = post.percentile(0.95), health.percentile(0.95)
        table.add(
            f"{setup.tag}: p95 latency, POST /api/runs vs /health", _ms(ours), _ms(base), ours / base, "(info)", True
        )
    total = f"of {everything.requests:,} requests"
    server_errors, transport = everything.server_errors, sum(everything.transport.values())
    odd = sum(everything.odd.values()) - server_errors  # odd answers include the 5xx
    table.add_count(f"{setup.tag}: 5xx responses (all phases)", str(server_errors), total, "0", server_errors == 0)
    table.add_count(
        f"{setup.tag}: transport errors (refused, reset, timeout)", str(transport), total, "0", not transport
    )
    table.add_count(f"{setup.tag}: other statuses than 202 (POST) / 200 (GET)", str(odd), total, "0", odd == 0)

    started = len(outcome.started)
    statuses = {run_id: outcome.stored.get(run_id, ("missing", None))[0] for run_id, _ in outcome.started}
    lost = [run_id for run_id, status in statuses.items() if status not in TERMINAL]
    # A transport error is counted above; an answer that differs from the store's terminal status is a wrong read.
    wrong = [run_id for run_id, status in statuses.items() if outcome.seen[run_id] not in (status, "no answer")]
    completed = sum(1 for status in statuses.values() if status == "completed")
    failed = sum(1 for status in statuses.values() if status == "failed")
    of_started = f"of {started} started"
    table.add_count(
        f"{setup.tag}: runs lost (not completed or failed, or missing)", str(len(lost)), of_started, "0", not lost
    )
    table.add_count(
        f"{setup.tag}: runs the API showed otherwise than the store, read after the drain",
        str(len(wrong)),
        of_started,
        "0",
        not wrong,
    )
    table.add_count(f"{setup.tag}: runs completed / failed", f"{completed} / {failed}", of_started, "(info)", True)
    running, pending = outcome.peak["running"], outcome.peak["pending"]
    table.add(
        f"{setup.tag}: peak runs running at once (store, sampled 2/s) vs executor slots",
        str(running),
        f"{SLOTS} slots",
        running / SLOTS,
        "<= slots",
        running <= SLOTS,
    )
    table.add_count(f"{setup.tag}: peak runs pending (queued)", str(pending), "-", "(info)", True)
    drained = outcome.drained
    table.add_count(
        f"{setup.tag}: backlog drained after the window",
        "no" if drained is None else f"{drained:.1f} s",
        "-",
        f"< {DRAIN_TIMEOUT_S:.0f} s",
        drained is not None,
    )

    notes = [f"{setup.tag}: {', '.join(setup.details + [f'store {_where(setup.url)}'])}"]
    kinds = [POST, DOC, PAGE, INDEX, LIST]
    shares = ", ".join(
        f"{kind} {len(values):,} (p95 {_ms(Sample(values, 1).percentile(0.95))})"
        for kind in kinds
        if (values := outcome.mixed.latencies.get(kind))
    )
    notes.append(f"{setup.tag}: mixed requests answered: {shares}")
    completed_tasks = Counter(outcome.tasks[run_id] for run_id, status in statuses.items() if status == "completed")
    notes.append(
        f"{setup.tag}: task states per completed run: "
        + ", ".join(f"{tasks} in {count} runs" for tasks, count in sorted(completed_tasks.items()))
    )
    extra = set(outcome.stored) - set(statuses)
    if extra:
        notes.append(f"{setup.tag}: {len(extra)} stored run(s) no client got a 202 for (an answer lost in transit)")
    table.notes.extend(notes)
    table.print()

    loud: list[str] = []
    if server_errors or transport or odd:
        loud.append(f"{server_errors} server errors, {transport} transport errors, {odd} other unexpected statuses")
        loud.extend(f"  {kind}: {count}" for kind, count in (everything.odd + everything.transport).most_common())
        loud.extend(f"  e.g. {example}" for example in everything.examples)
    if lost or wrong:
        loud.append(
            f"{len(lost)} of {started} runs lost (not completed or failed after the drain, or missing); "
            f"{len(wrong)} read otherwise through the API:"
        )
        loud.extend(
            f"  run {run_id}: store {statuses[run_id]}, API {outcome.seen[run_id]}"
            for run_id in list(dict.fromkeys(lost + wrong))[:EXAMPLES]
        )
    if failed:
        reasons = Counter(str(outcome.stored[run_id][1])[:200] for run_id, s in statuses.items() if s == "failed")
        loud.append(f"{failed} runs failed; reasons: " + "; ".join(f"{n} x {why}" for why, n in reasons.items()))
    if len(completed_tasks) > 1:
        loud.append(f"completed runs with different numbers of task states: {dict(completed_tasks)}")
    if running > SLOTS:
        loud.append(f"{running} runs were running at once, more than the {SLOTS} executor slots")
    if outcome.watch_errors:
        loud.append(f"{len(outcome.watch_errors)} failed reads of the store's statuses, e.g. {outcome.watch_errors[0]}")
    loud.extend(_log_trouble(setup.logs))
    for line in loud:
        table.note(f"!! {setup.tag}: {line}")
    held = not (server_errors or transport or odd or lost or wrong)
    table.note(f"{setup.tag}: {'LOAD HELD' if held else '!! LOAD NOT HELD'}")
    return held


def _log_trouble(logs: list[Path]) -> list[str]:
    """A line per log holding tracebacks or errors, with an excerpt from the first one."""
    lines: list[str] = []
    for log in logs:
        try:
            text = log.read_text(errors="replace").splitlines()
        except OSError as error:
            lines.append(f"{log.parent.name}/{log.name}: unreadable ({error})")
            continue
        hits = [number for number, line in enumerate(text) if TROUBLE.search(line)]
        if hits:
            lines.append(f"{log.parent.name}/{log.name}: {len(hits)} lines of errors; from the first:")
            lines.extend(f"    | {line}" for line in text[hits[0] : hits[0] + 30])
    return lines


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


def _where(url: str) -> str:
    return url.split("?")[0].rsplit("/", 1)[-1] if url.startswith("sqlite") else url.split("?")[0]


def run() -> bool:
    """Load each setup, print its table; whether every setup held the load (a skipped one counts as held)."""
    held = True
    with tempfile.TemporaryDirectory(prefix="marsrag-load-bench-") as tmp:
        for tag, start in (("(a) SQLite", _sqlite), ("(b) PostgreSQL", _postgres), ("(c) queue", _queue)):
            try:
                with ExitStack() as stack:
                    begun = time.monotonic()
                    try:
                        setup = start(stack, Path(tmp))
                    except RuntimeError as error:  # a server or worker did not come up: its log tail is in it
                        raise SetupFailed(str(error)) from error
                    setup.details.append(f"processes up in {time.monotonic() - begun:.0f} s")
                    outcome = measure(setup)
            except Skipped as why:
                skipped = Report(f"load held, {tag}")
                skipped.note(f"skipped ({why})")
                skipped.print()
                continue
            except SetupFailed as error:
                failed = Report(f"load held, {tag}")
                failed.note(f"!! FAILED: {error}")
                failed.notes.extend(f"!! {note}" for note in getattr(error, "__notes__", ()))
                failed.print()
                held = False
                continue
            # The processes have stopped: their logs are complete.
            held = report(setup, outcome) and held
    return held


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="marsrag-bench-") as home:
        # As `python -m bench`: a throwaway home, so CrewAI's files land nowhere that lasts.
        os.environ.update(
            HOME=home, XDG_DATA_HOME=f"{home}/data", XDG_CONFIG_HOME=f"{home}/config", MARSRAG_HOME=f"{home}/marsrag"
        )
        ok = run()
    raise SystemExit(0 if ok else 1)
