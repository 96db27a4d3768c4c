"""Web server benchmark (issue: run page latency under load, SQLite and PostgreSQL).

For each backend a store of 10,000 realistic runs is seeded in bulk (``bench._web_seed``: three task states
with attempts and retrieval results, two transitions and ~6 events per run), then the real server is started
on loopback (``marsrag serve``: uvicorn, one process) over it. Ten clients, each a thread with one keep-alive
HTTP/1.1 connection that sends back the cookies it is given, send requests back to back: ``GET /runs/{id}``
for random run ids out of the 10,000 (each view also stores ``loop.ui.rendered`` events, counted afterwards),
and, as the baseline, the same server's trivial ``GET /health`` with the same clients. After a warm-up of
both, health and run page phases alternate (3 rounds of 2 s each), and each one's latencies and request
counts are pooled: latency is from sending a request to having read the whole response, so it includes
queueing behind the other nine clients. Every response must be 200.

Figures: run page p50, p95 and requests/s, each next to /health's (target: run page p95 < 100 ms). The ratio
prices reading a run (its tasks, attempts and transitions), rendering the page and writing the view's events,
over the framework's own cost per request.

CPUs: ``python -m bench`` pins itself to one CPU, so the client threads (sharing one GIL) run on that CPU;
the server is started with every CPU allowed, as are PostgreSQL's backends. On the 2-core machine the server
has the second core to itself and shares the first with the clients: the figures include the clients' CPU
time competing with the server's, alike for the run page and its /health baseline. Run standalone (unpinned),
the clients float over both cores too.
"""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path

from sqlalchemy import func, select

from bench._timing import Report
from bench._web_load import Clients, Sample, free_port, serve_argv, server
from bench._web_seed import TASKS, postgres_schema, seed
from marsrag.store import open_store
from marsrag.store.schema import events
from marsrag.store.sql import SqlRunStore

RUNS = 10_000
CLIENTS = 10
ROUNDS = 3
PHASE_S = 2.0
TARGET_P95_S = 0.100


def run() -> None:
    """Seed each backend, load its server, print the table."""
    report = Report(
        f"web server (uvicorn, one process; {CLIENTS} keep-alive clients on loopback; {RUNS:,} runs; "
        f"{ROUNDS} alternating rounds of {PHASE_S:.0f} s per figure)"
    )
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="marsrag-web-bench-") as tmp, postgres_schema() as (postgres, why):
        backends = {"SQLite": f"sqlite:///{tmp}/web.db"}
        if postgres is not None:
            backends["PostgreSQL"] = postgres
        for name, url in backends.items():
            seeded = seed(url, RUNS)
            notes.append(f"{name}: seeded {RUNS:,} runs in {seeded.seconds:.1f} s")
            with server(serve_argv(port := free_port(), url), port, Path(tmp, f"home-{name.lower()}")):
                page, health, views = _measure(port, seeded.run_ids)
            _add_rows(report, name, page, health)
            stored = _rendered_events(url)
            notes.append(
                f"{name}: {views:,} run page views stored {stored:,} loop.ui.rendered events "
                f"({stored / views:.2f} per view; the runs have {len(TASKS)} contract tasks each)"
            )
        if postgres is None:
            report.add("PostgreSQL: skipped (unreachable), not measured", "-", "-", 1.0, "(info)", True)
            notes.append(f"PostgreSQL rows skipped: {why}")
    report.notes.extend(notes)
    report.print()


def _measure(port: int, run_ids: list[str]) -> tuple[Sample, Sample, int]:
    """Run page and health samples, pooled over the rounds, and how many run pages were served in all."""
    clients = Clients(port, CLIENTS)
    try:
        _check(clients, run_ids[len(run_ids) // 2])

        def page(rng: random.Random) -> str:
            return f"/runs/{rng.choice(run_ids)}"

        def health(_rng: random.Random) -> str:
            return "/health"

        views = 1 + len(clients.load(page, 1.0).latencies)  # warm-up: connections, caches, templates
        clients.load(health, 0.5)
        pages, healths = Sample([], 0.0), Sample([], 0.0)
        for _ in range(ROUNDS):
            healths += clients.load(health, PHASE_S)
            measured = clients.load(page, PHASE_S)
            pages += measured
            views += len(measured.latencies)
        return pages, healths, views
    finally:
        clients.close()


def _check(clients: Clients, run_id: str) -> None:
    """The endpoints answer what the contract says, for a seeded run, before anything is timed.

    Raises:
        RuntimeError: a wrong answer.
    """
    if json.loads(clients.get("/health")) != {"status": "ok"}:
        raise RuntimeError("GET /health did not answer {'status': 'ok'}")
    if run_id not in json.dumps(json.loads(clients.get(f"/api/runs/{run_id}"))):
        raise RuntimeError(f"GET /api/runs/{run_id} does not mention the run")
    if run_id.encode() not in clients.get(f"/runs/{run_id}"):
        raise RuntimeError(f"GET /runs/{run_id} does not mention the run")


def _add_rows(report: Report, name: str, page: Sample, health: Sample) -> None:
    count = f"{len(page.latencies):,} pages, {len(health.latencies):,} health checks"
    for label, fraction in (("p50", 0.50), ("p95", 0.95)):
        ours, base = page.percentile(fraction), health.percentile(fraction)
        report.add(
            f"{name}: run page {label} vs /health {label}" + (f" ({count})" if label == "p50" else ""),
            f"{ours * 1e3:.1f} ms",
            f"{base * 1e3:.1f} ms",
            ours / base,
            f"< {TARGET_P95_S * 1e3:.0f} ms" if label == "p95" else "(info)",
            ours < TARGET_P95_S if label == "p95" else True,
        )
    report.add(
        f"{name}: run page requests per s vs /health requests per s",
        f"{page.per_second:.0f}/s",
        f"{health.per_second:.0f}/s",
        page.per_second / health.per_second,
        "(info)",
        True,
    )


def _rendered_events(url: str) -> int:
    """How many ``loop.ui.rendered`` events the store holds."""
    with open_store(url) as store:
        assert isinstance(store, SqlRunStore)
        query = select(func.count()).select_from(events).where(events.c.name == "loop.ui.rendered")
        with store.engine.connect() as connection:
            return int(connection.execute(query).scalar_one())


if __name__ == "__main__":
    run()
