"""The gRPC client of the ask service's ``Embed``, shared by the api and the worker."""

from __future__ import annotations

import grpc
from opentelemetry import propagate, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from grove_contracts.inference.v1 import inference_pb2, inference_pb2_grpc
from grove_telemetry import metrics

UNAVAILABLE = "inference_unavailable"
tracer = trace.get_tracer("grove.inference")


class InferenceError(Exception):
    """Embedding failed; ``reason`` is a stable code (e.g. ``dimension_mismatch``)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason


class InferenceClient:
    """Calls ``grove.inference.v1.Inference`` with a deadline on every call."""

    def __init__(self, address: str, profile: str) -> None:
        self.profile = profile
        self._channel = grpc.insecure_channel(address)
        self._stub = inference_pb2_grpc.InferenceStub(self._channel)  # type: ignore[no-untyped-call]

    def embed(self, texts: list[str], *, query: bool, timeout: float) -> list[list[float]]:
        """One vector per text, each checked against the response's dimensions."""
        purpose = inference_pb2.QUERY if query else inference_pb2.DOCUMENT
        request = inference_pb2.EmbedRequest(profile=self.profile, texts=texts, purpose=purpose)
        with tracer.start_as_current_span("Inference/Embed", kind=SpanKind.CLIENT) as span:
            span.set_attribute("rpc.system", "grpc")
            span.set_attribute("rpc.method", "Embed")
            carrier: dict[str, str] = {}
            propagate.inject(carrier)  # W3C traceparent, so ask's span joins this trace
            try:
                response = self._stub.Embed(
                    request, timeout=timeout, metadata=list(carrier.items())
                )
            except grpc.RpcError as ex:
                span.set_status(Status(StatusCode.ERROR, ex.code().name))
                metrics.INFERENCE_CLIENT.labels(metrics.service(), "Embed", _outcome(ex)).inc()
                raise _translate(ex) from ex
        metrics.INFERENCE_CLIENT.labels(metrics.service(), "Embed", "ok").inc()
        vectors = [list(v.values) for v in response.vectors]
        if len(vectors) != len(texts) or any(len(v) != response.dimensions for v in vectors):
            raise InferenceError("dimension_mismatch", "vectors do not match the declared size")
        return vectors

    def embed_query(self, text: str, timeout: float) -> list[float]:
        """The vector of one search query."""
        return self.embed([text], query=True, timeout=timeout)[0]

    def close(self) -> None:
        """Close the channel."""
        self._channel.close()


def _outcome(ex: grpc.RpcError) -> str:
    code = ex.code()
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return "timeout"
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED):
        return "unavailable"
    return "error"


def _translate(ex: grpc.RpcError) -> InferenceError:
    code = ex.code()
    details = ex.details() or ""
    if code in (
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.RESOURCE_EXHAUSTED,  # ask is at its concurrency limit
    ):
        reason, _, _ = details.partition(":")
        if code == grpc.StatusCode.UNAVAILABLE and reason.startswith("provider_"):
            return InferenceError(reason, details)
        return InferenceError(UNAVAILABLE, details or code.name)
    reason, sep, _ = details.partition(":")
    if sep and reason.isidentifier():
        return InferenceError(reason, details)
    return InferenceError("inference_error", f"{code.name}: {details}")


def vector_literal(vector: list[float]) -> str:
    """pgvector's text form of a vector, for a ``%s::vector`` parameter."""
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"
