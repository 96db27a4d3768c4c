"""Time limits and bounded retries for LLM calls that fail in transport, and clean text from every answer.

This is not the Loop Contract's repair: the repair is one more *answer*, asked for by the contract guardrail
when an answer is invalid. Here a call that never produced an answer (connection refused or dropped, no
answer in time, HTTP 408/429/5xx) is made again, after an exponential, jittered, capped backoff; any other
error is raised at once. A call still failing after its last attempt raises :class:`LLMCallError`, which
names the attempts and the cause; the runner then records the run ``failed`` with that reason.

The policy is applied at the LLM boundary (:mod:`marsrag.llm.boundary`), which also negotiates structured
output and records each call.

Settings come from the environment, resolved with the others in :class:`marsrag.settings.Settings`
(``llm_calls``; :meth:`CallPolicy.from_settings`), or read alone by :meth:`CallPolicy.from_env`:

- ``MARSRAG_LLM_TIMEOUT``: seconds one attempt may take (default 120; ``0`` means no limit).
- ``MARSRAG_LLM_RETRIES``: attempts after the first, for transport errors only (default 2).
- ``MARSRAG_LLM_BACKOFF``: the first retry's delay in seconds, doubled per retry, jittered to 50-100%,
  capped at 30 s (default 1).

CrewAI 1.15 has policies of its own that would multiply ours; while a call runs under this policy its
rate-limit retry (3 attempts on HTTP 429) is switched off, and OpenAI/Anthropic/Azure clients are rebuilt
with the SDK's ``max_retries=0`` and ``timeout`` set to ours (see :func:`tune_native_client`), and agents are
built with ``max_retry_limit=0`` (CrewAI would otherwise execute a task whose LLM call raised twice more).
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import random
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from marsrag.errors import MarsRAGError
from marsrag.settings import LLM_BACKOFF_ENV, LLM_RETRIES_ENV, LLM_TIMEOUT_ENV, LlmCallSettings
from marsrag.text import storable

# The variables and their defaults are the settings' (one place reads the environment).
ENV_TIMEOUT, ENV_RETRIES, ENV_BACKOFF = LLM_TIMEOUT_ENV, LLM_RETRIES_ENV, LLM_BACKOFF_ENV
_DEFAULTS = LlmCallSettings()
MAX_BACKOFF = 30.0

# Transport failures named by class, matched only in these packages (their exceptions are not imported).
_TRANSPORT_MODULES = ("httpx", "httpcore", "openai", "anthropic", "litellm", "requests", "urllib3", "aiohttp")
_TRANSPORT_NAMES = frozenset(
    {
        "APIConnectionError",
        "APITimeoutError",
        "RateLimitError",
        "InternalServerError",
        "ServiceUnavailableError",
        "BadGatewayError",
        "Timeout",
        "TimeoutException",
        "ConnectError",
        "ConnectTimeout",
        "ReadTimeout",
        "WriteTimeout",
        "PoolTimeout",
        "ReadError",
        "WriteError",
        "NetworkError",
        "RemoteProtocolError",
        "ServerDisconnectedError",
        "ClientConnectionError",
    }
)
_RETRIED_STATUSES = frozenset({408, 429})
_CAUSE_CHARS = 300

_T = TypeVar("_T")


class LLMCallError(MarsRAGError):
    """An LLM call failed in transport (connection, time limit, HTTP 408/429/5xx) on every attempt."""

    def __init__(self, message: str, *, attempts: int, cause: BaseException) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.cause = cause


class LLMTimeoutError(TimeoutError):
    """One attempt of an LLM call gave no answer within the time limit (a transport error: retried)."""


@dataclass(frozen=True)
class CallPolicy:
    """How long one attempt of an LLM call may take, and how transport failures are retried."""

    timeout: float | None = _DEFAULTS.timeout
    retries: int = _DEFAULTS.retries
    backoff: float = _DEFAULTS.backoff
    max_backoff: float = MAX_BACKOFF

    def __post_init__(self) -> None:
        if self.timeout is not None and not (self.timeout > 0 and math.isfinite(self.timeout)):
            raise ValueError(f"timeout must be a positive number of seconds or None, got {self.timeout!r}")
        if self.retries < 0:
            raise ValueError(f"retries must be >= 0, got {self.retries!r}")
        if not (self.backoff >= 0 and math.isfinite(self.backoff)):
            raise ValueError(f"backoff must be >= 0 seconds, got {self.backoff!r}")

    @property
    def attempts(self) -> int:
        """Attempts in all: the first and the retries."""
        return self.retries + 1

    @classmethod
    def from_settings(cls, calls: LlmCallSettings) -> CallPolicy:
        """The policy of the resolved settings (``Settings.llm_calls``)."""
        return cls(timeout=calls.timeout, retries=calls.retries, backoff=calls.backoff)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> CallPolicy:
        """The policy set by ``MARSRAG_LLM_TIMEOUT``, ``MARSRAG_LLM_RETRIES`` and ``MARSRAG_LLM_BACKOFF``.

        Raises:
            InputError: a variable is set to something that is not a usable number (the message names it).
        """
        return cls.from_settings(LlmCallSettings.from_env(environ))

    def delay(self, retry: int, *, rand: Callable[[], float] = random.random) -> float:
        """Seconds to wait before retry number ``retry`` (1-based): base * 2**(retry-1), capped, 50-100% of it."""
        ceiling = min(self.max_backoff, self.backoff * 2.0 ** (retry - 1))
        return ceiling * (0.5 + rand() / 2)


def error_chain(error: BaseException) -> Iterator[BaseException]:
    """The error and its causes (explicit, else implicit), each once."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _status_code(error: BaseException) -> int | None:
    status = getattr(error, "status_code", None)
    if status is None:
        status = getattr(getattr(error, "response", None), "status_code", None)
    return status if isinstance(status, int) else None


