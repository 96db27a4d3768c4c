"""``GET /metrics``: the loop events and metrics in the Prometheus exposition format.

Thin over :mod:`marsrag.metrics.prometheus`: the app's own registry (never the process-wide default one, so
several apps can live in one process) holds a collector that reads the database at every scrape. A read:
no token is needed, as for the other reads. An unreadable database is a 503 (a failed scrape), never
partial numbers.
"""

from __future__ import annotations

import threading

from fastapi import APIRouter, FastAPI, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import CollectorRegistry

from marsrag.metrics.prometheus import loop_metrics_registry
from marsrag.web.backend import Backend

router = APIRouter(tags=["metrics"])

_REGISTRY_LOCK = threading.Lock()


def registry_of(app: FastAPI) -> CollectorRegistry:
    """The app's metrics registry, made on first use (it holds no numbers: only the store to query)."""
    registry: CollectorRegistry | None = getattr(app.state, "prometheus_registry", None)
    if registry is None:
        with _REGISTRY_LOCK:
            registry = getattr(app.state, "prometheus_registry", None)
            if registry is None:
                backend: Backend = app.state.backend
                registry = loop_metrics_registry(backend.store)
                app.state.prometheus_registry = registry
    return registry


@router.get(
    "/metrics",
    summary="Loop events and the six loop metrics per workflow, for Prometheus (read from the store now)",
    response_class=Response,
    responses={
        200: {"content": {"text/plain": {}}, "description": "The Prometheus text format (" + CONTENT_TYPE_LATEST + ")."}
    },
)
def metrics(request: Request) -> Response:
    """Every family of :mod:`marsrag.metrics.prometheus`, in the Prometheus text exposition format."""
    app: FastAPI = request.app
    return Response(generate_latest(registry_of(app)), media_type=CONTENT_TYPE_LATEST)
