"""The sample answer every benchmark renders in its various forms."""

from __future__ import annotations

import json

from marsrag.contract import FIELDS

CONTENT = {
    "hook": "Three of your five API regions breached their latency SLO this week.",
    "grip": "Every breach started within ten minutes of a cache node restart, so cold caches are the common cause.",
    "payoff": "Stagger cache restarts and pre-warm each node from a snapshot before it rejoins the pool.",
    "reinforce": "Pre-warmed nodes reached a 95% hit rate in two minutes in staging, versus forty minutes cold.",
    "loop": "Should we pre-warm from the latest snapshot or from a replayed traffic sample?",
}
CLEAN = json.dumps(CONTENT)


def labelled(fmt: str, sep: str = "\n") -> str:
    """CONTENT with one format per section: {n} number, {L} LABEL, {T} Label, {v} value."""
    return sep.join(
        fmt.format(n=n, L=name.upper(), T=name.title(), v=CONTENT[name]) for n, name in enumerate(FIELDS, 1)
    )