def _named_transport(error: BaseException) -> bool:
    for klass in type(error).__mro__:
        if klass.__module__.split(".", 1)[0] in _TRANSPORT_MODULES and klass.__name__ in _TRANSPORT_NAMES:
            return True
    return False


def is_transport_error(error: BaseException) -> bool:
    """Whether an error (or one of its causes) means the call got no answer: worth making again.

    Connection errors and timeouts (Python's own, and httpx/openai/anthropic/litellm ones by class name),
    and HTTP 408, 429 and 5xx statuses. Anything else (a 400, a missing model, a bug) is not retried.
    """
    if isinstance(error, LLMCallError):
        return False  # already retried: never again at an outer level
    for candidate in error_chain(error):
        if isinstance(candidate, ConnectionError | TimeoutError) or _named_transport(candidate):
            return True
        status = _status_code(candidate)
        if status is not None and (status in _RETRIED_STATUSES or 500 <= status <= 599):
            return True
    return False


def clean_text(value: Any) -> Any:
    """An answer as storable Unicode: bytes decoded as UTF-8, lone surrogates and NULs replaced by U+FFFD.

    Anything but ``str`` or ``bytes`` (a structured response) is returned as it is.
    """
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, str):
        return storable(value)
    return value


def _describe(error: BaseException) -> str:
    text = " ".join(str(error).split())
    if len(text) > _CAUSE_CHARS:
        text = text[: _CAUSE_CHARS - 1] + "…"
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _failure(model: str, policy: CallPolicy, attempts: int, error: BaseException) -> LLMCallError:
    limit = f", at most {policy.timeout:g} s each" if policy.timeout is not None else ""
    return LLMCallError(
        f"the LLM call to {model!r} failed after {attempts} attempt(s){limit}: {_describe(error)}",
        attempts=attempts,
        cause=error,
    )


# CrewAI's own retry of HTTP 429 runs inside every call unless this flag (private to crewai.llms.retry) is
# set: our policy must be the only one, so that MARSRAG_LLM_RETRIES=0 means one attempt.
def _crewai_retry_flag() -> contextvars.ContextVar[bool] | None:
    try:
        # lazy: CrewAI, loads only when an LLM or a crew is built
        from crewai.llms import retry
    except ImportError:  # pragma: no cover - CrewAI is a dependency; an older one lacks the module
        return None
    flag = getattr(retry, "_active_llm_rate_limit_retry", None)
    return flag if isinstance(flag, contextvars.ContextVar) else None


