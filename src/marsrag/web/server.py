"""Running the app under uvicorn (``marsrag serve``)."""

from __future__ import annotations

import sys

from marsrag.terminal import visible
from marsrag.web.settings import WebSettings


def serve(settings: WebSettings, *, port: int = 8000) -> None:
    """Create the app (opening store, config and LLM: bad ones raise before binding) and serve it until stopped.

    Raises:
        ConfigError, InputError, StoreError: the app cannot be created.
    """
    # lazy: uvicorn, loads only when the server starts
    import uvicorn

    from marsrag.web.app import create_app

    app = create_app(settings)
    shown = f"[{settings.host}]" if ":" in settings.host else settings.host
    sys.stderr.write(visible(f"marsrag: serving on http://{shown}:{port} (store {app.state.backend.store.url})") + "\n")
    uvicorn.run(
        app,
        host=settings.host,
        port=port,
        log_level="warning",
        access_log=False,
        server_header=False,
        # Requests in progress (an operator action waits for its LLM) get the same grace as executing runs.
        timeout_graceful_shutdown=max(1, round(settings.shutdown_grace)),
    )
