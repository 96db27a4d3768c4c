"""``GET /metrics``: the loop events and metrics in the Prometheus exposition format."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(tags=["metrics"])
