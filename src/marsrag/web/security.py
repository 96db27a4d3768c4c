"""Request guards: who may connect (the token off loopback, the Host on it), a body size limit, JSON bodies.

The JSON API is not reachable by a cross-site form: a body it is sent must be ``application/json``
(:class:`JsonBodyMiddleware`, else 415), which a browser sends cross-site only after a CORS preflight this
server never grants. The pages' forms carry signed CSRF tokens (:mod:`marsrag.web.csrf`).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from marsrag.text import decodable_value

TOKEN_COOKIE = "marsrag_token"


class BodyLimitMiddleware:
    """Refuse request bodies over ``limit`` bytes with 413, by ``Content-Length`` or while streaming.

    The body is read (up to the limit) before the app runs, then replayed to it: the app's own body parsing
    would turn an error raised mid-stream into a 400.
    """

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await _too_large(send, self.limit)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await _too_large(send, self.limit)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


async def _too_large(send: Send, limit: int) -> None:
    body = json.dumps({"error": "too_large", "detail": f"the request body is over the limit of {limit:,} bytes"})
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [(b"content-type", b"application/json"), (b"connection", b"close")],
        }
    )
    await send({"type": "http.response.body", "body": body.encode()})


class JsonBodyMiddleware:
    """Refuse a write to the JSON API whose body is not ``application/json`` with 415 and a JSON reason.

    A JSON body is handed on with each escaped lone surrogate made U+FFFD (see :func:`_decodable_body`).

    Only requests with a body: the bodiless posts (follow, repair, regenerate) need no content type. Runs
    inside :class:`BodyLimitMiddleware`, so the body it reads (and replays) is already bounded.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] in ("GET", "HEAD", "OPTIONS")
            or not str(scope.get("path", "")).startswith("/api/")
        ):
            await self.app(scope, receive, send)
            return
        messages: list[Message] = []
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request" or not message.get("more_body", False):
                break
        has_body = any(message.get("body") for message in messages)
        content_type = dict(scope.get("headers") or []).get(b"content-type", b"").decode("latin-1")
        if has_body and content_type.partition(";")[0].strip().lower() != "application/json":
            shown = content_type.partition(";")[0].strip()[:100] or "none"
            refusal = JSONResponse(
                {
                    "error": "unsupported_media_type",
                    "detail": f"the API reads JSON bodies only: send Content-Type: application/json (got {shown})",
                },
                status_code=415,
            )
            await refusal(scope, receive, send)
            return
        queued = [*_decodable_body(messages), *(m for m in messages if m["type"] != "http.request")]

        async def replay() -> Message:
            return queued.pop(0) if queued else await receive()

        await self.app(scope, replay, send)


def _decodable_body(messages: Sequence[Message]) -> list[Message]:
    """The request's body messages, as one whose JSON holds no escaped lone surrogate (U+FFFD in its place).

    A ``\\ud800`` escape decodes to a lone surrogate, which nothing downstream can encode (a stored record, a
    sink, the response naming the field): the HTTP side of :mod:`marsrag.text`'s rule. A body that is not JSON
    (or not UTF-8) is handed on as it came, for the framework to refuse.
    """
    body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.request")
    if b"\\u" in body:
        try:
            value = json.loads(body)
        except ValueError:
            pass
        else:
            cleaned = decodable_value(value)
            if cleaned is not value:
                body = json.dumps(cleaned, ensure_ascii=False).encode()
    return [{"type": "http.request", "body": body, "more_body": False}]


def bearer_ok(request: Request, expected: str | None) -> bool:
    """Whether the request carries ``expected``: ``Authorization: Bearer`` or the sign-in cookie."""
    if not expected:
        return False
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and secrets.compare_digest(value.strip().encode(), expected.encode()):
        return True
    cookie = request.cookies.get(TOKEN_COOKIE)
    return cookie is not None and secrets.compare_digest(cookie.encode(), expected.encode())


#: Paths anyone may request, even off loopback without the token: the health check, signing in, the CSS
#: and the icon.
OPEN_PATHS = ("/health", "/login", "/favicon.ico")
OPEN_PREFIXES = ("/static/",)


class AccessMiddleware:
    """Who may talk to the server at all, before any route runs.

    Off loopback, every request but :data:`OPEN_PATHS` needs the token (``Authorization: Bearer`` or the
    sign-in cookie): answers are the organisation's data, not only writes are guarded. A page asked for
    without it is sent to ``/login``; anything else gets 401 JSON. On loopback no token is needed, so the
    Host must be one of ``hosts``: a web page whose DNS name is rebound to 127.0.0.1 is refused (DNS
    rebinding would otherwise make it same-origin to itself).
    """

    def __init__(self, app: ASGIApp, token: str | None, requires_token: bool, hosts: Sequence[str]) -> None:
        self.app = app
        self.token = token
        self.requires_token = requires_token
        self.hosts = {host.lower() for host in hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        path = request.url.path
        if self.requires_token:
            if path in OPEN_PATHS or path.startswith(OPEN_PREFIXES) or bearer_ok(request, self.token):
                await self.app(scope, receive, send)
                return
            response: Response
            if request.method == "GET" and not _machine_path(path):
                target = path + (f"?{request.url.query}" if request.url.query else "")
                response = RedirectResponse(f"/login?{urlencode({'next': target})}", status_code=303)
            else:
                response = JSONResponse(
                    {"error": "unauthorized", "detail": "this server needs Authorization: Bearer <MARSRAG_TOKEN>"},
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
            await response(scope, receive, send)
            return
        host = _host_name(request.headers.get("host", ""))
        if host not in self.hosts:
            refusal = JSONResponse(
                {
                    "error": "invalid_host",
                    "detail": f"this server answers to {', '.join(sorted(self.hosts))} only "
                    "(add a name with MARSRAG_ALLOWED_HOSTS)",
                },
                status_code=400,
            )
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _machine_path(path: str) -> bool:
    return path.startswith(("/api/", "/metrics", "/openapi.json")) or path == "/api"


def _host_name(header: str) -> str:
    """The Host header without its port (``[::1]:8000`` -> ``[::1]``), lower-cased."""
    header = header.strip().lower()
    if header.startswith("["):
        return header.partition("]")[0] + "]"
    return header.rpartition(":")[0] if header.count(":") == 1 else header
