"""What each LLM call asked, of whom, and what it cost: recorded at the LLM boundary, read per attempt.

A call made at the LLM boundary (:class:`marsrag.llm.boundary.BoundaryCalls`) opens a capture; the
provider reports into it what the response said (:func:`report`: finish reason, token counts; CrewAI's
providers do it through the hooks the policy class overrides, MarsRAG's in-process LLMs call it
themselves), and the finished :class:`CallRecord` goes to the :class:`CallJournal` under the task it was
made for. The contract guardrail drains a task's records when it judges an attempt: every call since the
previous attempt belongs to this one (a tool-using agent makes several).
"""

from __future__ import annotations

import contextvars
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlsplit


@dataclass(frozen=True)
class CallRecord:
    """One LLM call as it was made: model, endpoint (host only), structured-output mode, cost, finish reason."""

    model: str | None
    endpoint: str | None
    structured_output: str | None
    structured_output_refused: tuple[str, ...] = ()
    latency_ms: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None


@dataclass
class Capture:
    """What the provider reported while one call ran (filled by :func:`report`)."""

    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reports: int = field(default=0, repr=False)


_CAPTURE: contextvars.ContextVar[Capture | None] = contextvars.ContextVar("marsrag_llm_capture", default=None)


def open_capture() -> tuple[Capture, contextvars.Token[Capture | None]]:
    """Start capturing what the call about to be made reports; reset the token when it is done."""
    capture = Capture()
    return capture, _CAPTURE.set(capture)


def close_capture(token: contextvars.Token[Capture | None]) -> None:
    """Stop the capture opened with ``token``."""
    _CAPTURE.reset(token)


def _add(current: int | None, value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return current
    return value if current is None else current + value


def report(*, finish_reason: str | None = None, prompt_tokens: Any = None, completion_tokens: Any = None) -> None:
    """Report what a response said to the call being captured (no-op outside a call).

    Token counts add up (a provider may report per chunk of a stream); the last finish reason wins.
    """
    capture = _CAPTURE.get()
    if capture is None:
        return
    capture.reports += 1
    if isinstance(finish_reason, str) and finish_reason:
        capture.finish_reason = finish_reason
    capture.prompt_tokens = _add(capture.prompt_tokens, prompt_tokens)
    capture.completion_tokens = _add(capture.completion_tokens, completion_tokens)


def endpoint_of(llm: Any) -> str | None:
    """The host (and port) an LLM object sends to, never a key or a path; None for in-process LLMs."""
    if getattr(llm, "boundary_local", False):
        return None  # the replay LLM and the composer: BaseLLM's default provider ("openai") is not theirs
    for name in ("base_url", "api_base", "endpoint"):
        value = getattr(llm, name, None)
        if isinstance(value, str) and value:
            parts = urlsplit(value if "//" in value else f"//{value}")
            host = parts.hostname
            if host:
                return f"{host}:{parts.port}" if parts.port else host
    provider = getattr(llm, "provider", None)
    return provider if isinstance(provider, str) and provider else None


#: Tasks whose records are kept (oldest forgotten first): a task nobody drains must not grow the journal.
MAX_TASKS: Final = 4096


class CallJournal:
    """The calls made for each task (by the identity of CrewAI's task object), until an attempt drains them."""

    def __init__(self, max_tasks: int = MAX_TASKS) -> None:
        self._records: OrderedDict[int, list[CallRecord]] = OrderedDict()
        self._max = max_tasks
        self._lock = threading.Lock()
        #: The task a call's record is kept under, given the task it was made for: the CrewAI binding sets it so
        #: that a coworker's calls for work a hierarchical manager delegated count in the delegating task's attempt.
        self.owner: Callable[[object], object] = lambda task: task

    def add(self, task: object, record: CallRecord) -> None:
        """Record a call made for ``task`` (None: a call made for no task, not kept)."""
        task = self.owner(task) if task is not None else None
        if task is None:
            return
        with self._lock:
            self._records.setdefault(id(task), []).append(record)
            self._records.move_to_end(id(task))
            while len(self._records) > self._max:
                self._records.popitem(last=False)

    def drain(self, task: object) -> list[CallRecord]:
        """The calls made for ``task`` since it was last drained, oldest first."""
        with self._lock:
            return self._records.pop(id(task), [])


#: The process's journal.
JOURNAL: Final = CallJournal()


@dataclass(frozen=True)
class AttemptCalls:
    """The calls of one attempt, summed: what its attempt record shows."""

    model: str | None = None
    endpoint: str | None = None
    structured_output: str | None = None
    structured_output_refused: tuple[str, ...] = ()
    latency_ms: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None

    @classmethod
    def of(cls, records: Sequence[CallRecord]) -> AttemptCalls:
        """The summary of an attempt's calls: who answered last and how, the refusals, and the costs summed."""
        if not records:
            return cls()
        last = records[-1]
        refused: list[str] = []
        for record in records:
            refused.extend(mode for mode in record.structured_output_refused if mode not in refused)
        latency = prompt = completion = None
        for record in records:
            latency = _add(latency, record.latency_ms)
            prompt = _add(prompt, record.prompt_tokens)
            completion = _add(completion, record.completion_tokens)
        return cls(
            model=last.model,
            endpoint=last.endpoint,
            structured_output=last.structured_output,
            structured_output_refused=tuple(refused),
            latency_ms=latency,
            prompt_tokens=prompt,
            completion_tokens=completion,
            finish_reason=last.finish_reason,
        )

    def fields(self) -> dict[str, Any]:
        """The summary as attempt-record fields."""
        return {
            "model": self.model,
            "endpoint": self.endpoint,
            "structured_output": self.structured_output,
            "structured_output_refused": list(self.structured_output_refused),
            "latency_ms": self.latency_ms,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "finish_reason": self.finish_reason,
        }


__all__ = [
    "JOURNAL",
    "AttemptCalls",
    "CallJournal",
    "CallRecord",
    "Capture",
    "close_capture",
    "endpoint_of",
    "open_capture",
    "report",
]
