"""The ops dashboard page: the six loop metrics now and as daily series per workflow, and the latest failures."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(include_in_schema=False)
