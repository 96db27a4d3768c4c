"""MarsRAG's spans: one trace per run, a span per task (or Flow step), per LLM call and per retrieval.

A run's trace::

    invoke_workflow {workflow}          the run (root; or under the span of the server that queued it)
      invoke_agent {agent}              a task or a Flow step, with its loop events as span events
        retrieval                       the knowledge base search that briefed it
        chat {model}                    each LLM call made for it: the answer, then any repair
      ...

Each ``start_*`` function returns a :class:`Span`, a thin handle on an OpenTelemetry span; when traces are off
(:func:`marsrag.tracing.provider.tracer` is None) it is :data:`NO_SPAN`, whose methods do nothing, so callers
never test whether tracing is on and nothing of OpenTelemetry is imported.

A run's trace context is kept with the run as a W3C ``traceparent`` (``RunRecord.trace``): the context of the
span that submitted it (a server queueing it for a Celery worker), else of its first execution's run span. The
first execution continues that trace; a resumed run starts a new trace linked to it.

LLM calls find their task's span by the CrewAI task object they are made for (:data:`TASKS`), not by the
current context: CrewAI may call the model on another thread than the one that started the task. A call for no
known task nests under the current span (a Flow step's, a run's).
"""

from __future__ import annotations

import contextvars
import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

from marsrag.state import LoopEvent, RunRecord
from marsrag.tracing import config, semconv
from marsrag.tracing.loop_events import event_attributes, nanoseconds
from marsrag.tracing.provider import tracer

if TYPE_CHECKING:
    from opentelemetry.trace import Span as OtelSpan
    from opentelemetry.util.types import AttributeValue

__all__ = [
    "NO_SPAN",
    "SUBMIT",
    "TASKS",
    "Span",
    "TaskSpans",
    "current_traceparent",
    "start_action",
    "start_call",
    "start_retrieval",
    "start_run",
    "start_task",
    "submitting",
]

#: The W3C header a context travels in.
_TRACEPARENT: Final = "traceparent"


