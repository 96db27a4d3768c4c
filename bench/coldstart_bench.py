"""Cold start of the read-only commands (issue 20, item 5: fast cold starts).

Each read-only command (``metrics``, ``runs list``, ``runs show``, ``review``, ``validate``, ``schema``,
``lint``) is timed as a fresh process (``python -m marsrag ...``, default text output, its stdout a pipe), next
to ``python -c "import sqlalchemy"``: what any tool reading a SQL store pays before its first query. The two
are measured alternately in the same run: each round runs the baseline, then every command once; a figure is
the best of 15 rounds after a warm-up, next to the baseline's best (target: <= 2x).

The store is a SQLite file of 50 realistic runs (``bench._web_seed``: three task states with attempts, two
transitions and about six events each, the newest just now); ``runs show`` shows the newest, ``review`` is of
the runs' ISO week, ``validate`` reads a clean JSON answer, ``lint`` lints the shipped sample config. Every
process must exit 0. Bytecode is cached in a throwaway directory, written by the warm-up (both sides), so the
figures are those of an installed package whatever ``PYTHONDONTWRITEBYTECODE`` says.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench._samples import CLEAN
from bench._timing import Pair, Report
from bench._web_seed import seed
from marsrag.state import utcnow
from marsrag.tasks.loader import sample_config_dir

ROUNDS = 15
RUNS = 50
TARGET = 2.0
BASELINE = [sys.executable, "-c", "import sqlalchemy"]


def run() -> None:
    """Seed a store, time each read-only command next to the SQLAlchemy import, print the table."""
    report = Report(
        f"cold start of the read-only commands (a fresh process each, text output; best of {ROUNDS} alternating "
        'rounds after a warm-up; baseline python -c "import sqlalchemy", same run)'
    )
    with tempfile.TemporaryDirectory(prefix="marsrag-coldstart-bench-") as tmp:
        url = f"sqlite:///{tmp}/runs.db"
        newest = seed(url, RUNS).run_ids[-1]
        answer = Path(tmp, "answer.json")
        answer.write_text(CLEAN, encoding="utf-8")
        settings = Path(tmp, "settings.toml")
        settings.write_text("", encoding="utf-8")
        year, week, _ = utcnow().isocalendar()
        commands = {
            "metrics": ["metrics", "--db", url],
            "runs list": ["runs", "list", "--db", url],
            "runs show": ["runs", "show", newest, "--db", url],
            "review": ["review", "--db", url, "--week", f"{year}-W{week:02d}"],
            "validate": ["validate", str(answer)],
            "schema": ["schema"],
            "lint": ["lint", str(sample_config_dir())],
        }
        env = _environment(tmp, settings)
        timed = {name: _timed([sys.executable, "-m", "marsrag", *args], env) for name, args in commands.items()}
        pairs = _rounds(timed, _timed(BASELINE, env))
        for name, pair in pairs.items():
            report.add(
                f'cold start: marsrag {name} vs python -c "import sqlalchemy"',
                f"{pair.ours * 1e3:.0f} ms",
                f"{pair.base * 1e3:.0f} ms",
                pair.ratio,
                f"<= {TARGET:.0f}x",
                pair.ratio <= TARGET,
            )
    misses = sum(pair.ratio > TARGET for pair in pairs.values())
    report.note(
        f"{RUNS} runs in a SQLite file; {len(commands) - misses} of {len(commands)} commands within {TARGET:.0f}x; "
        "what each imports is checked in tests/test_cold_start.py (no CrewAI, Alembic, FastAPI...)"
    )
    report.print()


def _rounds(commands: dict[str, Callable[[], float]], base: Callable[[], float]) -> dict[str, Pair]:
    """Each command's best time and the baseline's, over rounds that run the baseline then every command once."""
    for once in (base, *commands.values()):
        once()  # the warm-up: bytecode written, files in the OS cache
    best_base = float("inf")
    best = dict.fromkeys(commands, float("inf"))
    for _ in range(ROUNDS):
        best_base = min(best_base, base())
        for name, once in commands.items():
            best[name] = min(best[name], once())
    return {name: Pair(seconds, best_base) for name, seconds in best.items()}


def _environment(tmp: str, settings: Path) -> dict[str, str]:
    """This process's environment without MarsRAG's store and LLM settings, with a bytecode cache of its own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MARSRAG_") and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(
        MARSRAG_HOME=f"{tmp}/home",
        MARSRAG_CONFIG=str(settings),
        PYTHONPYCACHEPREFIX=f"{tmp}/pycache",
        COLUMNS="120",
    )
    return env


def _timed(argv: list[str], env: dict[str, str]) -> Callable[[], float]:
    """A self-timing run of ``argv`` as a fresh process, which must exit 0."""

    def once() -> float:
        start = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, env=env, check=False)
        seconds = time.perf_counter() - start
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(argv[1:6])} exited {done.returncode}: {done.stderr.decode()[-500:]}")
        return seconds

    return once
