"""The gRPC client of the ask service (``Embed``, ``Answer``), shared by the api and the worker."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import grpc
from opentelemetry import propagate, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from grove_contracts.inference.v1 import inference_pb2, inference_pb2_grpc
from grove_contracts.proposals import MAX_PROPOSALS, ProposalDraft
from grove_memory.errors import ServiceError
from grove_telemetry import metrics

UNAVAILABLE = "inference_unavailable"
TIMEOUT = "inference_timeout"
GONE = "client_gone"
tracer = trace.get_tracer("grove.inference")

#: Set by an HTTP handler around a long call: returns True once its client has closed the
#: connection. A call made while it is set is watched and cancelled then (the ask service
#: in turn closes its provider request), raising ``InferenceError(GONE)``.
CLIENT_GONE: ContextVar[Callable[[], bool] | None] = ContextVar("client_gone", default=None)
WATCH_SECONDS = 0.1


class InferenceError(ServiceError):
    """Embedding failed; ``reason`` is a stable code (e.g. ``dimension_mismatch``)."""

    code = UNAVAILABLE
    status = 503

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason


@dataclass(frozen=True)
class EvidenceText:
    """One note revision sent to ``Answer`` as evidence."""

    note_id: str
    version: int
    content: str


@dataclass(frozen=True)
class QuotedSpan:
    """A citation as ``Answer`` returned it: not yet verified against the evidence."""

    note_id: str
    version: int
    quote: str
    start: int
    end: int


@dataclass(frozen=True)
class Generated:
    """``Answer``'s reply: text (empty: the evidence does not answer), generator, citations,
    and the changes to the notes it offers.

    ``proposals`` are valid against the contract (checked again on arrival), at most
    ``MAX_PROPOSALS``, naming notes and notebooks by id but not yet checked against the
    notes themselves (that they exist, are the owner's, are in scope);
    ``proposals_dropped`` counts the ones the model offered that were invalid.
    """

    text: str
    markdown: bool
    generator: str
    citations: list[QuotedSpan]
    proposals: list[ProposalDraft] = field(default_factory=list)
    proposals_dropped: int = 0
    #: grove-ask's generator settings when it wrote this (``Describe``'s words).
    configuration: str = ""


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
        response = self._call("Embed", self._stub.Embed, request, timeout, UNAVAILABLE)
        vectors = [list(v.values) for v in response.vectors]
        if len(vectors) != len(texts) or any(len(v) != response.dimensions for v in vectors):
            raise InferenceError("dimension_mismatch", "vectors do not match the declared size")
        return vectors

    def embed_query(self, text: str, timeout: float) -> list[float]:
        """The vector of one search query."""
        return self.embed([text], query=True, timeout=timeout)[0]

    def answer(
        self,
        question: str,
        previous: Sequence[str],
        evidence: Sequence[EvidenceText],
        *,
        markdown: bool,
        timeout: float,
        notebooks: Sequence[tuple[str, str]] = (),
    ) -> Generated:
        """Call ``Answer``; a missed deadline raises ``InferenceError("inference_timeout")``.

        ``notebooks`` (id, name) are the ones in scope that proposals may file notes into.
        """
        request = inference_pb2.AnswerRequest(
            question=question,
            previous_questions=list(previous),
            evidence=[
                inference_pb2.Evidence(note_id=e.note_id, version=e.version, content=e.content)
                for e in evidence
            ],
            format=inference_pb2.MARKDOWN if markdown else inference_pb2.PLAIN,
            notebooks=[inference_pb2.NotebookRef(id=i, name=name) for i, name in notebooks],
        )
        response = self._call("Answer", self._stub.Answer, request, timeout, TIMEOUT)
        proposals = [p for p in map(_proposal, response.proposals) if p is not None]
        return Generated(
            text=response.text,
            markdown=response.format == inference_pb2.MARKDOWN,
            generator=response.generator,
            citations=[
                QuotedSpan(c.note_id, c.version, c.quote, c.start, c.end)
                for c in response.citations
            ],
            proposals=proposals[:MAX_PROPOSALS],
            configuration=response.configuration,
            proposals_dropped=response.proposals_dropped
            + len(response.proposals)
            - min(len(proposals), MAX_PROPOSALS),
        )

    def describe(self, *, timeout: float) -> str:
        """The generator and settings grove-ask answers with now (``disabled``,
        ``extractive``, ``openai:<model>``)."""
        request = inference_pb2.DescribeRequest()
        response = self._call("Describe", self._stub.Describe, request, timeout, UNAVAILABLE)
        return str(response.configuration)

    def _call(
        self, method: str, stub_method: Any, request: Any, timeout: float, timeout_reason: str
    ) -> Any:
        """One traced, counted call; gRPC errors become ``InferenceError``.

        A missed deadline gets ``timeout_reason``: recall and the worker treat it as
        ``inference_unavailable``, ask tells it apart as ``inference_timeout``.
        """
        with tracer.start_as_current_span(f"Inference/{method}", kind=SpanKind.CLIENT) as span:
            span.set_attribute("rpc.system", "grpc")
            span.set_attribute("rpc.method", method)
            carrier: dict[str, str] = {}
            propagate.inject(carrier)  # W3C traceparent, so ask's span joins this trace
            metadata = list(carrier.items())
            gone = CLIENT_GONE.get()
            try:
                if gone is None:
                    response = stub_method(request, timeout=timeout, metadata=metadata)
                else:
                    future = stub_method.future(request, timeout=timeout, metadata=metadata)
                    response = _watched(future, gone, span, method)
            except grpc.RpcError as ex:
                span.set_status(Status(StatusCode.ERROR, ex.code().name))
                metrics.INFERENCE_CLIENT.labels(metrics.service(), method, _outcome(ex)).inc()
                if ex.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                    raise InferenceError(timeout_reason, ex.details() or ex.code().name) from ex
                raise _translate(ex) from ex
        metrics.INFERENCE_CLIENT.labels(metrics.service(), method, "ok").inc()
        return response

    def close(self) -> None:
        """Close the channel."""
        self._channel.close()


def _proposal(wire: Any) -> ProposalDraft | None:
    """The draft in a wire ``ProposalDraft``; None when it breaks the contract."""
    try:
        change = json.loads(wire.change_json)
        return ProposalDraft.model_validate({"summary": wire.summary, "change": change})
    except (ValueError, RecursionError):  # pydantic's ValidationError is a ValueError
        return None


def _watched(future: Any, gone: Callable[[], bool], span: Any, method: str) -> Any:
    """The call's response, or cancel it and raise ``InferenceError(GONE)`` once the
    client has gone away (checked every ``WATCH_SECONDS``)."""
    while True:
        try:
            return future.result(timeout=WATCH_SECONDS)
        except grpc.FutureTimeoutError:
            if gone():
                future.cancel()
                span.set_status(Status(StatusCode.ERROR, "CANCELLED"))
                metrics.INFERENCE_CLIENT.labels(metrics.service(), method, "cancelled").inc()
                raise InferenceError(GONE, "the client closed the connection") from None


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
