"""Loop metrics benchmark (issue 20: the metrics from rollups, over 1,000,000 stored events, SQLite and PostgreSQL).

For each backend two stores are migrated (by opening them) and seeded in bulk by :func:`bench._metrics_seed.seed`
with a realistic history of exactly 1,000,000 rows in ``events`` (about 152,000 runs, 6.6 events each; three
workflows, sessions of 1-4 runs over the last 60 days) and, for the growth figures, of 100,000 events (the same
seeder and random seed over the same 60 days: a tenth of the events per day). The bulk inserts bypass the
store's write path, which is what keeps the metric rollups, so the seeder then rebuilds them from the raw rows
(``store.rebuild_rollups()``, timed on its own: a note gives the time), refreshes the statistics, and checks
that the rollup reads equal the raw-row reference over all history (the loop counts overall and per workflow
and day, the events per name) before anything is timed, so every figure is of correct numbers.

Figures, each next to a baseline measured alternately with it in the same run:

- ``compute_metrics`` over all history, over ``--since 7d`` and for one ``--workflow``, each next to ``SELECT
  count(*) FROM events`` on the same engine (warm cache, best of 5 rounds after a warm-up; target: within 2x
  the count). A window's whole days are read from the rollups, and of a partial day at its edge the shorter
  part from the raw rows (added, or taken from the whole day), so ``--since 7d`` costs more the nearer to noon
  (UTC) it is measured: a note gives that part's length and runs, and an extra row (for information) measures
  the same window as at 12:00 UTC, the longest part there is (half a day of raw rows).
- ``metrics_by`` per workflow and day (what the dashboard and the weekly review ask for), next to the count
  (target: within 3x).
- The end-to-end CLI, ``marsrag metrics --db URL --format json`` as a process, which includes starting
  Python and importing MarsRAG (for information): a note gives that fixed cost, measured as the same command
  over an empty store. The CLI's JSON must equal the library's result.
- One Prometheus scrape, ``GET /metrics`` of the real server (``marsrag serve``: uvicorn, one process, on
  loopback, where no token is needed), next to the same server's ``GET /health``: one keep-alive client sends
  requests back to back, the two paths alternating in 10 rounds of 0.5 s after a warm-up; the figure is each
  one's p50 (target: within 5x). Before timing, the scrape's ``marsrag_loop_events_total`` must equal the
  events per name counted from the raw rows.
- Growth: ``compute_metrics`` over all history, ``metrics_by`` per workflow and day (best of 100 alternating rounds
  each: reads of a few milliseconds)
  and the scrape's p50 (a second server, over the smaller store, alternating with the first), over 1,000,000
  events next to the same over 100,000 (target: within 1.5x, i.e. flat in the number of events; before the
  rollups they grew linearly). A rollup read costs its number of (workflow, day, counter) rows, which grows
  with the days of history rather than with the events per day; both stores span the same 60 days.

CPUs: ``python -m bench`` pins itself to one CPU (SQLite and the HTTP client run in this process, on it);
the servers and PostgreSQL's backends and parallel workers are separate processes with every CPU allowed.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from datetime import time as dt_time
from functools import partial
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, func, select

from bench._metrics_seed import DAYS, EVENTS, WORKFLOWS, seed
from bench._timing import Pair, Report, best_of_timed, ms, timed
from bench._web_load import Clients, Sample, free_port, serve_argv, server
from bench._web_seed import postgres_schema
from marsrag.metrics.compute import compute_metrics, metrics_by
from marsrag.metrics.window import Window, window
from marsrag.state import utcnow
from marsrag.store import open_store
from marsrag.store._metrics_sql import Span
from marsrag.store._rollup_reads import split
from marsrag.store.schema import runs
from marsrag.store.sql import SqlRunStore

#: The smaller store of the growth figures.
SMALL_EVENTS = 100_000
ROUNDS = 5
#: The growth pairs are two reads of a few milliseconds each: more rounds, so one busy moment weighs less.
GROWTH_ROUNDS = 100
#: Targets (issue 20): compute_metrics, the by-day view and a scrape against their baselines; growth 100k -> 1M.
TARGET_METRICS = 2.0
TARGET_BY_DAY = 3.0
TARGET_SCRAPE = 5.0
TARGET_GROWTH = 1.5
SCRAPE_ROUNDS = 10
SCRAPE_PHASE_S = 0.5
_EVENT_SAMPLE = re.compile(r'^marsrag_loop_events_total\{name="([^"]+)"\} ([0-9.e+]+)$', re.MULTILINE)


def run() -> None:
    """Seed each backend twice (1,000,000 and 100,000 events), time the reads next to their baselines, print."""
    report = Report(
        f"loop metrics over {EVENTS:,} stored events ({DAYS} days, {len(WORKFLOWS)} workflows; library reads: "
        f"warm cache, best of {ROUNDS} alternating rounds, baseline SELECT count(*) FROM events, same engine; "
        f"/metrics: p50 vs the same server's /health; growth: the same reads over {SMALL_EVENTS:,} events, best of "
        f"{GROWTH_ROUNDS})"
    )
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="marsrag-metrics-bench-") as tmp, ExitStack() as schemas:
        postgres, why = schemas.enter_context(postgres_schema())
        backends = {"SQLite": (f"sqlite:///{tmp}/metrics.db", f"sqlite:///{tmp}/metrics-small.db")}
        if postgres is not None:
            small, _ = schemas.enter_context(postgres_schema())
            assert small is not None
            backends["PostgreSQL"] = (postgres, small)
        for name, (url, small_url) in backends.items():
            notes.extend(seed(url, EVENTS).notes(name))
            notes.extend(seed(small_url, SMALL_EVENTS).notes(f"{name} (growth store)"))
            library = _measure(report, notes, name, url, small_url)
            scrapes = _measure_scrapes(report, notes, name, (url, small_url), Path(tmp, f"home-{name.lower()}"))
            _add_growth(report, name, library, scrapes)
        if postgres is None:
            report.add("PostgreSQL: skipped (unreachable), not measured", "-", "-", 1.0, "(info)", True)
            notes.append(f"PostgreSQL rows skipped: {why}")
    report.notes.extend(notes)
    report.print()


def _measure(report: Report, notes: list[str], name: str, url: str, small_url: str) -> dict[str, Pair]:
    """The library calls and the CLI on one backend, each next to the count measured alternately with it.

    Returns the growth pairs of the library reads (the 1,000,000-event store's time next to the smaller one's).
    """
    store, small = open_store(url), open_store(small_url)
    try:
        assert isinstance(store, SqlRunStore)  # the baseline count(*) runs on the SQL store's own engine
        engine = store.engine
        count = timed(lambda: _count_events(engine))
        workflow = WORKFLOWS[0][0]
        week = window("7d")
        # The same window as run at noon UTC: the part of its partial first day counted from raw rows is the
        # longest there is, half a day (the --since 7d row's depends on this run's time of day).
        longest = window("7d", now=datetime.combine(utcnow().date(), dt_time(12, 0), tzinfo=UTC))
        cases: list[tuple[str, Window | None, str | None, bool]] = [
            ("all history", None, None, True),
            ("--since 7d", week, None, True),
            (f"--workflow {workflow}", None, workflow, True),
            ("--since 7d as at 12:00 UTC (the longest raw part)", longest, None, False),
        ]
        for label, scope, only, targeted in cases:
            pair = best_of_timed(timed(partial(compute_metrics, store, scope, only)), count, rounds=ROUNDS)
            report.add(
                f"{name}: compute_metrics, {label} vs count(*)",
                ms(pair.ours),
                ms(pair.base),
                pair.ratio,
                f"<= {TARGET_METRICS:.0f}x count" if targeted else "(info)",
                pair.ratio <= TARGET_METRICS or not targeted,
            )
        notes.append(f"{name}: {_partial_days(engine, week, longest)}")
        by_day = partial(metrics_by, by=("workflow", "day"))
        pair = best_of_timed(timed(lambda: by_day(store)), count, rounds=ROUNDS)
        report.add(
            f"{name}: metrics_by workflow and day (dashboard, review), all history vs count(*)",
            ms(pair.ours), ms(pair.base), pair.ratio, f"<= {TARGET_BY_DAY:.0f}x count", pair.ratio <= TARGET_BY_DAY,
        )  # fmt: skip
        growth = {
            "compute_metrics, all history": best_of_timed(
                timed(lambda: compute_metrics(store)), timed(lambda: compute_metrics(small)), rounds=GROWTH_ROUNDS
            ),
            "metrics_by workflow and day": best_of_timed(
                timed(lambda: by_day(store)), timed(lambda: by_day(small)), rounds=GROWTH_ROUNDS
            ),
        }
        expected = compute_metrics(store).to_dict()
    finally:
        store.close()
        small.close()
    cli = _cli_run(url, expected)
    start = _cli_fixed_cost()
    with open_store(url) as again:
        assert isinstance(again, SqlRunStore)
        pair = best_of_timed(cli, timed(lambda: _count_events(again.engine)), rounds=3)
    report.add(
        f"{name}: marsrag metrics --db URL --format json (a process: Python start included) vs count(*)",
        ms(pair.ours), ms(pair.base), pair.ratio, "(info)", True,
    )  # fmt: skip
    notes.append(
        f"{name}: of the CLI's time, {ms(start)} is its fixed cost (starting Python, importing MarsRAG, opening "
        "a store: marsrag metrics on an empty SQLite store); its JSON equals compute_metrics'"
    )
    return growth


@dataclass
class Scrapes:
    """Latencies of ``GET /metrics`` on the servers of both stores and of ``GET /health`` on the larger one's."""

    metrics: Sample
    small_metrics: Sample
    health: Sample


