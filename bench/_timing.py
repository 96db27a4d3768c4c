"""Timing helpers: best-of-N per-call times, measured alternately for a figure and its baseline."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def pin_to_one_core() -> str:
    """Pin this process to one CPU so figure and baseline share the same core; say which."""
    try:
        cpu = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpu})
        return f"pinned to CPU {cpu}"
    except (AttributeError, OSError):
        return "not pinned (no sched_setaffinity here)"


def _calibrate(fn: Callable[[], object], budget: float) -> int:
    number = 1
    while True:
        start = time.perf_counter()
        for _ in range(number):
            fn()
        if time.perf_counter() - start >= budget or number >= 1 << 22:
            return number
        number *= 2


def per_call(fn: Callable[[], object], number: int) -> float:
    """Seconds per call of ``fn`` over ``number`` calls."""
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


@dataclass
class Pair:
    """A figure and its baseline, seconds per call (best of the rounds)."""

    ours: float
    base: float

    @property
    def ratio(self) -> float:
        return self.ours / self.base


def compare(ours: Callable[[], object], base: Callable[[], object], *, rounds: int = 7, budget: float = 0.04) -> Pair:
    """Time ``ours`` and ``base`` alternately, ``rounds`` times each, keeping each one's best."""
    n_ours, n_base = _calibrate(ours, budget), _calibrate(base, budget)
    best_ours = best_base = float("inf")
    for _ in range(rounds):
        best_base = min(best_base, per_call(base, n_base))
        best_ours = min(best_ours, per_call(ours, n_ours))
    return Pair(best_ours, best_base)


def best_of_timed(ours: Callable[[], float], base: Callable[[], float], *, rounds: int, warmup: bool = True) -> Pair:
    """Best of ``rounds`` for two self-timing runs (each returns the seconds it measured), alternated."""
    if warmup:
        ours(), base()
    best_ours = best_base = float("inf")
    for _ in range(rounds):
        best_base = min(best_base, base())
        best_ours = min(best_ours, ours())
    return Pair(best_ours, best_base)


def timed(fn: Callable[[], object]) -> Callable[[], float]:
    """``fn`` as a run that returns the seconds it took (what :func:`best_of_timed` alternates)."""

    def run() -> float:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start

    return run


def ms(seconds: float) -> str:
    """A duration for a table cell: 0.1 ms resolution below 100 ms, whole milliseconds up to 10 s, then seconds."""
    if seconds < 0.1:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e3:.0f} ms" if seconds < 10 else f"{seconds:.1f} s"


def rate(seconds: float) -> str:
    """Calls per second, human-readable."""
    per_second = 1 / seconds
    if per_second >= 1e6:
        return f"{per_second / 1e6:.2f}M/s"
    if per_second >= 1e3:
        return f"{per_second / 1e3:.1f}k/s"
    return f"{per_second:.1f}/s"


#: Every table printed in this process, in order, with its notes: what ``make bench`` writes to the docs.
PRINTED: list[Report] = []


class Report:
    """Collects rows and prints them as an aligned table (recorded in :data:`PRINTED` when printed)."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.rows: list[tuple[str, str, str, str, str, str]] = []
        #: Lines printed under the table: what was measured and how, or why something was skipped.
        self.notes: list[str] = []

    def to_json(self) -> dict[str, Any]:
        """The table as JSON (how a benchmark's child process hands it back)."""
        return {"title": self.title, "rows": [list(row) for row in self.rows], "notes": self.notes}

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> Report:
        """The table :meth:`to_json` wrote (not recorded as printed: the child printed it)."""
        report = cls(document["title"])
        report.rows = [(r[0], r[1], r[2], r[3], r[4], r[5]) for r in document["rows"]]
        report.notes = list(document["notes"])
        return report

    def add(self, name: str, ours: str, base: str, ratio: float, target: str, ok: bool) -> None:
        self.rows.append((name, ours, base, f"{ratio:.2f}x", target, "ok" if ok else "MISS"))

    def print(self) -> None:
        header = ("figure", "ours", "baseline", "ratio", "target", "")
        widths = [max(len(row[i]) for row in [header, *self.rows]) for i in range(6)]
        print(f"\n== {self.title}")
        if self.rows:
            for row in [header, *self.rows]:
                print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
        for note in self.notes:
            print(f"  {note}")
        PRINTED.append(self)

    def note(self, text: str) -> None:
        """Add a line under the table; printed at once when the table already was."""
        self.notes.append(text)
        if self in PRINTED:
            print(f"  {text}")
