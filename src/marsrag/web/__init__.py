"""The web layer: ``create_app()`` (FastAPI pages and JSON API) over the library, and its settings.

FastAPI is imported only when the app is created; the framework-free view model mapper lives in
:mod:`marsrag.views` (``marsrag.web.viewmodel`` re-exports it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from marsrag.web.settings import WebSettings

if TYPE_CHECKING:
    from marsrag.web.app import create_app


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from marsrag.web.app import create_app  # lazy: FastAPI loads only when an app is created

        return create_app
    raise AttributeError(f"module 'marsrag.web' has no attribute {name!r}")


__all__ = ["WebSettings", "create_app"]