def _measure_scrapes(report: Report, notes: list[str], name: str, urls: tuple[str, str], home: Path) -> Scrapes:
    """One server per store (``marsrag serve``); scrapes of each and the larger one's /health, alternated."""
    url, small_url = urls
    port, small_port = free_port(), free_port()
    with (
        server(serve_argv(port, url), port, home / "large"),
        server(serve_argv(small_port, small_url), small_port, home / "small"),
    ):
        clients, small_clients = Clients(port, 1), Clients(small_port, 1)
        try:
            _check_scrape(clients, url)
            _check_scrape(small_clients, small_url)
            for warm in (clients, small_clients):  # connections, the registry, the database's caches
                warm.load(_path("/metrics"), 0.5)
            clients.load(_path("/health"), 0.5)
            scrapes = Scrapes(Sample([], 0.0), Sample([], 0.0), Sample([], 0.0))
            for _ in range(SCRAPE_ROUNDS):
                scrapes.health += clients.load(_path("/health"), SCRAPE_PHASE_S)
                scrapes.metrics += clients.load(_path("/metrics"), SCRAPE_PHASE_S)
                scrapes.small_metrics += small_clients.load(_path("/metrics"), SCRAPE_PHASE_S)
        finally:
            clients.close()
            small_clients.close()
    ours, base = scrapes.metrics.percentile(0.5), scrapes.health.percentile(0.5)
    report.add(
        f"{name}: one /metrics scrape (Prometheus) p50 vs the same server's /health p50 "
        f"({len(scrapes.metrics.latencies):,} scrapes, {len(scrapes.health.latencies):,} health checks)",
        f"{ours * 1e3:.1f} ms",
        f"{base * 1e3:.1f} ms",
        ours / base,
        f"<= {TARGET_SCRAPE:.0f}x /health",
        ours / base <= TARGET_SCRAPE,
    )
    fastest, fastest_health = min(scrapes.metrics.latencies), min(scrapes.health.latencies)
    notes.append(
        f"{name}: the fastest scrape took {fastest * 1e3:.1f} ms, the fastest /health {fastest_health * 1e3:.1f} ms "
        f"({fastest / fastest_health:.2f}x); latencies include any wait for a CPU on a busy machine"
    )
    return scrapes


