"""Fault LLMs: ``crewai.BaseLLM`` subclasses that fail the way real providers and real infrastructure do.

The only fake in these tests is at the LLM boundary. Each call takes the next step of a script; past its
end, every call answers :data:`VALID`. A step is an output (``str`` or ``bytes``, returned as it is), an
exception instance (raised), :data:`HANG` (block until :meth:`FaultLLM.release`, or a bounded while) or a
callable (run with the call number, its result returned): the last lets a test act on the database from
inside a run, at an exact point between two tasks.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from typing import Any

import httpx
from pydantic import PrivateAttr

from marsrag.llm._local import LocalLLM
from tests.contract.samples import CONTENT

#: A valid Loop Contract answer.
VALID = json.dumps(CONTENT)
#: A script step that blocks the call until released (at most :data:`HANG_BOUND` seconds).
HANG = "<hang>"
#: The longest a hanging call blocks when never released, so no thread outlives a test session for long.
HANG_BOUND = 120.0
#: Five megabytes of prose: no JSON in it, far over every contract limit.
HUGE = ("The cache tier is cold after every restart and the latency follows. " * 80_000)[: 5 * 1024 * 1024]


def connect_error() -> Exception:
    """What httpx raises when nothing listens on the port (a transport error)."""
    return httpx.ConnectError("[Errno 111] Connection refused")


def status_error(status: int) -> Exception:
    """What the OpenAI SDK raises for an HTTP error status (429 and 5xx are transport errors, 400 is not)."""
    import openai

    request = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    response = httpx.Response(status, request=request, json={"error": {"message": f"status {status}"}})
    if status == 429:
        return openai.RateLimitError("rate limited", response=response, body=None)
    if status >= 500:
        return openai.InternalServerError("server error", response=response, body=None)
    return openai.BadRequestError("bad request", response=response, body=None)


def always(error: Callable[[], Exception] = connect_error) -> Any:
    """A script step taken on this call and every later one: raise a fresh ``error()``."""
    return _Always(error)


class FaultLLM(LocalLLM):
    """Takes the next step of its script on each call (see the module docstring); then answers validly."""

    model: str = "fault"
    script: list[Any]
    _calls: int = PrivateAttr(default=0)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _released: threading.Event = PrivateAttr(default_factory=threading.Event)
    _entered: threading.Event = PrivateAttr(default_factory=threading.Event)

    @classmethod
    def scripted(cls, steps: Iterable[Any]) -> FaultLLM:
        """A fault LLM taking ``steps`` in order, then answering :data:`VALID`."""
        return cls(model="fault", script=list(steps))

    @classmethod
    def transport(cls, times: int | None, error: Callable[[], Exception] = connect_error) -> FaultLLM:
        """Fails in transport ``times`` times, then answers (``None``: on every call)."""
        if times is None:
            return cls.scripted([always(error)])
        return cls.scripted(error() for _ in range(times))

    @property
    def calls(self) -> int:
        """Calls so far."""
        return self._calls

    def wait_entered(self, timeout: float = 60.0) -> bool:
        """Wait until a call is hanging; whether one is."""
        return self._entered.wait(timeout)

    def release(self) -> None:
        """Let every hanging call (now and later) return :data:`VALID`."""
        self._released.set()

    def call(
        self,
        messages: Any,
        tools: list[dict[str, Any]] | None = None,
        callbacks: list[Any] | None = None,
        available_functions: dict[str, Any] | None = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: type[Any] | None = None,
    ) -> Any:
        """Take the next step of the script."""
        with self._lock:
            self._calls += 1
            number = self._calls
            step: Any = VALID
            if self.script:
                step = self.script[0]
                if not isinstance(step, _Always):
                    self.script.pop(0)
        if isinstance(step, _Always):
            raise step.error()
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, str) and step == HANG:
            self._entered.set()
            self._released.wait(HANG_BOUND)
            return VALID
        if callable(step):
            return step(number)
        return step


class _Always:
    """A script step repeated on every call: raise a fresh error."""

    def __init__(self, error: Callable[[], Exception]) -> None:
        self.error = error
