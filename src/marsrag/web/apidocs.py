"""The API's documentation pages, ``/docs`` (Swagger UI) and ``/redoc`` (ReDoc), served offline.

Both load only this server's files: the vendored bundles under ``static/vendor/`` (licences beside them),
no CDN and no web font. Their policy is the pages' one plus what the two viewers need to run: scripts from
this server only (Swagger UI's start-up is ``static/apidocs/swagger-init.js``, not an inline script),
``fetch`` of ``/openapi.json``, ``data:`` images (the viewers' icons), ReDoc's inline styles (styled-components
writes them) and its search worker (a ``blob:`` script). Every other page keeps its script-free policy.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from marsrag.web.render import environment

router = APIRouter(include_in_schema=False)

#: The Content-Security-Policy of the two documentation pages.
DOCS_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
#: ReDoc's: styled-components injects <style> elements and the search index runs in a worker made from a blob.
REDOC_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; worker-src blob:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)


def _page(request: Request, template: str, policy: str) -> HTMLResponse:
    html = environment().get_template(template).render(openapi_url=request.app.openapi_url, title=request.app.title)
    response = HTMLResponse(html)
    response.headers["Content-Security-Policy"] = policy
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "same-origin"
    return response


@router.get("/docs", response_class=HTMLResponse)
def swagger_ui(request: Request) -> HTMLResponse:
    """The API in Swagger UI (try-it-out included), from this server's own copy of it."""
    return _page(request, "apidocs/swagger.html", DOCS_CSP)


@router.get("/redoc", response_class=HTMLResponse)
def redoc(request: Request) -> HTMLResponse:
    """The API as one ReDoc reference page, from this server's own copy of it (no web font)."""
    return _page(request, "apidocs/redoc.html", REDOC_CSP)
