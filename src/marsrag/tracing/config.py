"""What the standard ``OTEL_*`` variables configure: whether traces and log records are exported, and how.

MarsRAG follows the OpenTelemetry SDK's environment: a signal is exported when an OTLP endpoint is set
(``OTEL_EXPORTER_OTLP_ENDPOINT``, or the signal's own ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` /
``OTEL_EXPORTER_OTLP_LOGS_ENDPOINT``), unless ``OTEL_SDK_DISABLED`` is ``true`` or the signal's exporter
(``OTEL_TRACES_EXPORTER`` / ``OTEL_LOGS_EXPORTER``) is ``none``; over ``http/protobuf`` unless
``OTEL_EXPORTER_OTLP_<SIGNAL>_PROTOCOL`` or ``OTEL_EXPORTER_OTLP_PROTOCOL`` says ``grpc``. The exporters read the
endpoint, headers, timeout, compression and certificates themselves.

Prompts and completions go on spans only when ``MARSRAG_TRACE_CONTENT`` is ``true``.

Nothing here imports OpenTelemetry but :func:`resource`: deciding that nothing is exported costs nothing.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from opentelemetry.sdk.resources import Resource

__all__ = ["CONTENT_VARIABLE", "Protocol", "Signal", "content_captured", "exported", "protocol", "resource"]

Signal = Literal["traces", "logs"]
Protocol = Literal["http/protobuf", "grpc"]
#: The opt-in for prompts and completions on spans (never by default: they may hold what users typed).
CONTENT_VARIABLE = "MARSRAG_TRACE_CONTENT"
#: The service name when the user names none (the SDK's default is ``unknown_service``).
SERVICE = "marsrag"


def exported(signal: Signal) -> bool:
    """Whether the environment configures an OTLP export of ``signal`` (see the module)."""
    if _env("OTEL_SDK_DISABLED") == "true" or _env(f"OTEL_{signal.upper()}_EXPORTER") == "none":
        return False
    return bool(_env("OTEL_EXPORTER_OTLP_ENDPOINT") or _env(f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT"))


def protocol(signal: Signal) -> Protocol:
    """The OTLP transport of ``signal``: ``grpc`` when the environment says so, else ``http/protobuf``."""
    chosen = _env(f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL") or _env("OTEL_EXPORTER_OTLP_PROTOCOL")
    return "grpc" if chosen == "grpc" else "http/protobuf"


def content_captured() -> bool:
    """Whether prompts and completions go on spans (``MARSRAG_TRACE_CONTENT=true``; off by default)."""
    return _env(CONTENT_VARIABLE) in ("true", "1", "yes", "on")


def resource() -> Resource:
    """The SDK's resource from the environment, named ``marsrag`` unless the user named the service."""
    # lazy: OpenTelemetry, loads only when an exporter is configured
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource

    made = Resource.create()
    if str(made.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        made = made.merge(Resource({SERVICE_NAME: SERVICE}))
    return made


def _env(name: str) -> str:
    return os.environ.get(name, "").strip().lower()
