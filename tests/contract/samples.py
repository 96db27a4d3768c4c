"""Sample Loop Contract content shared by the contract tests."""

from __future__ import annotations

import json

CONTENT = {
    "hook": "Three of your five API regions breached their latency SLO this week.",
    "grip": "Every breach started within ten minutes of a cache node restart, so cold caches are the common cause.",
    "payoff": "Stagger cache restarts and pre-warm each node from a snapshot before it rejoins the pool.",
    "reinforce": "Pre-warmed nodes reached a 95% hit rate in two minutes in staging, versus forty minutes cold.",
    "loop": "Should we pre-warm from the latest snapshot or from a replayed traffic sample?",
}
FIELDS = tuple(CONTENT)
CLEAN_JSON = json.dumps(CONTENT)


def labelled(fmt: str, sep: str = "\n", content: dict[str, str] = CONTENT) -> str:
    """Render CONTENT with one line format per section; {n} number, {L} LABEL, {T} Label, {l} label, {v} value."""
    return sep.join(
        fmt.format(n=n, L=name.upper(), T=name.title(), l=name, v=content[name])
        for n, name in enumerate(FIELDS, start=1)
    )
