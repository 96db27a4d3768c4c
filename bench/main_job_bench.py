"""The main job (issue: knowledge base, offline composer, `make run`).

Wall time of what `make run` does on a warm virtualenv (ingest the sample knowledge base into a fresh data
directory, then answer the sample goal with the offline composer), next to a bare interpreter start in the
same run (target: < 15 s).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._timing import Report

GOAL = "Checkout latency breached its SLO in three regions right after cache nodes restarted. What should we do?"
ROOT = Path(__file__).resolve().parents[1]


def _timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, env=env, cwd=ROOT, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:4])} failed: {proc.stderr.decode()[-500:]}")
    return time.perf_counter() - start


def run() -> None:
    """Time the `make run` steps and print the table."""
    report = Report("main job (what `make run` runs, warm venv, fresh data directory)")
    with tempfile.TemporaryDirectory(prefix="marsrag-main-job-") as home:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MARSRAG_DB", "MARSRAG_LLM"))}
        env["MARSRAG_HOME"] = home
        marsrag = [sys.executable, "-m", "marsrag"]
        ingest = _timed([*marsrag, "ingest", "examples/knowledge_base"], env)
        answer = _timed([*marsrag, "run", GOAL], env)
        base = _timed([sys.executable, "-c", "pass"], env)
    total = ingest + answer
    report.add(
        f"make run: ingest ({ingest:.1f} s) + run 3 tasks ({answer:.1f} s) vs `python -c pass`",
        f"{total:.1f} s",
        f"{base * 1e3:.0f} ms",
        total / base,
        "< 15 s",
        total < 15,
    )
    report.print()
