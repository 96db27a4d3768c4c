"""Failpoints: named places where a test can make this process die at once, to prove crash safety.

Inert unless ``MARSRAG_FAILPOINTS`` is set (a comma-separated list of ``name`` or ``name:key``), which only
crash tests do, in the subprocess they then kill. A matching failpoint sends this process SIGKILL: no
cleanup, no flush, exactly like a crash.
"""

from __future__ import annotations

import os
import signal

_ENV = "MARSRAG_FAILPOINTS"


def failpoint(name: str, key: str | None = None) -> None:
    """Die here (SIGKILL) when ``name`` or ``name:key`` is listed in ``MARSRAG_FAILPOINTS``."""
    armed = os.environ.get(_ENV)
    if not armed:
        return
    points = {point.strip() for point in armed.split(",")}
    if name in points or (key is not None and f"{name}:{key}" in points):
        os.kill(os.getpid(), signal.SIGKILL)