class Span:
    """A span being recorded (see the module); true until it ends. Every method is safe after :meth:`end`."""

    __slots__ = ("_span", "attempts", "task")

    def __init__(self, span: OtelSpan | None, *, task: bool = False) -> None:
        self._span = span
        #: The contract's judgements of the task's answers so far (a task span's): the next call is attempt + 1.
        self.attempts = 0
        #: Whether it is a task's (or a Flow step's) span: the calls made while it is current are the task's.
        self.task = task

    def __bool__(self) -> bool:
        return self._span is not None

    def set(self, attributes: Mapping[str, AttributeValue | None]) -> None:
        """Set the attributes that are not None (OpenTelemetry has no null)."""
        if self._span is not None:
            self._span.set_attributes({key: value for key, value in attributes.items() if value is not None})

    def events(self, events: Sequence[LoopEvent]) -> None:
        """Attach loop events as span events, at their own timestamps."""
        if self._span is not None:
            for event in events:
                self._span.add_event(event.name, event_attributes(event), nanoseconds(event.timestamp))

    def event(self, name: str, attributes: Mapping[str, AttributeValue]) -> None:
        """Attach a span event, now."""
        if self._span is not None:
            self._span.add_event(name, dict(attributes))

    def fail(self, error: BaseException | str) -> None:
        """Mark the span failed (``error.type``, status ERROR; an exception is recorded as its event)."""
        if self._span is None:
            return
        # lazy: OpenTelemetry, loads only when an exporter is configured
        from opentelemetry.trace import Status, StatusCode

        if isinstance(error, BaseException):
            self._span.record_exception(error)
            self._span.set_attribute(semconv.ERROR_TYPE, type(error).__qualname__)
            self._span.set_status(Status(StatusCode.ERROR, str(error)[:500]))
        else:
            self._span.set_attribute(semconv.ERROR_TYPE, "failed")
            self._span.set_status(Status(StatusCode.ERROR, error[:500]))

    def end(self) -> None:
        """End the span (once: afterwards the handle is spent, every method does nothing, it is false)."""
        span, self._span = self._span, None
        if span is not None:
            span.end()

    def traceparent(self) -> str | None:
        """The span's context as a W3C ``traceparent`` (None when traces are off)."""
        if self._span is None:
            return None
        # lazy: OpenTelemetry, loads only when an exporter is configured
        from opentelemetry.trace import set_span_in_context

        return _inject(set_span_in_context(self._span))

    @contextmanager
    def current(self) -> Iterator[None]:
        """Make the span the current one in this context while the block runs (spans started in it nest under it)."""
        if self._span is None:
            yield
            return
        # lazy: OpenTelemetry, loads only when an exporter is configured
        from opentelemetry.trace import use_span

        token = _CURRENT.set(self)
        try:
            with use_span(self._span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
                yield
        finally:
            _CURRENT.reset(token)

    @property
    def otel(self) -> OtelSpan | None:
        """The OpenTelemetry span (None when traces are off)."""
        return self._span


#: The span of nothing: what every ``start_*`` returns when traces are off.
NO_SPAN: Final = Span(None)
#: The span made current by :meth:`Span.current` in this context (a Flow step's, a run's).
_CURRENT: contextvars.ContextVar[Span | None] = contextvars.ContextVar("marsrag_current_span", default=None)


class TaskSpans:
    """The spans of the tasks being run, by the identity of CrewAI's task object (see the module)."""

    def __init__(self) -> None:
        self._spans: dict[int, Span] = {}
        self._lock = threading.Lock()

    def open(self, task: object, span: Span) -> None:
        """Keep ``span`` as ``task``'s until :meth:`close` (nothing is kept for :data:`NO_SPAN`)."""
        if span:
            with self._lock:
                self._spans[id(task)] = span

    def get(self, task: object | None) -> Span:
        """``task``'s span; else the task span current in this context (a Flow step's, whose crew's task objects
        MarsRAG never sees); else :data:`NO_SPAN`."""
        found = self._spans.get(id(task)) if task is not None and self._spans else None
        if found is not None:
            return found
        current = _CURRENT.get()
        return current if current is not None and current.task else NO_SPAN

    def __len__(self) -> int:
        """How many task spans are open (an ended run leaves none)."""
        return len(self._spans)

    def close(self, task: object) -> Span:
        """Forget ``task``'s span and return it (:data:`NO_SPAN` when there was none); the caller ends it."""
        with self._lock:
            return self._spans.pop(id(task), NO_SPAN)


#: The process's task spans.
TASKS: Final = TaskSpans()


def _inject(context: Any) -> str | None:
    # lazy: OpenTelemetry, loads only when an exporter is configured
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier, context=context)
    return carrier.get(_TRACEPARENT)


def _extract(traceparent: str | None) -> Any:
    """The context a stored ``traceparent`` names (None for none or a malformed one)."""
    if not traceparent:
        return None
    # lazy: OpenTelemetry, loads only when an exporter is configured
    from opentelemetry.trace import get_current_span
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    context = TraceContextTextMapPropagator().extract({_TRACEPARENT: traceparent})
    return context if get_current_span(context).get_span_context().is_valid else None


def current_traceparent() -> str | None:
    """The current span's context as a ``traceparent`` (None when traces are off or no span is current)."""
    if tracer() is None:
        return None
    # lazy: OpenTelemetry, loads only when an exporter is configured
    from opentelemetry.context import get_current
    from opentelemetry.trace import get_current_span

    if not get_current_span().get_span_context().is_valid:
        return None
    return _inject(get_current())


def _start(name: str, kind: str, attributes: Mapping[str, AttributeValue | None], **options: Any) -> Span:
    chosen = tracer()
    if chosen is None:
        return NO_SPAN
    # lazy: OpenTelemetry, loads only when an exporter is configured
    from opentelemetry.trace import SpanKind

    values = {key: value for key, value in attributes.items() if value is not None}
    return Span(chosen.start_span(name, kind=getattr(SpanKind, kind), attributes=values, **options))


