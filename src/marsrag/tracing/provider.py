"""The process's tracer: built from the environment at first use when it configures traces, else none at all.

One ``TracerProvider`` per process, MarsRAG's own (a user's global provider is left alone), with a batch
processor and an OTLP exporter over HTTP or gRPC (:mod:`marsrag.tracing.config`). When nothing configures
traces, :func:`tracer` returns None and OpenTelemetry is never imported: tracing costs a dictionary lookup.
A setting the SDK rejects is logged once and traces are off: telemetry never stops a run.
"""

from __future__ import annotations

import atexit
import logging
import threading
from typing import TYPE_CHECKING

from marsrag._version import __version__
from marsrag.tracing import config

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Tracer

__all__ = ["SCOPE", "flush", "reset", "tracer", "use"]

log = logging.getLogger("marsrag.tracing")

#: The instrumentation scope of MarsRAG's spans.
SCOPE = "marsrag"

_lock = threading.Lock()
#: (provider, tracer) once built; (None, None) once found off; empty before the first look.
_state: list[tuple[TracerProvider | None, Tracer | None]] = []
#: Whether the provider is MarsRAG's own (built here: shut down at exit) rather than given to :func:`use`.
_owned: list[bool] = []


def tracer() -> Tracer | None:
    """The process's tracer when the environment configures traces (built at the first call), else None."""
    if _state:
        return _state[0][1]
    with _lock:
        if not _state:
            _state.append(_build())
            _owned[:] = [True]
            if _state[0][0] is not None:
                atexit.register(reset)
        return _state[0][1]


def use(provider: TracerProvider) -> None:
    """Trace with ``provider`` (an application's own, set up in code; a test's) instead of the environment's.

    MarsRAG never shuts it down: its owner does. :func:`reset` goes back to the environment.
    """
    reset()
    with _lock:
        _state[:] = [(provider, provider.get_tracer(SCOPE, __version__))]
        _owned[:] = [False]


def _build() -> tuple[TracerProvider | None, Tracer | None]:
    if not config.exported("traces"):
        return None, None
    try:
        # lazy: OpenTelemetry, loads only when an exporter is configured
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        processor = BatchSpanProcessor(_exporter())
        provider = TracerProvider(resource=config.resource())
        provider.add_span_processor(processor)
        return provider, provider.get_tracer(SCOPE, __version__)
    except Exception:  # noqa: BLE001 - a bad telemetry setting must not stop a run
        log.exception("OpenTelemetry traces are configured but could not be set up; no trace is exported")
        return None, None


def _exporter() -> SpanExporter:
    if config.protocol("traces") == "grpc":
        # lazy: OpenTelemetry's gRPC exporter (and grpcio), only for a user who asked for gRPC
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        return GrpcExporter()
    # lazy: OpenTelemetry, loads only when an exporter is configured
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

    return HttpExporter()


def flush(timeout_millis: int = 30_000) -> bool:
    """Export the spans ended so far; True when there was nothing to do or it worked (never raises)."""
    provider = _state[0][0] if _state else None
    if provider is None:
        return True
    try:
        return provider.force_flush(timeout_millis)
    except Exception:  # noqa: BLE001 - telemetry must never fail a run
        log.exception("flushing OpenTelemetry spans failed")
        return False


def reset() -> None:
    """Export what is left and drop the tracer (never raises): the next :func:`tracer` reads the environment again.

    Called at exit; a test (or a process whose environment changed) calls it to start over.
    """
    with _lock:
        provider = _state[0][0] if _state and _owned == [True] else None
        _state.clear()
    if provider is not None:
        try:
            provider.shutdown()
        except Exception:  # noqa: BLE001 - telemetry must never fail a run
            log.exception("shutting down OpenTelemetry spans failed")
