"""``create_app()``: the FastAPI application, its guards, and how library errors become HTTP errors.

Only this module turns :class:`MarsRAGError` subclasses into status codes: 404 for unknown ids, 409 for an
action that does not apply, 422 for bad input (the field named), 413 for oversized bodies, 415 for an API
body that is not JSON, 503 when the store is unreachable. Pages get an HTML error page, ``/api`` a JSON reason.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from marsrag._version import __version__
from marsrag.errors import (
    ActionConflictError,
    IncompatibleRecordError,
    InputError,
    MarsRAGError,
    QueueUnavailableError,
    RunNotFoundError,
    StoreError,
    TaskNotFoundError,
)
from marsrag.web import api, apidocs, dashboard, pages, prometheus
from marsrag.web.backend import Backend
from marsrag.web.csrf import csrf_key
from marsrag.web.guards import InvalidField
from marsrag.web.render import render_error
from marsrag.web.security import AccessMiddleware, BodyLimitMiddleware, JsonBodyMiddleware
from marsrag.web.settings import MIN_TOKEN_CHARS, TOKEN_HINT, WebSettings

STATIC = Path(__file__).parent / "static"


def create_app(settings: WebSettings | None = None) -> FastAPI:
    """The MarsRAG web app over the store, config and LLM of ``settings`` (opened now, closed on shutdown).

    Raises:
        ConfigError, InputError, StoreError: bad config, LLM spec or database.
        InputError: the server binds off loopback and no token is set, or one shorter than
            :data:`~marsrag.web.settings.MIN_TOKEN_CHARS`.
    """
    settings = settings or WebSettings()
    _check_token(settings)
    backend = Backend(settings)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        backend.close()

    app = FastAPI(
        title="MarsRAG",
        version=__version__,
        summary="Runs whose answers follow the Loop Contract: sections, status, next action, operator repair.",
        lifespan=lifespan,
        # FastAPI's own pages load Swagger UI, ReDoc and Google Fonts from CDNs: apidocs serves local copies.
        docs_url=None,
        redoc_url=None,
    )
    app.state.backend = backend
    app.state.settings = settings
    app.state.csrf_key = csrf_key(settings)
    # Innermost: it reads a body the limit below has already bounded.
    app.add_middleware(JsonBodyMiddleware)
    app.add_middleware(BodyLimitMiddleware, limit=settings.max_body_bytes)
    # Added last, so it runs first: a request that may not talk to the server is refused before its body is read.
    app.add_middleware(
        AccessMiddleware,
        token=settings.token,
        requires_token=settings.requires_token,
        hosts=settings.hosts,
    )
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    app.include_router(api.health_router)
    app.include_router(api.router)
    app.include_router(api.knowledge_router)
    app.include_router(prometheus.router)
    app.include_router(dashboard.api_router)
    app.include_router(dashboard.router)
    app.include_router(pages.router)
    app.include_router(apidocs.router)
    _install_error_handlers(app)
    return app


def _check_token(settings: WebSettings) -> None:
    """Off loopback, a token is required, and one long enough not to be guessed."""
    if not settings.requires_token:
        return
    where = f"serving on {settings.host} (not loopback)"
    if not settings.token:
        raise InputError(f"{where} needs a bearer token: set MARSRAG_TOKEN ({TOKEN_HINT})")
    if len(settings.token) < MIN_TOKEN_CHARS:
        raise InputError(
            f"{where} needs a MARSRAG_TOKEN of at least {MIN_TOKEN_CHARS} characters, not {len(settings.token)}: "
            + TOKEN_HINT
        )


def _wants_json(request: Request) -> bool:
    path = request.url.path
    return path.startswith("/api") or path == "/health"


def error_status(error: MarsRAGError) -> tuple[int, str]:
    """The HTTP status and error code for a library error."""
    if isinstance(error, RunNotFoundError | TaskNotFoundError):
        return 404, "not_found"
    if isinstance(error, ActionConflictError):
        return 409, "conflict"
    if isinstance(error, IncompatibleRecordError):
        return 409, "incompatible_record"
    if isinstance(error, QueueUnavailableError):
        return 503, "queue_unavailable"
    if isinstance(error, StoreError):
        return 503, "store_unavailable"
    return 422, "invalid_input"


def error_response(request: Request, status: int, code: str, detail: str, field: str | None = None) -> Response:
    """A JSON reason for ``/api``, an HTML error page otherwise."""
    if _wants_json(request):
        body: dict[str, Any] = {"error": code, "detail": detail}
        if field is not None:
            body["field"] = field
        return JSONResponse(body, status_code=status)
    return render_error(request, status, detail)


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(MarsRAGError)
    async def library_error(request: Request, error: MarsRAGError) -> Response:
        status, code = error_status(error)
        return error_response(request, status, code, str(error), getattr(error, "field", None))

    @app.exception_handler(InvalidField)
    async def invalid_field(request: Request, error: InvalidField) -> Response:
        return error_response(request, 422, "invalid_input", f"{error.field}: {error.detail}", error.field)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, error: RequestValidationError) -> Response:
        problems = error.errors()
        first = problems[0] if problems else {}
        location = [str(part) for part in first.get("loc", ()) if part not in ("body", "query", "path")]
        # Broken JSON is located by its character offset ("body", 11): that names no field.
        field = None if first.get("type") == "json_invalid" else ".".join(location) or None
        detail = f"{field}: {first.get('msg', 'invalid')}" if field else str(first.get("msg", "invalid request"))
        if _wants_json(request):
            body = {
                "error": "invalid_request",
                "detail": detail,
                "field": field,
                "errors": [
                    {"field": ".".join(str(p) for p in p_["loc"] if p not in ("body",)), "message": p_["msg"]}
                    for p_ in problems
                ],
            }
            return JSONResponse(body, status_code=422)
        return render_error(request, 422, detail)

    @app.exception_handler(Exception)
    async def internal_error(request: Request, error: Exception) -> Response:
        # A bug: the reason in one line (the traceback goes to the server's log), never a stack to the client.
        return error_response(request, 500, "internal", f"internal error: {type(error).__name__}")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException) -> Response:
        detail = error.detail if isinstance(error.detail, str) else "error"
        # 400 comes from the framework's body parsing (JSON that is not UTF-8, a form it cannot read).
        codes = {
            400: "invalid_request",
            401: "unauthorized",
            403: "forbidden",
            404: "not_found",
            405: "method_not_allowed",
            415: "unsupported_media_type",
        }
        response = error_response(request, error.status_code, codes.get(error.status_code, "error"), detail)
        for name, value in (error.headers or {}).items():
            response.headers[name] = value
        return response
