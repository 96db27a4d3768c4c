"""The support signal (issue: answers that know their limits) on the sample knowledge base.

Each goal of ``bench/_support_goals.py`` is retrieved for as a run's first task is (``marsrag.runtime.retrieval
.retrieve``: the goal as the query, five passages) on SQLite and, when it answers on 127.0.0.1:5432, on
PostgreSQL, and its support level counted:

- goals about topics the knowledge base lacks that are ``none`` (target >= 90%);
- goals it answers, worded plainly, that are not ``none`` (target >= 90%);

for the calibration set and the held-out set apart (the thresholds were set on the first only), and the goals
whose level differs between the backends. Then the cost: assessing support next to the search it follows,
per task.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench._support_goals import CALIBRATION_INSIDE, CALIBRATION_OUTSIDE, HELD_OUT_INSIDE, HELD_OUT_OUTSIDE
from bench._timing import Report, ms

ROOT = Path(__file__).resolve().parents[1]
KNOWLEDGE = ROOT / "examples" / "knowledge_base"
POSTGRES = os.environ.get("MARSRAG_BENCH_POSTGRES", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


def run() -> None:
    """Measure the support levels on both backends, and the cost of assessing them."""
    from marsrag.rag import KnowledgeBase

    report = Report("support signal on the sample knowledge base: levels of goals inside and outside it")
    levels: dict[str, dict[str, str]] = {}
    with tempfile.TemporaryDirectory(prefix="marsrag-support-bench-") as tmp:
        backends: list[tuple[str, Callable[[], Any]]] = [
            ("SQLite", lambda: KnowledgeBase.open(f"sqlite:///{tmp}/kb.db"))
        ]
        if _postgres_up():
            backends.append(("PostgreSQL", lambda: _fresh_postgres(KnowledgeBase)))
        else:
            report.note("PostgreSQL: not reachable on 127.0.0.1:5432, measured on SQLite only")
        for name, opener in backends:
            kb = opener()
            try:
                kb.ingest([KNOWLEDGE])
                levels[name] = _levels(report, name, kb)
                if name == "SQLite":
                    _cost(report, kb)
            finally:
                kb.close()
    if len(levels) == 2:
        sqlite, postgres = levels["SQLite"], levels["PostgreSQL"]
        # The backends rank passages differently (BM25, ts_rank_cd), so a goal may get other passages on each.
        differing = [goal for goal, level in sqlite.items() if postgres[goal] != level]
        split = [goal for goal in differing if "none" in (sqlite[goal], postgres[goal])]
        report.add(
            "goals supported on one backend and not the other", f"{len(split)}/{len(sqlite)}", "0",
            float(len(split)), "0", not split,
        )  # fmt: skip
        report.add(
            "goals strong on one backend and weak on the other (other passages retrieved)",
            f"{len(differing) - len(split)}/{len(sqlite)}", "0", float(len(differing) - len(split)), "(info)", True,
        )  # fmt: skip
        for goal in differing:
            report.note(f"differs: {goal!r}: SQLite {levels['SQLite'][goal]}, PostgreSQL {levels['PostgreSQL'][goal]}")
    report.print()


def _levels(report: Report, backend: str, kb: Any) -> dict[str, str]:
    from marsrag.runtime.retrieval import retrieve

    found: dict[str, str] = {}
    for label, inside, goals in (
        ("calibration, outside", False, CALIBRATION_OUTSIDE),
        ("calibration, inside", True, CALIBRATION_INSIDE),
        ("held out, outside", False, HELD_OUT_OUTSIDE),
        ("held out, inside", True, HELD_OUT_INSIDE),
    ):
        supports = [retrieve(kb, None, goal, 5).support for goal in goals]
        for goal, support in zip(goals, supports, strict=True):
            assert support is not None
            found[goal] = support.level
        right = sum((support is not None and support.level != "none") == inside for support in supports)
        want = "not none" if inside else "none"
        report.add(
            f"{backend}: {label} goals {want}",
            f"{right}/{len(goals)}",
            f"{len(goals)}/{len(goals)}",
            right / len(goals),
            ">= 90%",
            right >= 0.9 * len(goals),
        )
        for goal, support in zip(goals, supports, strict=True):
            if support is not None and (support.level != "none") != inside:
                report.note(f"{backend}: {support.level} (score {support.score:.2f}) for {label} goal {goal!r}")
    return found


def _cost(report: Report, kb: Any) -> None:
    from marsrag.rag.support import asked_terms, assess

    goals = [*CALIBRATION_INSIDE, *CALIBRATION_OUTSIDE]
    searched = [(goal, kb.search(goal, 5)) for goal in goals]
    search_times, assess_times = [], []
    for _ in range(5):
        start = time.perf_counter()
        for goal in goals:
            kb.search(goal, 5)
        search_times.append((time.perf_counter() - start) / len(goals))
        start = time.perf_counter()
        for goal, results in searched:
            assess(goal, None, results, kb.term_counts(asked_terms(goal, None)))
        assess_times.append((time.perf_counter() - start) / len(goals))
    ours, base = statistics.median(assess_times), statistics.median(search_times)
    report.add(
        "assessing support (term counts + scoring 5 passages) vs the search itself, per task",
        ms(ours),
        ms(base),
        ours / base,
        "(info)",
        True,
    )


def _postgres_up() -> bool:
    import socket

    try:
        with socket.create_connection(("127.0.0.1", 5432), timeout=1):
            return True
    except OSError:
        return False


def _fresh_postgres(knowledge_base: Any) -> Any:
    """A knowledge base in a schema of its own on the PostgreSQL server (dropped and made again)."""
    from sqlalchemy import create_engine, text

    engine = create_engine(POSTGRES)
    with engine.begin() as connection:
        connection.execute(text("DROP SCHEMA IF EXISTS support_bench CASCADE"))
        connection.execute(text("CREATE SCHEMA support_bench"))
    engine.dispose()
    separator = "&" if "?" in POSTGRES else "?"
    return knowledge_base.open(f"{POSTGRES}{separator}options=-csearch_path%3Dsupport_bench")