def _path(path: str) -> Callable[[random.Random], str]:
    return lambda _rng: path


def _check_scrape(clients: Clients, url: str) -> None:
    """The scrape's events per name equal the raw rows' count, before anything is timed.

    Raises:
        RuntimeError: they differ.
    """
    scraped = {name: int(float(n)) for name, n in _EVENT_SAMPLE.findall(clients.get("/metrics").decode())}
    with open_store(url) as store:
        counted = store.event_counts(from_rows=True)
    if {k: v for k, v in scraped.items() if v} != counted:
        raise RuntimeError(f"GET /metrics exported the events {scraped!r}, the raw rows hold {counted!r}")


def _add_growth(report: Report, name: str, library: dict[str, Pair], scrapes: Scrapes) -> None:
    """The growth rows: each read over the 1,000,000-event store next to the same over the 100,000-event one."""
    sizes = f"{EVENTS:,} vs {SMALL_EVENTS:,} events"
    target = f"<= {TARGET_GROWTH}x"
    for label, pair in library.items():
        report.add(
            f"{name}: growth, {label}: {sizes}",
            ms(pair.ours), ms(pair.base), pair.ratio, target, pair.ratio <= TARGET_GROWTH,
        )  # fmt: skip
    ours, base = scrapes.metrics.percentile(0.5), scrapes.small_metrics.percentile(0.5)
    report.add(
        f"{name}: growth, one /metrics scrape p50: {sizes}",
        f"{ours * 1e3:.1f} ms", f"{base * 1e3:.1f} ms", ours / base, target, ours / base <= TARGET_GROWTH,
    )  # fmt: skip


