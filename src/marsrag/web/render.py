"""Rendering pages: one Jinja2 environment with autoescaping always on, and the CSRF cookie set with the page.

Model text reaches templates only as data: autoescaping turns any ``<script>`` in a section into text.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, StrictUndefined

from marsrag._version import __version__
from marsrag.web.csrf import CSRF_COOKIE, csrf_token
from marsrag.web.security import bearer_ok

TEMPLATES = Path(__file__).parent / "templates"


@cache
def environment() -> Environment:
    """The page templates' environment (autoescape on for every template, undefined names are errors).

    Ids in links go through the ``segment`` filter: percent-encoded as one path segment (``/`` included),
    so a stored id holding ``/``, ``?``, ``#`` or spaces still links to its own page.
    """
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["segment"] = path_segment
    return env


def path_segment(value: object) -> str:
    """``value`` percent-encoded as one URL path segment (every reserved character, ``/`` included)."""
    return quote(str(value), safe="")


def render(request: Request, template: str, context: dict[str, Any], status: int = 200) -> HTMLResponse:
    """Render a page with the request's CSRF token (setting its cookie when the browser has none yet)."""
    settings = request.app.state.settings
    token = csrf_token(request)
    signed_in = not settings.requires_token or _has_token_cookie(request)
    html = (
        environment()
        .get_template(template)
        .render(
            csrf_token=token,
            version=__version__,
            needs_sign_in=not signed_in,
            path=request.url.path,
            **context,
        )
    )
    response = HTMLResponse(html, status_code=status)
    response.headers["Content-Security-Policy"] = (
        # Scripts and connections from this server only: the run page's live.js and its event stream.
        "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    )
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "same-origin"
    if request.cookies.get(CSRF_COOKIE) != token:
        response.set_cookie(CSRF_COOKIE, token, httponly=True, samesite="strict", path="/")
    return response


def render_error(request: Request, status: int, detail: str) -> HTMLResponse:
    """The HTML error page."""
    return render(request, "error.html", {"status": status, "detail": detail}, status=status)


def _has_token_cookie(request: Request) -> bool:
    return bearer_ok(request, request.app.state.settings.token)
