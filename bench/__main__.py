"""``python -m bench`` (``make bench``): every benchmark, each figure next to its same-run baseline.

Each benchmark module runs in a fresh interpreter of its own (``python -m bench.one NAME``): what one module
leaves behind (CrewAI's threads, a heap of a million seeded rows the collector walks at every full collection,
warmed caches) would otherwise tilt the figures of the modules after it, and not evenly between a figure and
its baseline. The child prints its tables as it goes and hands them back as JSON for the performance page.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

from bench._page import DATA, PAGE, ROOT, machine, write
from bench._timing import Report, pin_to_one_core

#: The benchmarks, in the order a whole run takes them (each is ``bench/NAME_bench.py``).
NAMES = (
    "contract",
    "crewai",
    "runtime",
    "async",
    "flows",
    "store",
    "rag",
    "support",
    "retrieval",
    "main_job",
    "coldstart",
    "web",
    "load",
    "metrics",
    "experiments",
    "realmodel",
    "stream",
    "tracing",
)


def main() -> None:
    """Run the benchmarks in a throwaway home, so CrewAI's files land nowhere that lasts.

    With no arguments every benchmark runs and the run is written to ``docs/performance.md`` (and JSON);
    with names (``python -m bench contract web``) only those run, and nothing is written: the page holds
    one whole run.
    """
    chosen = sys.argv[1:]
    unknown = sorted(set(chosen) - set(NAMES))
    if unknown:
        raise SystemExit(f"unknown benchmark {', '.join(unknown)}: choose from {', '.join(NAMES)}")
    with tempfile.TemporaryDirectory(prefix="marsrag-bench-") as home:
        os.environ.update(
            HOME=home, XDG_DATA_HOME=f"{home}/data", XDG_CONFIG_HOME=f"{home}/config", MARSRAG_HOME=f"{home}/marsrag"
        )
        about = machine()
        # The children inherit the pinning (an affinity mask survives exec).
        print(
            f"MarsRAG benchmarks, {about['date']}, commit {about['commit']}, {about['cpu']} ({about['cores']} cores),"
            f" Python {platform.python_version()} {platform.machine()}; {pin_to_one_core()}; each benchmark in a"
            " fresh process",
            flush=True,
        )
        reports: list[Report] = []
        for name in chosen or NAMES:
            reports.extend(_run_one(name, Path(home)))
        if not chosen:
            write(reports, about)
            print(f"\nwritten: {PAGE.relative_to(ROOT)} and {DATA.relative_to(ROOT)}")


def _run_one(name: str, home: Path) -> list[Report]:
    """Run benchmark ``name`` in a child interpreter; its tables, as it printed them.

    Raises:
        SystemExit: the child failed (its traceback is on stderr already).
    """
    out = home / f"{name}.json"
    # -m bench.one from the repository root, as `python -m bench` itself is run.
    done = subprocess.run([sys.executable, "-m", "bench.one", name, str(out)], cwd=ROOT, check=False)
    if done.returncode != 0:
        raise SystemExit(f"benchmark {name} failed (exit {done.returncode})")
    return [Report.from_json(table) for table in json.loads(out.read_text(encoding="utf-8"))]


if __name__ == "__main__":
    main()
