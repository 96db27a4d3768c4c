"""A real uvicorn server for the browser tests: the app on a loopback port, in a daemon thread of the test process.

The listening socket is bound (to port 0) before the server starts and handed to uvicorn, so the kernel picks
a free port and no other process (another xdist worker, say) can take it between choosing and binding.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from typing import Any

import uvicorn

#: Generous bounds for the server to start and to stop (no timing is asserted: these only stop a hang).
START_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0


@contextmanager
def live_server(app: Any) -> Iterator[str]:
    """Serve ``app`` on 127.0.0.1 (a free port, lifespan on) until the block ends; yields its base URL.

    Raises:
        RuntimeError: the server did not start (its thread ended or the start timed out).
    """
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        config = uvicorn.Config(
            app,
            host="127.0.0.1",
            port=port,
            log_level="warning",
            lifespan="on",
            access_log=False,
            server_header=False,
            timeout_graceful_shutdown=10,
        )
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name=f"uvicorn-{port}", daemon=True)
        thread.start()
        try:
            deadline = time.monotonic() + START_TIMEOUT
            while not server.started:
                if not thread.is_alive():
                    raise RuntimeError(f"the test server on port {port} stopped before it started (see its log)")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the test server on port {port} did not start within {START_TIMEOUT:.0f} s")
                time.sleep(0.02)
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True
            thread.join(STOP_TIMEOUT)
            if thread.is_alive():
                raise RuntimeError(f"the test server on port {port} did not stop within {STOP_TIMEOUT:.0f} s")
