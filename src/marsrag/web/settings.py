"""Settings of the web server: what to serve (store, config, LLM) and how to guard it."""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass, field

from marsrag.runtime.executor import configured_broker

#: Request bodies above this many bytes are refused with 413 (a goal is at most 100,000 characters).
DEFAULT_MAX_BODY_BYTES = 512 * 1024


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine (127.0.0.0/8, ::1, localhost)."""
    if host.strip("[]").lower() in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a hostname: it may resolve to any interface


#: The names a loopback server answers to (others may be a DNS-rebinding page); MARSRAG_ALLOWED_HOSTS adds more.
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


def _env_hosts() -> tuple[str, ...]:
    """``LOOPBACK_HOSTS`` plus the comma-separated names in ``MARSRAG_ALLOWED_HOSTS``."""
    extra = [name.strip() for name in os.environ.get("MARSRAG_ALLOWED_HOSTS", "").split(",") if name.strip()]
    return (*LOOPBACK_HOSTS, *extra)


def _env_token() -> str | None:
    """``MARSRAG_TOKEN`` stripped; blank is no token (the bearer header's value is stripped: it could never match)."""
    return os.environ.get("MARSRAG_TOKEN", "").strip() or None


@dataclass(frozen=True)
class WebSettings:
    """What the server serves and how it guards it; the same defaults as ``marsrag run``.

    Attributes:
        db: store URL (None: ``MARSRAG_DB``, else a file in the data directory).
        config: config folder (None: ``./config``, else the shipped sample).
        llm: ``composer`` (default), ``replay:FILE`` or a CrewAI model string.
        base_url: OpenAI-compatible server for ``llm``.
        host: the address the server binds to; off loopback, mutating requests need ``token``.
        token: the bearer token (None: ``MARSRAG_TOKEN``).
        max_body_bytes: larger request bodies get 413.
        run_threads: runs executing at once in this process (without a broker).
        allowed_hosts: on loopback, the Host names served (None: loopback names and ``MARSRAG_ALLOWED_HOSTS``).
        broker: the job queue (None: ``MARSRAG_BROKER``); set, runs and actions execute on ``marsrag worker``.
    """

    db: str | None = None
    config: str | None = None
    llm: str | None = None
    base_url: str | None = None
    host: str = "127.0.0.1"
    token: str | None = field(default_factory=lambda: _env_token())
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    run_threads: int = 2
    broker: str | None = field(default_factory=configured_broker)
    allowed_hosts: tuple[str, ...] = field(default_factory=_env_hosts)

    @property
    def requires_token(self) -> bool:
        """Whether mutating requests must carry the token: whenever the server binds off loopback."""
        return not is_loopback(self.host)
