"""OpenTelemetry traces of MarsRAG's runs: GenAI spans exported over OTLP when the standard ``OTEL_*`` variables say so.

:mod:`~marsrag.tracing.config` reads the environment, :mod:`~marsrag.tracing.provider` holds the process's tracer,
:mod:`~marsrag.tracing.spans` makes the spans, :mod:`~marsrag.tracing.semconv` names their attributes. Off (and
free: OpenTelemetry is never imported) unless an OTLP endpoint is configured.
"""
