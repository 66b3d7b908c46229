"""OpenTelemetry tracing, configured by the standard ``OTEL_*`` variables.

Every service installs the SDK's tracer provider, so trace IDs exist for logs and
propagate (W3C ``traceparent``) whether or not spans are exported. Spans leave the
process only when ``OTEL_TRACES_EXPORTER`` names an exporter: ``otlp`` (OTLP over
HTTP/protobuf to ``OTEL_EXPORTER_OTLP_ENDPOINT``/``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``)
or ``console``. Sampling follows ``OTEL_TRACES_SAMPLER`` (default: parent-based,
always on).
"""

from __future__ import annotations

import os

from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SpanExporter,
)

EXPORTERS = ("none", "otlp", "console")


def configure_tracing(service: str) -> TracerProvider:
    """Install the tracer provider for this process, with the configured exporter."""
    attributes = {} if os.environ.get("OTEL_SERVICE_NAME") else {SERVICE_NAME: service}
    provider = TracerProvider(resource=Resource.create(attributes))
    exporter = _exporter(os.environ.get("OTEL_TRACES_EXPORTER", "none").strip().lower())
    if exporter is not None:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return provider


def _exporter(name: str) -> SpanExporter | None:
    if name in ("", "none"):
        return None
    if name == "console":
        return ConsoleSpanExporter()
    if name == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter()
    raise ValueError(f"OTEL_TRACES_EXPORTER must be one of {', '.join(EXPORTERS)}, not {name!r}")
