"""Settings of the web server: how it serves and guards what the resolved :class:`~marsrag.settings.Settings` name."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from marsrag.runtime.async_executor import DEFAULT_CONCURRENCY
from marsrag.runtime.executor import ExecutorKind
from marsrag.settings import Settings, resolve_settings

#: Off loopback, MARSRAG_TOKEN must be at least this long (``secrets.token_urlsafe(32)`` gives 43 characters).
MIN_TOKEN_CHARS = 32
#: How to make a token, as the error for a missing or short one says.
TOKEN_HINT = 'generate one with: python -c "import secrets; print(secrets.token_urlsafe(32))"'

#: Request bodies above this many bytes are refused with 413 (a goal is at most 100,000 characters).
DEFAULT_MAX_BODY_BYTES = 512 * 1024
#: Seconds a stopping server gives executing runs to reach their next commit point (``--shutdown-grace``).
DEFAULT_SHUTDOWN_GRACE = 30.0


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


@dataclass(frozen=True)
class WebSettings:
    """How the server serves: around the resolved :class:`Settings` (store, config, LLM, broker) of ``marsrag run``.

    Attributes:
        settings: what to serve and execute with (default: resolved from the environment and the settings file).
        host: the address the server binds to; off loopback, every request but ``/health``, ``/login`` and
            ``/static/`` needs ``token``.
        token: the bearer token (None: the settings' ``MARSRAG_TOKEN``).
        max_body_bytes: larger request bodies get 413.
        run_threads: runs executing at once in this process on the thread executor (without a broker).
        executor: how this process executes runs (without a broker): ``async`` as tasks on one event loop,
            ``thread`` on ``run_threads`` threads, ``auto`` (default) async when the LLM answers ``acall``.
        concurrent_runs: runs executing at once on the async executor (each waits on its LLM without a thread).
        allowed_hosts: on loopback, the Host names served (None: loopback names and the settings' allowed hosts).
        sweep_seconds: how often the server hands runs no live process holds to its executor (None: the
            settings' ``MARSRAG_SWEEP_SECONDS``, default 30; 0: only at start).
        shutdown_grace: on SIGTERM, how long executing runs get to reach their next commit point.
    """

    settings: Settings = field(default_factory=resolve_settings)
    host: str = "127.0.0.1"
    token: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    run_threads: int = 2
    executor: ExecutorKind = "auto"
    concurrent_runs: int = DEFAULT_CONCURRENCY
    allowed_hosts: tuple[str, ...] | None = None
    sweep_seconds: float | None = None
    shutdown_grace: float = DEFAULT_SHUTDOWN_GRACE

    def __post_init__(self) -> None:
        # Frozen: the defaults that come from the settings are filled in once, here.
        if self.token is None:
            object.__setattr__(self, "token", self.settings.token)
        if self.sweep_seconds is None:
            object.__setattr__(self, "sweep_seconds", self.settings.sweep_seconds)
        if self.allowed_hosts is None:
            object.__setattr__(self, "allowed_hosts", (*LOOPBACK_HOSTS, *self.settings.allowed_hosts))

    @property
    def hosts(self) -> tuple[str, ...]:
        """The Host names a loopback server answers to."""
        return self.allowed_hosts if self.allowed_hosts is not None else LOOPBACK_HOSTS

    @property
    def requires_token(self) -> bool:
        """Whether requests must carry the token (reads too): whenever the server binds off loopback."""
        return not is_loopback(self.host)
