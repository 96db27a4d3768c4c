"""Loopback helpers the tests share: a free port, and an HTTP server of the test's own in a thread."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import HTTPServer
from typing import TypeVar

Server = TypeVar("Server", bound=HTTPServer)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def serving(httpd: Server, name: str) -> Iterator[Server]:
    """Serve ``httpd`` on a daemon thread until the block ends, then shut it down and join the thread."""
    thread = threading.Thread(target=httpd.serve_forever, name=name, daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
