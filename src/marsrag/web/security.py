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