def _parented(parent: Span) -> dict[str, Any]:
    """The ``context`` option that puts a span under ``parent`` (none: under the current span)."""
    otel = parent.otel
    if otel is None:
        return {}
    # lazy: OpenTelemetry, loads only when an exporter is configured
    from opentelemetry.trace import set_span_in_context

    return {"context": set_span_in_context(otel)}


#: The name of the span of a server queueing a run.
SUBMIT: Final = "submit run"


@contextmanager
def submitting() -> Iterator[Span]:
    """A span around storing and queueing a run (a producer's): the run's execution, anywhere, continues its trace."""
    span = _start(SUBMIT, "PRODUCER", {})
    try:
        with span.current():
            yield span
    except BaseException as error:
        span.fail(error)
        raise
    finally:
        span.end()


def start_run(run: RunRecord, *, resumed: bool) -> Span:
    """The span of one execution of ``run``: under its stored trace context, or (``resumed``) a new trace linked to
    it."""
    if tracer() is None:
        return NO_SPAN
    origin = _extract(run.trace)
    options: dict[str, Any] = {}
    if origin is not None and not resumed:
        options["context"] = origin
    else:
        # lazy: OpenTelemetry, loads only when an exporter is configured
        from opentelemetry.context import Context
        from opentelemetry.trace import Link, get_current_span

        options["context"] = Context()  # a root: never under whatever span happens to be current
        if origin is not None:
            options["links"] = [Link(get_current_span(origin).get_span_context())]
    attributes: dict[str, AttributeValue | None] = {
        semconv.OPERATION: semconv.INVOKE_WORKFLOW,
        semconv.WORKFLOW_NAME: run.workflow,
        semconv.CONVERSATION_ID: run.session_id,
        semconv.RUN_ID: run.run_id,
        semconv.SESSION_ID: run.session_id,
        semconv.LOOP_MODE: run.loop_mode,
        semconv.CONTRACT_VERSION: run.loop_contract_version,
        semconv.EXPERIMENT: run.experiment,
        semconv.ARM: run.arm,
        semconv.RESUMED: resumed,
        semconv.COLLECTIONS: list(run.collections) if run.collections is not None else None,
        semconv.GOAL: run.goal if config.content_captured() else None,
    }
    return _start(f"{semconv.INVOKE_WORKFLOW} {run.workflow}", "INTERNAL", attributes, **options)


def end_run(span: Span, run: RunRecord, outcome: Mapping[str, int] | None) -> None:
    """Record how the run's execution ended (status, reason, its tasks' outcome counts) and end its span."""
    span.set({semconv.RUN_STATUS: run.status, semconv.RUN_REASON: run.status_reason})
    span.set({f"{semconv.OUTCOME}.{name}": count for name, count in (outcome or {}).items()})
    if run.status == "failed":
        span.fail(run.status_reason or "failed")
    span.end()


def start_action(run: RunRecord, action: str, task_id: str) -> Span:
    """The span of an operator action (``repair``, ``regenerate``) on a task of a finished run: a trace of its own,
    linked to the run's; the action's LLM calls go under it while it is current."""
    if tracer() is None:
        return NO_SPAN
    # lazy: OpenTelemetry, loads only when an exporter is configured
    from opentelemetry.context import Context
    from opentelemetry.trace import Link, get_current_span

    origin = _extract(run.trace)
    links = [Link(get_current_span(origin).get_span_context())] if origin is not None else []
    attributes: dict[str, AttributeValue | None] = {
        semconv.OPERATION: semconv.INVOKE_AGENT,
        semconv.RUN_ID: run.run_id,
        semconv.TASK_ID: task_id,
        semconv.ACTION: action,
        semconv.LOOP_MODE: run.loop_mode,
    }
    span = _start(f"{action} {task_id}", "INTERNAL", attributes, context=Context(), links=links)
    if span:
        span.task = True
    return span


