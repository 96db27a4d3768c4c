"""Route dependencies: the backend of the app, and who may change things.

- ``require_api_writer``: off loopback, ``Authorization: Bearer <MARSRAG_TOKEN>``; everywhere, no browser
  request from another origin.
- ``require_form_writer``: a matching, signed CSRF token (:mod:`marsrag.web.csrf`), no other origin, and off
  loopback the sign-in cookie.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from fastapi import HTTPException, Request

from marsrag.web.backend import Backend
from marsrag.web.csrf import CSRF_FIELD, csrf_ok
from marsrag.web.security import bearer_ok


class InvalidField(Exception):
    """A request field names something unusable (e.g. an unknown workflow): 422 with the field named."""

    def __init__(self, field: str, detail: str) -> None:
        super().__init__(detail)
        self.field = field
        self.detail = detail


async def backend_of(request: Request) -> Backend:
    """The app's backend (async: a plain function would cost each request a thread-pool hop)."""
    backend: Backend = request.app.state.backend
    return backend


def same_origin(request: Request) -> bool:
    """Whether a browser request came from this server's own pages (scripts sending no browser headers pass)."""
    origin = request.headers.get("origin")
    host = request.headers.get("host", "")
    if origin is None:
        # Browsers label every request with Sec-Fetch-Site; scripts send neither header.
        if request.headers.get("sec-fetch-site") not in (None, "same-origin", "none"):
            return False
        # A browser too old for both still names the page that posted in Referer.
        referer = request.headers.get("referer")
        return not referer or urlsplit(referer).netloc == host
    return origin != "null" and urlsplit(origin).netloc == host


def require_api_writer(request: Request) -> None:
    """Refuse a mutating API request without the token (off loopback) or from another origin."""
    settings = request.app.state.settings
    if not same_origin(request):
        raise HTTPException(403, "cross-origin requests may not change anything")
    if settings.requires_token and not bearer_ok(request, settings.token):
        raise HTTPException(
            401, "this server needs Authorization: Bearer <MARSRAG_TOKEN>", {"WWW-Authenticate": "Bearer"}
        )


async def require_form_writer(request: Request) -> dict[str, Any]:
    """Refuse a form post without a matching CSRF token, from another origin, or (off loopback) not signed in.

    Returns the parsed form.
    """
    form = dict(await request.form())
    if not same_origin(request) or not csrf_ok(request, form.get(CSRF_FIELD)):
        raise HTTPException(403, "the form's CSRF token is missing or stale: reload the page and try again")
    settings = request.app.state.settings
    if settings.requires_token and not bearer_ok(request, settings.token):
        raise HTTPException(401, "sign in with the server's token first (/login)")
    return form
