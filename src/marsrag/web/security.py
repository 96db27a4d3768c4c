"""Request guards: a body size limit, the bearer token off loopback, and CSRF tokens for the pages' forms.

CSRF uses the double-submit pattern: a random token in a ``SameSite=Strict`` cookie and the same token in
each form; a post whose two copies differ is refused. It needs no server-side state, so any number of
server processes can check it. The JSON API is not reachable by a cross-site form: it accepts only
``application/json`` bodies, which a browser sends cross-site only after a CORS preflight this server never
grants.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

CSRF_COOKIE = "marsrag_csrf"
CSRF_FIELD = "csrf_token"
TOKEN_COOKIE = "marsrag_token"


class BodyTooLarge(Exception):
    """A request body went past the size limit while it was read."""


class BodyLimitMiddleware:
    """Refuse request bodies over ``limit`` bytes with 413, by ``Content-Length`` or while streaming."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await _too_large(send, self.limit)
            return
        seen = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise BodyTooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except BodyTooLarge:
            if not started:
                await _too_large(send, self.limit)


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


def csrf_token(request: Request) -> str:
    """The request's CSRF token: the cookie's, or a new one (the page sets it as a cookie)."""
    existing = request.cookies.get(CSRF_COOKIE)
    if existing and len(existing) >= 32:
        return existing
    token: str | None = getattr(request.state, "new_csrf", None)
    if token is None:
        token = secrets.token_urlsafe(32)
        request.state.new_csrf = token
    return token


def csrf_ok(request: Request, submitted: Any) -> bool:
    """Whether a form's token matches the cookie's (both present)."""
    cookie = request.cookies.get(CSRF_COOKIE)
    return bool(cookie) and isinstance(submitted, str) and secrets.compare_digest(cookie or "", submitted)


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