def _within_time_limit(operation: Callable[[], _T], timeout: float | None) -> _T:
    """Run ``operation`` in this context; give up after ``timeout`` seconds (its thread is left to finish)."""
    context = contextvars.copy_context()
    flag = _crewai_retry_flag()
    if flag is not None:
        context.run(flag.set, True)
    if timeout is None:
        return context.run(operation)
    outcome: dict[str, Any] = {}
    done = threading.Event()

    def attempt() -> None:
        try:
            outcome["value"] = context.run(operation)
        except BaseException as error:  # noqa: BLE001 - handed to the caller's thread
            outcome["error"] = error
        finally:
            done.set()

    # A daemon thread: a call that never returns must not keep the process alive (it is abandoned).
    threading.Thread(target=attempt, name="marsrag-llm-call", daemon=True).start()
    if not done.wait(timeout):
        raise LLMTimeoutError(f"no answer within {timeout:g} s")
    if "error" in outcome:
        raise outcome["error"]
    value: _T = outcome["value"]
    return value


def call_with_policy(
    operation: Callable[[], _T],
    policy: CallPolicy,
    *,
    model: str = "llm",
    sleep: Callable[[float], None] = time.sleep,
    retryable: Callable[[BaseException], bool] = is_transport_error,
) -> _T:
    """Run one LLM call under ``policy``: each attempt time-limited, transport failures retried with backoff.

    ``retryable`` decides what a transport failure is (default :func:`is_transport_error`).

    Raises:
        LLMCallError: every attempt failed in transport.
        Exception: the first error that is not a transport error, as it was raised.
    """
    for attempt in range(1, policy.attempts + 1):
        try:
            return _within_time_limit(operation, policy.timeout)
        except Exception as error:
            if not retryable(error):
                raise
            if attempt == policy.attempts:
                raise _failure(model, policy, attempt, error) from error
        sleep(policy.delay(attempt))
    raise AssertionError("unreachable")  # pragma: no cover


async def acall_with_policy(
    operation: Callable[[], Awaitable[_T]],
    policy: CallPolicy,
    *,
    model: str = "llm",
    retryable: Callable[[BaseException], bool] = is_transport_error,
) -> _T:
    """The async :func:`call_with_policy` (``asyncio.wait_for`` limits each attempt)."""
    flag = _crewai_retry_flag()
    token = flag.set(True) if flag is not None else None
    try:
        for attempt in range(1, policy.attempts + 1):
            try:
                return await asyncio.wait_for(operation(), policy.timeout)
            except Exception as error:
                if isinstance(error, TimeoutError) and not isinstance(error, LLMTimeoutError):
                    error = LLMTimeoutError(f"no answer within {policy.timeout:g} s")
                if not retryable(error):
                    raise
                if attempt == policy.attempts:
                    raise _failure(model, policy, attempt, error) from error
            await asyncio.sleep(policy.delay(attempt))
        raise AssertionError("unreachable")  # pragma: no cover
    finally:
        if flag is not None and token is not None:
            flag.reset(token)


def tune_native_client(llm: _T, policy: CallPolicy) -> _T:
    """A CrewAI provider LLM whose SDK client retries nothing itself and stops waiting at ``policy.timeout``.

    CrewAI's OpenAI, Anthropic and Azure classes have ``timeout`` and ``max_retries`` fields (the SDKs retry
    twice by default, then ours would retry each of those) and build their clients when constructed, so the
    object is rebuilt from its fields. Other LLM objects are returned as they are.
    """
    fields = getattr(type(llm), "model_fields", {})
    if "max_retries" not in fields or "timeout" not in fields:
        return llm
    values = {name: getattr(llm, name) for name in fields}
    values.update(max_retries=0, timeout=policy.timeout)
    rebuilt: _T = type(llm).model_validate(values)  # type: ignore[attr-defined]
    return rebuilt


__all__ = [
    "ENV_BACKOFF",
    "ENV_RETRIES",
    "ENV_TIMEOUT",
    "CallPolicy",
    "LLMCallError",
    "LLMTimeoutError",
    "acall_with_policy",
    "call_with_policy",
    "clean_text",
    "is_transport_error",
    "tune_native_client",
]
