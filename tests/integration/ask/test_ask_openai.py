"""The ``openai`` answer generator against a fake chat endpoint, and the ask limits.

Real grove-ask and grove-api processes (embeddings disabled, so evidence is lexical) over
real HTTP and gRPC; the one stand-in is the chat-completions provider, a local HTTP
server this module starts and scripts per test.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
import requests

from grove_contracts.inference.v1 import inference_pb2, inference_pb2_grpc
from grove_db import embedded
from tests.support.chat import (
    Drop,
    FakeChat,
    Gated,
    Hold,
    Step,
    number_of,
    reply,
    serve,
)
from tests.support.clients import Client, error_of
from tests.support.processes import Running, start_api, start_ask
from tests.support.scraping import scrape
from tests.support.tenants import Tenant, new_tenant
from tests.support.waiting import wait_until
from tests.support.windows import in_one_window

DEPLOY = "We deploy with Argo CD every Tuesday. The office plant needs water on Fridays."
TEA = "Alice prefers green tea in the morning."
MODEL = "fake-chat"
KEY = "sk-test-answer-key"
PROVIDER_TIMEOUT = 3.0  # seconds: GROVE_ANSWER_OPENAI_TIMEOUT_SECONDS of grove-ask
ASK_RATE = 4
ASK_CONCURRENT = 2


@dataclass
class Stack:
    """The fake provider, grove-ask on the openai generator, and two apis using it."""

    fake: FakeChat
    ask: Running
    api: Running
    limited: Running
    database: embedded.EmbeddedDatabase

    def tenant(self, limited: bool = False) -> Tenant:
        return new_tenant(self.database, (self.limited if limited else self.api).url)


def api_env(database: embedded.EmbeddedDatabase, ask: Running, **extra: str) -> dict[str, str]:
    return {
        "GROVE_DATABASE_URL": database.runtime_url,
        "GROVE_API_WORKERS": "1",  # the concurrency limit is per process
        "GROVE_EMBEDDING_PROFILE": "disabled",
        "GROVE_ASK_ADDRESS": ask.url,
        **extra,
    }


@pytest.fixture(scope="module")
def stack(database: embedded.EmbeddedDatabase) -> Iterator[Stack]:
    fake = FakeChat()
    server = serve(fake)
    base = f"{server.url}/v1"
    running: list[Running] = []
    try:
        ask = start_ask(
            {
                "GROVE_EMBEDDING_PROFILE": "disabled",
                "GROVE_ANSWER_GENERATOR": "openai",
                "GROVE_ANSWER_OPENAI_BASE_URL": base,
                "GROVE_ANSWER_OPENAI_MODEL": MODEL,
                "GROVE_ANSWER_OPENAI_API_KEY": KEY,
                "GROVE_ANSWER_OPENAI_TIMEOUT_SECONDS": str(PROVIDER_TIMEOUT),
            }
        )
        running.append(ask)
        running.append(start_api(api_env(database, ask, GROVE_ASK_RATE_LIMIT_PER_MINUTE="0")))
        limits = {
            "GROVE_ASK_RATE_LIMIT_PER_MINUTE": str(ASK_RATE),
            "GROVE_ASK_MAX_CONCURRENT_PER_ACCOUNT": str(ASK_CONCURRENT),
        }
        running.append(start_api(api_env(database, ask, **limits)))
        yield Stack(fake, ask, running[1], running[2], database)
    finally:
        fake.gate.set()
        for service in reversed(running):
            service.stop()
        server.close()


VALID = reply("We deploy on Tuesdays, with Argo CD.", (1, "We deploy with Argo CD every Tuesday."))
QUESTION = {"query": "When do we deploy?"}


def ask(client: Client, body: dict[str, Any], status: int = 200) -> requests.Response:
    response = client.post("/v1/ask", body)
    assert response.status_code == status, response.text
    return response


def answer_of(client: Client, body: dict[str, Any] = QUESTION) -> dict[str, Any]:
    data = ask(client, body).json()["data"]
    assert data["status"] == "answered", data
    return data["answer"]  # type: ignore[no-any-return]


def assert_exact(answer: dict[str, Any], contents: dict[str, str]) -> None:
    assert answer["citations"]
    for citation in answer["citations"]:
        content = contents[citation["noteId"]]
        assert content[citation["start"] : citation["end"]] == citation["quote"]
        assert citation["revisionId"] == f"{citation['noteId']}:{citation['version']}"


def test_the_model_answer_is_used_with_exact_citations_mapped_to_its_evidence(
    stack: Stack,
) -> None:
    client = stack.tenant().client
    deploy, tea = client.save(DEPLOY), client.save(TEA, "preference")
    stack.fake.reset(
        lambda body: reply(
            "Tuesdays; Alice likes green tea.",
            (number_of(body, DEPLOY), "every Tuesday"),
            (number_of(body, TEA), "green tea"),
        )
    )
    answer = answer_of(client, {"query": "When do we deploy with Argo, and does Alice like tea?"})
    assert answer["generator"] == "openai"
    assert answer["text"] == "Tuesdays; Alice likes green tea."
    assert [(c["noteId"], c["quote"]) for c in answer["citations"]] == [
        (deploy["id"], "every Tuesday"),
        (tea["id"], "green tea"),
    ]
    assert_exact(answer, {deploy["id"]: DEPLOY, tea["id"]: TEA})
    [seen] = stack.fake.seen
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["Authorization"] == f"Bearer {KEY}"
    assert seen.body["model"] == MODEL
    assert seen.body["response_format"] == {"type": "json_object"}
    assert f"] {DEPLOY}" in seen.prompt and f"] {TEA}" in seen.prompt
    assert {number_of(seen.body, DEPLOY), number_of(seen.body, TEA)} == {1, 2}
    assert '"evidence": <number>' in seen.body["messages"][0]["content"]


def test_invalid_citations_are_sent_back_once_and_the_corrected_answer_is_used(
    stack: Stack,
) -> None:
    client = stack.tenant().client
    note = client.save(DEPLOY)
    invented = reply("Mondays.", (1, "We deploy every Monday."), (7, "every Tuesday"))
    stack.fake.reset(invented, VALID)
    answer = answer_of(client)
    assert answer["generator"] == "openai"
    assert answer["citations"][0]["quote"] == "We deploy with Argo CD every Tuesday."
    assert_exact(answer, {note["id"]: DEPLOY})
    first, retry = stack.fake.seen
    assert retry.body["messages"][:2] == first.body["messages"]
    assert retry.body["messages"][2] == {"role": "assistant", "content": invented}
    told = retry.body["messages"][3]["content"]
    assert 'the quote "We deploy every Monday." does not occur in evidence 1' in told
    assert "there is no evidence 7 (1 to 1)" in told


UNUSABLE = {
    "quote_not_in_evidence": reply("Mondays.", (1, "We deploy every Monday.")),
    "evidence_out_of_range": reply("Tuesdays.", (2, "every Tuesday")),
    "missing_citations": reply("We deploy on Tuesdays."),
    "not_json": "We deploy on Tuesdays, I believe.",
}


@pytest.mark.parametrize("unusable", UNUSABLE.values(), ids=UNUSABLE.keys())
@pytest.mark.parametrize("retry_works", [True, False], ids=["then-valid", "twice"])
def test_an_unusable_reply_is_retried_once_then_answered_extractively(
    stack: Stack, unusable: str, retry_works: bool
) -> None:
    client = stack.tenant().client
    note = client.save(DEPLOY)
    fallbacks = sum(v for _, v in scrape(stack.ask).get("grove_ask_answer_fallbacks_total", []))
    stack.fake.reset(unusable, VALID if retry_works else unusable)
    answer = answer_of(client)
    assert len(stack.fake.seen) == 2
    assert_exact(answer, {note["id"]: DEPLOY})
    after = sum(v for _, v in scrape(stack.ask).get("grove_ask_answer_fallbacks_total", []))
    if retry_works:
        assert answer["generator"] == "openai" and after == fallbacks
    else:
        assert answer["generator"] == "extractive" and after == fallbacks + 1
        assert answer["text"] == "We deploy with Argo CD every Tuesday."


def test_an_empty_model_answer_means_no_evidence_without_a_retry(stack: Stack) -> None:
    client = stack.tenant().client
    client.save(DEPLOY)
    stack.fake.reset(reply(""))
    data = ask(client, QUESTION).json()["data"]
    assert data["status"] == "no_evidence" and data["answer"] is None
    assert len(stack.fake.seen) == 1


def test_a_slow_model_answers_504_inference_timeout_and_its_request_is_closed(
    stack: Stack,
) -> None:
    client = stack.tenant().client
    client.save(DEPLOY)
    stack.fake.reset(Hold())
    started = time.monotonic()
    error = error_of(ask(client, QUESTION, status=504))
    assert error["code"] == "inference_timeout"
    assert PROVIDER_TIMEOUT - 0.5 <= time.monotonic() - started < PROVIDER_TIMEOUT + 5
    wait_until(lambda: stack.fake.closed, timeout=5)
    assert len(stack.fake.seen) == 1  # a timeout is not retried


@pytest.mark.parametrize("failure", [500, 503, Drop()], ids=["500", "503", "dropped"])
def test_a_failing_provider_answers_503_inference_unavailable(stack: Stack, failure: Step) -> None:
    client = stack.tenant().client
    client.save(DEPLOY)
    stack.fake.reset(failure)
    error = error_of(ask(client, QUESTION, status=503))
    assert error["code"] == "inference_unavailable"
    assert len(stack.fake.seen) == 1  # an outage is neither retried nor papered over
    # search mode needs no model
    assert ask(client, {**QUESTION, "mode": "search"}).json()["data"]["status"] == "searched"


def answer_request() -> Any:
    return inference_pb2.AnswerRequest(
        question="When do we deploy?",
        evidence=[inference_pb2.Evidence(note_id="n1", version=1, content=DEPLOY)],
    )


def test_cancelling_the_grpc_call_closes_the_provider_request_at_once(stack: Stack) -> None:
    stack.fake.reset(Hold())
    with grpc.insecure_channel(stack.ask.url) as channel:
        stub = inference_pb2_grpc.InferenceStub(channel)  # type: ignore[no-untyped-call]
        call = stub.Answer.future(answer_request(), timeout=30)
        wait_until(lambda: stack.fake.seen, timeout=10)
        cancelled = time.monotonic()
        assert call.cancel()
        closed = wait_until(lambda: stack.fake.closed and stack.fake.closed[0], timeout=5)
    # Well before the provider timeout (3 s) would have closed it.
    assert closed - cancelled < 1.0
    assert len(stack.fake.seen) == 1


def test_a_passed_grpc_deadline_closes_the_provider_request(stack: Stack) -> None:
    stack.fake.reset(Hold())
    with grpc.insecure_channel(stack.ask.url) as channel:
        stub = inference_pb2_grpc.InferenceStub(channel)  # type: ignore[no-untyped-call]
        started = time.monotonic()
        with pytest.raises(grpc.RpcError) as caught:
            stub.Answer(answer_request(), timeout=0.5)
        assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        closed = wait_until(lambda: stack.fake.closed and stack.fake.closed[0], timeout=5)
    assert closed - started < 1.5


def test_the_api_deadline_answers_504_and_closes_the_provider_request(stack: Stack) -> None:
    impatient = start_api(api_env(stack.database, stack.ask, GROVE_ANSWER_TIMEOUT_MS="500"))
    try:
        client = new_tenant(stack.database, impatient.url).client
        client.save(DEPLOY)
        stack.fake.reset(Hold())
        started = time.monotonic()
        assert error_of(ask(client, QUESTION, status=504))["code"] == "inference_timeout"
        closed = wait_until(lambda: stack.fake.closed and stack.fake.closed[0], timeout=5)
        assert closed - started < 2.0  # the api's deadline, not the provider timeout (3 s)
    finally:
        impatient.stop()


def test_the_ask_rate_limit_is_per_account_at_its_boundary(stack: Stack) -> None:
    def scenario() -> None:
        tenant = stack.tenant(limited=True)
        search = {**QUESTION, "mode": "search"}
        for _ in range(ASK_RATE):
            ask(tenant.client, search)
        refused = ask(tenant.client, search, status=429)
        error = error_of(refused)
        assert error["code"] == "rate_limited"
        assert f"at most {ASK_RATE} requests per minute for this account" in error["message"]
        assert 1 <= int(refused.headers["Retry-After"]) <= 60
        # Counted per account: another key of the account is refused too, another account not.
        other_key = tenant.key("second", personal=True, all_notebooks=True)
        assert error_of(ask(other_key, search, status=429))["code"] == "rate_limited"
        ask(stack.tenant(limited=True).client, search)

    in_one_window(scenario)


def test_asks_in_progress_are_limited_per_account_at_the_boundary(stack: Stack) -> None:
    # Within the rate limit (4 asks) even without a fresh window: a new minute only resets.
    tenant = stack.tenant(limited=True)
    tenant.client.save(DEPLOY)
    stack.fake.reset(Gated(VALID))
    results: list[requests.Response] = []

    def ask_in_thread() -> None:
        with requests.Session() as session:
            results.append(
                session.post(
                    f"{stack.limited.url}/v1/ask",
                    json=QUESTION,
                    headers=tenant.client.headers(),
                    timeout=30,
                )
            )

    threads = [threading.Thread(target=ask_in_thread) for _ in range(ASK_CONCURRENT)]
    for thread in threads:
        thread.start()
    try:
        wait_until(lambda: len(stack.fake.seen) == ASK_CONCURRENT, timeout=10)
        refused = ask(tenant.client, QUESTION, status=429)
        assert error_of(refused)["code"] == "rate_limited"
        assert f"at most {ASK_CONCURRENT} asks of this account at a time" in refused.text
        assert refused.headers["Retry-After"] == "1"
        assert len(stack.fake.seen) == ASK_CONCURRENT  # refused before any model call
        # Another account is not held up by this one's asks.
        other = stack.tenant(limited=True).client
        assert ask(other, {**QUESTION, "mode": "search"}).json()["data"]["status"] == "no_evidence"
    finally:
        stack.fake.gate.set()
        for thread in threads:
            thread.join(timeout=30)
    assert [r.status_code for r in results] == [200] * ASK_CONCURRENT
    # The slots are given back when the asks end.
    assert answer_of(tenant.client)["generator"] == "openai"


def test_a_client_that_hangs_up_cancels_the_answer_and_the_provider_request(
    stack: Stack,
) -> None:
    client = stack.tenant().client
    client.save(DEPLOY)
    stack.fake.reset(Hold())
    body = json.dumps(QUESTION).encode()
    host, port = stack.api.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(
            b"POST /v1/ask HTTP/1.1\r\nHost: grove\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {client.key}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        wait_until(lambda: stack.fake.seen, timeout=10)  # the model is working on it
        hung_up = time.monotonic()
    closed = wait_until(lambda: stack.fake.closed and stack.fake.closed[0], timeout=5)
    # Well before the provider timeout (3 s) or the api's deadline (10 s) would end it.
    assert closed - hung_up < 1.0
    assert len(stack.fake.seen) == 1
