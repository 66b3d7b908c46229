"""SIGTERM is graceful: requests in flight finish, then the process exits cleanly."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import grpc

from grove_contracts.inference.v1 import inference_pb2, inference_pb2_grpc
from grove_db import embedded
from tests.support.clients import Client, data_of
from tests.support.fakes import FakeEmbeddings, OpenAIStack, start_fake_ask
from tests.support.processes import start_api
from tests.support.tenants import new_tenant
from tests.support.waiting import wait_until


def test_the_api_finishes_a_request_in_flight_before_exiting(
    openai_stack: Callable[..., OpenAIStack], database: embedded.EmbeddedDatabase
) -> None:
    stack = openai_stack(workers=0)
    api = start_api(
        {
            "GROVE_DATABASE_URL": database.runtime_url,
            "GROVE_EMBEDDING_PROFILE": "openai",
            "GROVE_ASK_ADDRESS": stack.ask.url,
            "GROVE_API_WORKERS": "1",
            "GROVE_QUERY_EMBED_TIMEOUT_MS": "5000",
        }
    )
    tenant = new_tenant(database, api.url)
    note = tenant.client.save("still answered during shutdown")
    gate = threading.Event()
    stack.fake.gate = gate  # the recall's query vector waits here
    with ThreadPoolExecutor(1) as pool:
        recall = pool.submit(tenant.client.post, "/v1/recall", {"query": "shutdown"})
        wait_until(lambda: "shutdown" in stack.fake.calls)
        api.process.send_signal(signal.SIGTERM)
        threading.Timer(1.0, gate.set).start()
        response = recall.result(timeout=30)
    stack.fake.gate = None
    assert response.status_code == 200, response.text
    assert data_of(response)["items"]
    assert api.process.wait(timeout=30) == 0, api.lines[-5:]  # it exits by itself
    api.stop()
    # Leave no embedding job behind for other tests' workers on this profile.
    stack.add_worker()
    other_api = Client(stack.api.url, tenant.client.key)
    wait_until(lambda: data_of(other_api.get(f"/v1/memories/{note['id']}"))["indexing"] == "ready")


def test_ask_finishes_calls_in_flight_before_exiting() -> None:
    fake = FakeEmbeddings(8)
    gate = threading.Event()
    fake.gate = gate
    ask = start_fake_ask(fake)
    channel = grpc.insecure_channel(ask.url)
    stub = inference_pb2_grpc.InferenceStub(channel)  # type: ignore[no-untyped-call]
    request = inference_pb2.EmbedRequest(
        profile="openai", texts=["in flight"], purpose=inference_pb2.QUERY
    )
    try:
        with ThreadPoolExecutor(1) as pool:
            call = pool.submit(stub.Embed, request, timeout=30)
            wait_until(lambda: "in flight" in fake.calls)
            ask.process.send_signal(signal.SIGTERM)
            threading.Timer(1.0, gate.set).start()
            response = call.result(timeout=30)
        assert response.dimensions == 8 and len(response.vectors) == 1
        # It exits by itself after the first SIGTERM: a second one could land while the
        # interpreter tears down, when Python's handlers are gone.
        assert ask.process.wait(timeout=30) == 0
        ask.stop()
    finally:
        channel.close()
        fake.close()
