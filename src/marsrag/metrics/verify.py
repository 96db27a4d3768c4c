"""Checking the metrics' rollups against the raw rows, and rebuilding them: ``marsrag metrics --verify/--rebuild``.

Every read model the metrics use is read twice, from the rollups (what every command shows) and from the raw
rows with the reference SQL (``from_rows=True``), over all history: the loop counts (the feedback and the edited
follows among them) per workflow, UTC day and experiment arm, per workflow and day, per day, per workflow and arm,
per workflow, per arm and overall; the events per name; the repair and fallback rankings; the partial counts.
Days add up (each count belongs to one day), so equal days mean equal figures for every window of whole days,
and a window's partial days are always counted from the raw rows.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from marsrag.store import GroupKey, LoopCounts, RunStore

#: The groupings checked, finest first.
GROUPINGS: tuple[tuple[GroupKey, ...], ...] = (
    ("workflow", "day", "arm"),
    ("workflow", "day"),
    ("day",),
    ("workflow", "arm"),
    ("workflow",),
    ("arm",),
    (),
)
_COUNTS = tuple(item.name for item in fields(LoopCounts))


@dataclass(frozen=True)
class Difference:
    """One figure the rollups hold otherwise than the raw rows."""

    what: str
    rollups: Any
    rows: Any

    def line(self) -> str:
        """``WHAT: rollups X, raw rows Y``."""
        return f"{self.what}: rollups {self.rollups}, raw rows {self.rows}"

    def to_dict(self) -> dict[str, Any]:
        """``{"what", "rollups", "rows"}``."""
        return {"what": self.what, "rollups": self.rollups, "rows": self.rows}


@dataclass(frozen=True)
class Verdict:
    """What a check compared and what differed."""

    checked: int
    differences: tuple[Difference, ...]

    @property
    def ok(self) -> bool:
        """Whether every figure matched."""
        return not self.differences

    def to_dict(self) -> dict[str, Any]:
        """``{"ok", "checked", "differences": [...]}`` (the JSON of ``--verify``)."""
        return {"ok": self.ok, "checked": self.checked, "differences": [d.to_dict() for d in self.differences]}


def verify(store: RunStore) -> Verdict:
    """Compare every figure of the rollups with the raw rows' recount (all history)."""
    checked, differences = 0, []
    for by in GROUPINGS:
        kept, counted = store.loop_counts(by=by), store.loop_counts(by=by, from_rows=True)
        for key in sorted(set(kept) | set(counted), key=repr):
            mine, theirs = kept.get(key, LoopCounts()), counted.get(key, LoopCounts())
            for name in _COUNTS:
                checked += 1
                if getattr(mine, name) != getattr(theirs, name):
                    differences.append(
                        Difference(f"{_group(by, key)} {name}", getattr(mine, name), getattr(theirs, name))
                    )
    pairs: list[tuple[str, Any, Any]] = [
        ("events per name", store.event_counts(), store.event_counts(from_rows=True)),
        ("partial counts", store.partial_counts(), store.partial_counts(from_rows=True)),
    ]
    for name, ranked in (("repairs", store.repair_rankings), ("fallbacks", store.fallback_rankings)):
        kept_ranks, counted_ranks = ranked(), ranked(from_rows=True)
        for level, index in (("per workflow", 0), ("per task", 1)):
            pairs.append((f"{name} {level}", _outcomes(kept_ranks[index]), _outcomes(counted_ranks[index])))
    for what, mine, theirs in pairs:
        for key in sorted(set(mine) | set(theirs), key=repr):
            checked += 1
            if mine.get(key) != theirs.get(key):
                differences.append(Difference(f"{what} {key}", mine.get(key), theirs.get(key)))
    return Verdict(checked, tuple(differences))


def _group(by: tuple[GroupKey, ...], key: tuple[Any, ...]) -> str:
    if not by:
        return "all history"
    return ", ".join(f"{name} {value}" for name, value in zip(by, key, strict=True))


def _outcomes(outcomes: Any) -> dict[Any, tuple[int, int]]:
    return {(o.workflow, o.task_id): (o.count, o.total) for o in outcomes}
