"""Running the app under uvicorn (``marsrag serve``), with one access line per request on stderr."""

from __future__ import annotations

import errno
import json
import logging
import socket
import sys
from contextlib import suppress
from datetime import UTC, datetime
from typing import Any, Literal

from marsrag.errors import InputError, MarsRAGError
from marsrag.terminal import visible
from marsrag.web.settings import WebSettings

LogFormat = Literal["text", "json"]

#: An access line in text: ``2026-12-01T10:00:00+0000 127.0.0.1:51234 "GET /runs HTTP/1.1" 200 OK``.
TEXT_ACCESS = '%(asctime)s %(client_addr)s "%(request_line)s" %(status_code)s'


class JsonAccessFormatter(logging.Formatter):
    """uvicorn's access records as one JSON object a line: time, client, method, path, http_version, status."""

    def format(self, record: logging.LogRecord) -> str:
        args = record.args if isinstance(record.args, tuple) else ()
        if len(args) != 5:  # not an access record: its message, as JSON still
            return json.dumps({"time": _time(record), "message": record.getMessage()}, ensure_ascii=True)
        client, method, path, version, status = args
        line = {
            "time": _time(record),
            "client": client,
            "method": method,
            "path": path,
            "http_version": version,
            "status": status,
        }
        return json.dumps(line, ensure_ascii=True)


def _time(record: logging.LogRecord) -> str:
    return datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")


def log_config(log_format: LogFormat = "text") -> dict[str, Any]:
    """uvicorn's logging: access lines (text or JSON) and its warnings and errors, all on stderr."""
    access: dict[str, Any] = (
        {"()": "marsrag.web.server.JsonAccessFormatter"}
        if log_format == "json"
        else {
            "()": "uvicorn.logging.AccessFormatter",
            "fmt": TEXT_ACCESS,
            "datefmt": "%Y-%m-%dT%H:%M:%S%z",
            "use_colors": False,
        }
    )
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "access": access,
            "default": {
                "()": "uvicorn.logging.DefaultFormatter",
                "fmt": "%(levelprefix)s %(message)s",
                "use_colors": False,
            },
        },
        "handlers": {
            "access": {"class": "logging.StreamHandler", "formatter": "access", "stream": "ext://sys.stderr"},
            "default": {"class": "logging.StreamHandler", "formatter": "default", "stream": "ext://sys.stderr"},
        },
        "loggers": {
            "uvicorn": {"handlers": ["default"], "level": "WARNING", "propagate": False},
            "uvicorn.error": {"level": "WARNING"},
            "uvicorn.access": {"handlers": ["access"], "level": "INFO", "propagate": False},
        },
    }


#: uvicorn's default listen backlog.
BACKLOG = 2048


def listen(host: str, port: int) -> list[socket.socket]:
    """Listening sockets on every address ``host`` resolves to, at ``port`` (0: a free port the system picks).

    :func:`serve` binds them before it starts or prints anything and hands them to uvicorn, so no other
    process can take the port between a check and the bind.

    Raises:
        InputError: the port is taken, ``host`` is not an address of this machine (or not resolvable), or
            the port needs privileges this process lacks.
    """
    where = shown_host(host)
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as error:
        raise InputError(f"cannot serve on {where}: no address of this machine ({error.strerror})") from None
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(found):
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            # As asyncio and uvicorn bind: a port in TIME_WAIT after a restart is reusable, and an IPv6
            # socket leaves the IPv4 addresses of a name to their own socket.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            # Port 0: every address of the name shares the port the system picked for the first.
            sock.bind((address[0], port, *address[2:]))
            sock.listen(BACKLOG)
            port = port or sock.getsockname()[1]
    except OSError as error:
        for sock in sockets:
            sock.close()
        raise InputError(_bind_problem(error, where, port)) from None
    return sockets


def shown_host(host: str) -> str:
    """``host`` as a URL shows it: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host else host


def _bind_problem(error: OSError, where: str, port: int) -> str:
    if error.errno == errno.EADDRINUSE:
        return f"port {port} on {where} is in use by another process: stop it or choose another --port"
    if error.errno == errno.EADDRNOTAVAIL:
        return (
            f"cannot serve on {where}: not an address of this machine "
            "(127.0.0.1: this machine only; 0.0.0.0: every interface)"
        )
    if error.errno in (errno.EACCES, errno.EPERM):
        return (
            f"port {port} on {where} needs privileges this user lacks (ports below 1024 usually do): "
            "choose a --port from 1024 up"
        )
    return f"cannot serve on {where} port {port}: {error.strerror or error}"


def serve(settings: WebSettings, *, port: int = 8000, log_format: LogFormat = "text") -> None:
    """Bind ``port``, create the app (opening store, config and LLM) and serve it until stopped.

    The port is bound first: a port in use or a host that is not this machine's fails at once, before the
    app is created and before anything claims to serve. Each request is logged as one access line on stderr,
    in ``log_format`` (``text`` or ``json``).

    Raises:
        InputError: the port or host cannot be bound (see :func:`listen`).
        ConfigError, InputError, StoreError: the app cannot be created.
        MarsRAGError: the server stopped before it started serving.
    """
    sockets = listen(settings.host, port)
    try:
        # lazy: after the bind, since the app's modules load CrewAI (seconds) and a taken port fails before that
        import uvicorn

        from marsrag.web.app import create_app

        app = create_app(settings)
        bound = sockets[0].getsockname()[1]
        store = app.state.backend.store.url
        project = settings.settings.project_name
        where = f"project {project}, store {store}" if project is not None else f"store {store}"
        sys.stderr.write(visible(f"marsrag: serving on http://{shown_host(settings.host)}:{bound} ({where})") + "\n")
        config = uvicorn.Config(
            app,
            host=settings.host,
            port=bound,
            # The levels are log_config's (a log_level here would silence the access lines).
            log_level=None,
            log_config=log_config(log_format),
            access_log=True,
            server_header=False,
            # Requests in progress (an operator action waits for its LLM) get the same grace as executing runs.
            timeout_graceful_shutdown=max(1, round(settings.shutdown_grace)),
        )
        server = uvicorn.Server(config)
        with suppress(KeyboardInterrupt):  # as uvicorn.run: Ctrl-C is how a foreground server is stopped
            server.run(sockets=sockets)
    finally:
        for sock in sockets:
            sock.close()
    if not server.started:
        raise MarsRAGError("the server stopped before it started serving (see the lines above)")