def _partial_days(engine: Engine, week: Window, longest: Window) -> str:
    """What the two ``--since 7d`` windows count from raw rows: the part of their partial first day, and its runs."""
    parts = []
    for label, scope in (("--since 7d", week), ("as at 12:00 UTC", longest)):
        _days, edges = split(Span(scope.since, scope.until))
        for edge in edges:
            assert edge.span.since is not None and edge.span.until is not None
            start, end = edge.span.since, edge.span.until
            with engine.connect() as connection:
                in_edge = connection.execute(
                    select(func.count()).where(runs.c.created_at >= start, runs.c.created_at < end)
                ).scalar_one()
            how = "added" if edge.sign > 0 else "taken from its whole day"
            parts.append(
                f"{label}: {start:%H:%M}-{end:%H:%M} UTC, {_span(end - start)} of raw rows ({in_edge:,} runs), {how}"
            )
    return (
        "the windows' whole days come from the rollups and the shorter part of their partial first day from the raw"
        " rows (" + "; ".join(parts) + "), so the --since 7d figure depends on the time of day it is measured at"
    )


def _span(length: timedelta) -> str:
    minutes = round(length.total_seconds() / 60)
    return f"{minutes // 60} h {minutes % 60:02d} min"


def _count_events(engine: Engine) -> int:
    with engine.connect() as connection:
        return int(connection.exec_driver_sql("SELECT count(*) FROM events").scalar_one())


def _cli_run(url: str, expected: dict[str, Any]) -> Callable[[], float]:
    """A self-timing ``marsrag metrics`` process whose output must equal ``expected``."""
    argv = [*_marsrag(), "metrics", "--db", url, "--format", "json"]

    def run_once() -> float:
        start = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, check=True)
        seconds = time.perf_counter() - start
        if json.loads(done.stdout) != expected:
            raise RuntimeError(f"marsrag metrics printed {done.stdout!r}, the library computed {expected!r}")
        return seconds

    return run_once


def _cli_fixed_cost(rounds: int = 3) -> float:
    """Best seconds of ``marsrag metrics`` over an empty store: the CLI figure's cost that is not the queries."""
    with tempfile.TemporaryDirectory(prefix="marsrag-metrics-bench-") as tmp:
        url = f"sqlite:///{tmp}/empty.db"
        open_store(url).close()
        argv = [*_marsrag(), "metrics", "--db", url, "--format", "json"]
        best = float("inf")
        for _ in range(rounds + 1):  # the first one warms the OS cache
            start = time.perf_counter()
            subprocess.run(argv, capture_output=True, check=True)
            best = min(best, time.perf_counter() - start)
    return best


def _marsrag() -> list[str]:
    """The installed ``marsrag`` script next to this interpreter, else ``python -m marsrag``."""
    script = Path(sys.executable).with_name("marsrag")
    return [str(script)] if script.exists() else [sys.executable, "-m", "marsrag"]
