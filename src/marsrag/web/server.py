"""Running the app under uvicorn (``marsrag serve``), with one access line per request on stderr."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, Literal

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


def serve(settings: WebSettings, *, port: int = 8000, log_format: LogFormat = "text") -> None:
    """Create the app (opening store, config and LLM: bad ones raise before binding) and serve it until stopped.

    Each request is logged as one access line on stderr, in ``log_format`` (``text`` or ``json``).

    Raises:
        ConfigError, InputError, StoreError: the app cannot be created.
    """
    # lazy: uvicorn, loads only when the server starts
    import uvicorn

    from marsrag.web.app import create_app

    app = create_app(settings)
    shown = f"[{settings.host}]" if ":" in settings.host else settings.host
    sys.stderr.write(visible(f"marsrag: serving on http://{shown}:{port} (store {app.state.backend.store.url})") + "\n")
    uvicorn.run(
        app,
        host=settings.host,
        port=port,
        # The levels are log_config's (a log_level here would silence the access lines).
        log_level=None,
        log_config=log_config(log_format),
        access_log=True,
        server_header=False,
        # Requests in progress (an operator action waits for its LLM) get the same grace as executing runs.
        timeout_graceful_shutdown=max(1, round(settings.shutdown_grace)),
    )
