"""The ask service's metrics and its gRPC server interceptor (spans and RPC counts).

The interceptor continues the caller's trace from the W3C ``traceparent`` in the
call's metadata, so an api recall and the ``Embed`` it causes share one trace.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import grpc
from opentelemetry import context, propagate, trace
from opentelemetry.trace import SpanKind, Status, StatusCode
from prometheus_client import Counter, Gauge, Histogram

from grove_telemetry import metrics
from grove_telemetry.metrics import LATENCY_BUCKETS

RPCS = Counter(
    "grove_grpc_server_requests",
    "gRPC calls answered, by method and status code.",
    ["service", "method", "code"],
)
RPC_DURATION = Histogram(
    "grove_grpc_server_request_duration_seconds",
    "Time to answer a gRPC call.",
    ["service", "method"],
    buckets=LATENCY_BUCKETS,
)
BATCH_SIZE = Histogram(
    "grove_ask_batch_size",
    "Texts per model call after coalescing.",
    ["service"],
    buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024),
)
MODEL_LATENCY = Histogram(
    "grove_ask_model_latency_seconds",
    "Time the embedding model (or provider) took per batch.",
    ["service"],
    buckets=LATENCY_BUCKETS,
)
QUEUE_WAIT = Histogram(
    "grove_ask_queue_wait_seconds",
    "Time a request waited for the model thread.",
    ["service"],
    buckets=LATENCY_BUCKETS,
)
MODEL_LOADED = Gauge(
    "grove_ask_model_loaded",
    "1 when the embedding model (or provider) is ready to embed.",
    ["service"],
    multiprocess_mode="livemax",
)
ANSWER_INVALID_REPLIES = Counter(
    "grove_ask_answer_invalid_replies",
    "Answer-model replies refused (not JSON, no citations, an inexact citation), by reason.",
    ["service", "reason"],
)
ANSWER_FALLBACKS = Counter(
    "grove_ask_answer_fallbacks",
    "Answers written by the extractive generator after two unusable model replies.",
    ["service"],
)
ANSWER_PROPOSALS = Counter(
    "grove_ask_answer_proposals",
    "Proposals (changes to the notes) an answer model offered that were valid and passed on.",
    ["service"],
)
ANSWER_PROPOSALS_DROPPED = Counter(
    "grove_ask_answer_proposals_dropped",
    "Proposals an answer model offered that were invalid and dropped (never retried), by reason.",
    ["service", "reason"],
)
#: Every ``reason`` of ``ANSWER_INVALID_REPLIES`` (the ``InvalidReply`` reasons in chat.py).
INVALID_REPLY_REASONS = ("not_json", "no_citations", "invalid_citation")
#: Every ``reason`` of ``ANSWER_PROPOSALS_DROPPED`` (the ``DroppedProposal`` reasons in chat.py).
DROPPED_PROPOSAL_REASONS = (
    "malformed",
    "unknown_action",
    "unknown_reference",
    "invalid",
    "too_many",
)
tracer = trace.get_tracer("grove.ask")


def init_answer_metrics(service: str) -> None:
    """Create the answer-model series at 0, whichever generator runs, so they are exported
    before the first refused reply, fallback or proposal."""
    for reason in INVALID_REPLY_REASONS:
        ANSWER_INVALID_REPLIES.labels(service, reason)
    ANSWER_FALLBACKS.labels(service)
    ANSWER_PROPOSALS.labels(service)
    for reason in DROPPED_PROPOSAL_REASONS:
        ANSWER_PROPOSALS_DROPPED.labels(service, reason)


class ServerTelemetry(grpc.ServerInterceptor):  # type: ignore[misc]
    """Wrap every unary call in a server span, count it and time it."""

    def intercept_service(self, continuation: Callable[[Any], Any], details: Any) -> Any:
        handler = continuation(details)
        if handler is None or handler.unary_unary is None:
            return handler
        method = details.method.rsplit("/", 1)[-1]
        carrier = {key: value for key, value in details.invocation_metadata}
        inner = handler.unary_unary

        def observed(request: Any, servicer_context: grpc.ServicerContext) -> Any:
            start = time.perf_counter()
            parent = propagate.extract(carrier)
            token = context.attach(parent)
            code = "OK"
            try:
                with tracer.start_as_current_span(
                    f"{details.method.lstrip('/')}", kind=SpanKind.SERVER
                ) as span:
                    span.set_attribute("rpc.system", "grpc")
                    span.set_attribute("rpc.method", method)
                    try:
                        return inner(request, servicer_context)
                    finally:
                        status = servicer_context.code()
                        code = status.name if status is not None else "OK"
                        if code != "OK":
                            span.set_status(Status(StatusCode.ERROR, code))
            except Exception:
                code = "UNKNOWN" if code == "OK" else code
                raise
            finally:
                context.detach(token)
                service = metrics.service()
                RPCS.labels(service, method, code).inc()
                RPC_DURATION.labels(service, method).observe(time.perf_counter() - start)

        return grpc.unary_unary_rpc_method_handler(
            observed,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
