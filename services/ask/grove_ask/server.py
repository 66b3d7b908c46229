"""The gRPC server: ``Inference.Embed`` plus the standard health service."""

from __future__ import annotations

import concurrent.futures
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from grove_ask.batcher import Batcher
from grove_ask.providers import ProviderError
from grove_ask.settings import AskSettings
from grove_ask.telemetry import ServerTelemetry
from grove_contracts.inference.v1 import inference_pb2, inference_pb2_grpc

MAX_TEXTS = 256
MAX_TEXT_CHARS = 6000
MAX_MESSAGE_BYTES = 8 * 1024 * 1024
SERVICE_NAME = "grove.inference.v1.Inference"


class InferenceService(inference_pb2_grpc.InferenceServicer):  # type: ignore[misc]
    """Embeds texts with the one configured profile."""

    def __init__(self, batcher: Batcher | None, profile: str) -> None:
        self._batcher = batcher
        self._profile = profile

    def Embed(self, request: Any, context: grpc.ServicerContext) -> Any:  # gRPC method name
        problem = _invalid(request)
        if problem:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, problem)
        if self._batcher is None:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "disabled: embeddings are disabled")
        if request.profile and request.profile != self._profile:
            context.abort(
                grpc.StatusCode.NOT_FOUND,
                f"unknown_profile: this server embeds with {self._profile!r}",
            )
        remaining = context.time_remaining()
        try:
            vectors = self._batcher.embed(list(request.texts), timeout=remaining)
        except concurrent.futures.TimeoutError:
            context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "timeout: embedding took too long")
        except ProviderError as ex:
            code = (
                grpc.StatusCode.FAILED_PRECONDITION
                if ex.reason == "dimension_mismatch"
                else grpc.StatusCode.UNAVAILABLE
            )
            context.abort(code, str(ex))
        dimensions = self._batcher.provider.dimensions
        return inference_pb2.EmbedResponse(
            profile=self._profile,
            dimensions=dimensions,
            vectors=[inference_pb2.Vector(values=v) for v in vectors],
        )


def _invalid(request: Any) -> str | None:
    if not request.texts:
        return "texts: give at least one text"
    if len(request.texts) > MAX_TEXTS:
        return f"texts: at most {MAX_TEXTS} per call"
    for index, text in enumerate(request.texts):
        if not text.strip():
            return f"texts[{index}]: must not be empty"
        if len(text) > MAX_TEXT_CHARS:
            return f"texts[{index}]: at most {MAX_TEXT_CHARS} characters"
    if request.purpose == inference_pb2.PURPOSE_UNSPECIFIED:
        return "purpose: DOCUMENT or QUERY"
    return None


def create_server(
    settings: AskSettings, address: str, batcher: Batcher | None
) -> tuple[grpc.Server, int]:
    """Build (not start) the server bound to ``address``; returns it and its port."""
    server = grpc.server(
        concurrent.futures.ThreadPoolExecutor(max_workers=settings.ask_threads),
        interceptors=[ServerTelemetry()],
        maximum_concurrent_rpcs=settings.ask_max_concurrent_rpcs,
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ],
    )
    inference_pb2_grpc.add_InferenceServicer_to_server(
        InferenceService(batcher, settings.embedding_profile), server
    )
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    for name in ("", SERVICE_NAME):
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    port = server.add_insecure_port(address)
    return server, port
