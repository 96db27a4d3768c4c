"""The web layer: ``create_app()`` (FastAPI pages and JSON API) over the library, and the view model mapper.

FastAPI is imported only when the app is created: ``marsrag.web.viewmodel`` stays usable without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from marsrag.web.app import create_app
    from marsrag.web.settings import WebSettings


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from marsrag.web.app import create_app

        return create_app
    if name == "WebSettings":
        from marsrag.web.settings import WebSettings

        return WebSettings
    raise AttributeError(f"module 'marsrag.web' has no attribute {name!r}")


__all__ = ["WebSettings", "create_app"]