def start_task(parent: Span, run: RunRecord, task_id: str, position: int, agent: str | None) -> Span:
    """The span of task ``task_id`` of ``run`` (or a Flow step), under the run's span ``parent``."""
    attributes: dict[str, AttributeValue | None] = {
        semconv.OPERATION: semconv.INVOKE_AGENT,
        semconv.AGENT_NAME: agent,
        semconv.RUN_ID: run.run_id,
        semconv.TASK_ID: task_id,
        semconv.POSITION: position,
        semconv.LOOP_MODE: run.loop_mode,
    }
    span = _start(f"{semconv.INVOKE_AGENT} {agent or task_id}", "INTERNAL", attributes, **_parented(parent))
    if span:  # never the shared no-op span
        span.task = True
    return span


def start_retrieval(parent: Span, query: str, *, limit: int) -> Span:
    """The span of a knowledge base search for a task (under ``parent``); the query only with content capture on."""
    attributes: dict[str, AttributeValue | None] = {
        semconv.OPERATION: semconv.RETRIEVAL,
        semconv.DATA_SOURCE: semconv.KNOWLEDGE_BASE,
        semconv.TOP_K: limit,
        semconv.QUERY: query if config.content_captured() else None,
    }
    return _start(semconv.RETRIEVAL, "INTERNAL", attributes, **_parented(parent))


def start_call(
    parent: Span, *, model: str, provider: str, endpoint: str | None, local: bool, messages: Any = None
) -> Span:
    """The span of one LLM call (under its task's span ``parent``, else the current span).

    ``local``: the model answers in this process (the replay LLM, the offline composer): an INTERNAL span, not a
    CLIENT one. ``messages`` go on the span only with content capture on.
    """
    if tracer() is None:
        return NO_SPAN
    host, port = _address(endpoint)
    attributes: dict[str, AttributeValue | None] = {
        semconv.OPERATION: semconv.CHAT,
        semconv.PROVIDER: provider,
        semconv.REQUEST_MODEL: model,
        semconv.SERVER_ADDRESS: host,
        semconv.SERVER_PORT: port,
        semconv.ATTEMPT: parent.attempts + 1 if parent else None,
        semconv.INPUT_MESSAGES: _messages(messages) if config.content_captured() else None,
    }
    kind = "INTERNAL" if local else "CLIENT"
    return _start(f"{semconv.CHAT} {model}", kind, attributes, **_parented(parent))


def end_call(
    span: Span,
    *,
    model: str,
    mode: str | None,
    refused: Sequence[str],
    input_tokens: int | None,
    output_tokens: int | None,
    finish_reason: str | None,
    answer: Any = None,
) -> None:
    """Record what an LLM call's answer said (structure mode, refusals, tokens, finish reason) and end its span."""
    if not span:
        return
    span.set(
        {
            semconv.RESPONSE_MODEL: model,
            semconv.OUTPUT_TYPE: "json" if mode not in (None, "prompt") else "text",
            semconv.STRUCTURED_OUTPUT: mode,
            semconv.STRUCTURED_OUTPUT_REFUSED: list(refused) if refused else None,
            semconv.INPUT_TOKENS: input_tokens,
            semconv.OUTPUT_TOKENS: output_tokens,
            semconv.FINISH_REASONS: [finish_reason] if finish_reason else None,
            semconv.OUTPUT_MESSAGES: _answer(answer) if config.content_captured() and answer is not None else None,
        }
    )
    span.end()


def _address(endpoint: str | None) -> tuple[str | None, int | None]:
    """``server.address`` and ``server.port`` of an endpoint as the call journal keeps it (``host[:port]``)."""
    if not endpoint:
        return None, None
    host, _, port = endpoint.rpartition(":")
    if host and port.isdigit():
        return host, int(port)
    return endpoint, None


def _messages(messages: Any) -> str | None:
    """The chat messages as the GenAI conventions' JSON (role and text parts)."""
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    if not isinstance(messages, list):
        return None
    shaped = [
        {"role": str(item.get("role", "user")), "parts": [{"type": "text", "content": str(item.get("content", ""))}]}
        for item in messages
        if isinstance(item, dict)
    ]
    return json.dumps(shaped, ensure_ascii=False)


def _answer(answer: Any) -> str:
    text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False, default=str)
    return json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": text}]}], ensure_ascii=False)
