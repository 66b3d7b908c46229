"""The gRPC contract of grove-ask's ``Embed`` with the real MiniLM, and its health service."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
import numpy as np
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from grove_contracts.inference.v1 import inference_pb2, inference_pb2_grpc

#: Every call carries a deadline; generous, because the CPU is shared with other runs.
DEADLINE = 60.0
DIMENSIONS = 384
SERVICE = "grove.inference.v1.Inference"


@pytest.fixture(scope="module")
def channel(minilm_ask: str) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(minilm_ask) as opened:
        grpc.channel_ready_future(opened).result(timeout=DEADLINE)
        yield opened


@pytest.fixture(scope="module")
def stub(channel: grpc.Channel) -> Any:
    return inference_pb2_grpc.InferenceStub(channel)  # type: ignore[no-untyped-call]


def embed(
    stub: Any,
    texts: list[str],
    purpose: inference_pb2.Purpose = inference_pb2.QUERY,
    profile: str = "minilm",
) -> Any:
    """Call ``Embed`` with a deadline; returns the response message."""
    request = inference_pb2.EmbedRequest(profile=profile, texts=texts, purpose=purpose)
    return stub.Embed(request, timeout=DEADLINE)


def vectors_of(response: Any) -> np.ndarray:
    return np.array([list(v.values) for v in response.vectors], dtype=np.float64)


def same_vectors(a: np.ndarray, b: np.ndarray) -> bool:
    """Row by row the same text's vector: batching (padding) moves a bfloat16 model's
    vectors by up to ~1e-4 per dimension, so compare by cosine; another text's is far below."""
    return bool(((np.atleast_2d(a) * np.atleast_2d(b)).sum(axis=1) >= 0.9998).all())


def rejected(stub: Any, texts: list[str], **kwargs: Any) -> grpc.RpcError:
    """The error of a call that must fail."""
    with pytest.raises(grpc.RpcError) as caught:
        embed(stub, texts, **kwargs)
    return caught.value


@pytest.mark.parametrize(
    "purpose", [inference_pb2.DOCUMENT, inference_pb2.QUERY], ids=["document", "query"]
)
def test_embed_returns_one_unit_vector_of_384_dimensions_per_text(
    stub: Any, purpose: inference_pb2.Purpose
) -> None:
    texts = ["We deploy with Argo CD every Tuesday", "what is our release cadence?", "ERR_4471"]
    response = embed(stub, texts, purpose=purpose)
    assert response.profile == "minilm"
    assert response.dimensions == DIMENSIONS
    vectors = vectors_of(response)
    assert vectors.shape == (len(texts), DIMENSIONS)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    # Different texts get different vectors (no text's vector was copied to another).
    assert not np.allclose(vectors[0], vectors[1], atol=1e-2)
    assert not np.allclose(vectors[1], vectors[2], atol=1e-2)


def test_embed_accepts_256_texts_in_order_and_rejects_257(stub: Any) -> None:
    texts = [f"note number {i} about topic {i % 7}" for i in range(256)]
    response = embed(stub, texts, purpose=inference_pb2.DOCUMENT)
    vectors = vectors_of(response)
    assert vectors.shape == (256, DIMENSIONS)
    # Order is kept: spot-check a few positions against calls of their own.
    for index in (0, 101, 255):
        alone = vectors_of(embed(stub, [texts[index]], purpose=inference_pb2.DOCUMENT))[0]
        assert same_vectors(vectors[index], alone), index

    error = rejected(stub, [*texts, "one too many"])
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "256" in (error.details() or "")


def test_embed_accepts_a_6000_character_text_and_rejects_6001(stub: Any) -> None:
    longest = ("word " * 1200)[:6000]
    assert len(longest) == 6000
    response = embed(stub, [longest], purpose=inference_pb2.DOCUMENT)
    assert len(response.vectors) == 1
    assert len(response.vectors[0].values) == DIMENSIONS

    error = rejected(stub, ["short", longest + "x"])
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (error.details() or "").startswith("texts[1]")


@pytest.mark.parametrize(
    "texts",
    [[], [""], ["fine", ""]],
    ids=["no-texts", "empty-text", "empty-text-after-a-good-one"],
)
def test_embed_rejects_no_texts_or_an_empty_text(stub: Any, texts: list[str]) -> None:
    error = rejected(stub, texts)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_embed_rejects_an_unspecified_purpose(stub: Any) -> None:
    error = rejected(stub, ["hello"], purpose=inference_pb2.PURPOSE_UNSPECIFIED)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (error.details() or "").startswith("purpose")


def test_embed_answers_not_found_for_another_profile(stub: Any) -> None:
    error = rejected(stub, ["hello"], profile="openai")
    assert error.code() == grpc.StatusCode.NOT_FOUND
    assert (error.details() or "").startswith("unknown_profile")


@pytest.mark.parametrize("service", ["", SERVICE])
def test_health_service_reports_serving(channel: grpc.Channel, service: str) -> None:
    health = health_pb2_grpc.HealthStub(channel)
    response = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=DEADLINE)
    assert response.status == health_pb2.HealthCheckResponse.SERVING


def test_health_service_answers_not_found_for_an_unknown_service(channel: grpc.Channel) -> None:
    health = health_pb2_grpc.HealthStub(channel)
    with pytest.raises(grpc.RpcError) as caught:
        health.Check(health_pb2.HealthCheckRequest(service="no.such.Service"), timeout=DEADLINE)
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND


def test_concurrent_calls_each_get_their_own_vectors(stub: Any) -> None:
    # Requests of different sizes, so a batch mixes them and must slice its output back.
    requests_texts = [
        [f"concurrent request {i}: the {topic} is {mood}" for topic, mood in pairs]
        for i, pairs in enumerate(
            [
                [("weather", "sunny")],
                [("build", "broken"), ("coffee", "cold")],
                [("deploy", "late")],
                [("budget", "approved"), ("printer", "jammed"), ("cat", "asleep")],
                [("database", "replicating")],
                [("train", "delayed"), ("garden", "flooded")],
                [("invoice", "paid")],
                [("server", "rebooting"), ("meeting", "cancelled")],
                [("release", "tagged")],
                [("laptop", "overheating")],
                [("bridge", "closed"), ("river", "frozen"), ("market", "busy")],
                [("kitchen", "clean")],
            ]
        )
    ]
    solo = [vectors_of(embed(stub, texts)) for texts in requests_texts]
    barrier = threading.Barrier(len(requests_texts))

    def call(texts: list[str]) -> np.ndarray:
        barrier.wait(timeout=DEADLINE)
        return vectors_of(embed(stub, texts))

    for _ in range(3):  # a few rounds, so batches form in different ways
        barrier.reset()
        with ThreadPoolExecutor(max_workers=len(requests_texts)) as pool:
            together = list(pool.map(call, requests_texts))
        for texts, alone, concurrent in zip(requests_texts, solo, together, strict=True):
            assert concurrent.shape == (len(texts), DIMENSIONS), texts
            assert same_vectors(concurrent, alone), texts
