"""``POST /v1/ask`` over real HTTP, real gRPC and the real MiniLM: cited, scoped answers."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import grpc
import pytest

from grove_contracts.inference.v1 import inference_pb2, inference_pb2_grpc
from grove_db import embedded
from tests.support.clients import Client
from tests.support.processes import Running, free_port, start_api, start_ask
from tests.support.scraping import scrape
from tests.support.tenants import Tenant, new_tenant
from tests.support.waiting import wait_until

DEPLOY = "We deploy with Argo CD every Tuesday. The office plant needs water on Fridays."
REFUNDS = "The billing service stores invoices in PostgreSQL. Refunds are processed nightly."
TEA = "Alice prefers green tea in the morning."


def ready(client: Client, note_id: str) -> None:
    """Wait until the worker has embedded the note (semantic retrieval sees it)."""
    wait_until(
        lambda: client.get(f"/v1/memories/{note_id}").json()["data"]["indexing"] == "ready",
        timeout=120,
    )


def save_ready(client: Client, content: str, **fields: Any) -> dict[str, Any]:
    note = client.save(content, **fields)
    ready(client, note["id"])
    return note


def ask(client: Client, body: dict[str, Any], status: int = 200) -> dict[str, Any]:
    response = client.post("/v1/ask", body)
    assert response.status_code == status, response.text
    return response.json()  # type: ignore[no-any-return]


def revision_content(client: Client, note_id: str, version: int) -> str:
    revisions = client.get(f"/v1/memories/{note_id}/revisions").json()["data"]["items"]
    return next(r["content"] for r in revisions if r["version"] == version)  # type: ignore[no-any-return]


def assert_citations_exact(client: Client, answer: dict[str, Any]) -> None:
    """Every citation quotes its revision verbatim at its offsets, and the text holds it."""
    assert answer["citations"]
    for citation in answer["citations"]:
        assert citation["revisionId"] == f"{citation['noteId']}:{citation['version']}"
        content = revision_content(client, citation["noteId"], citation["version"])
        assert content[citation["start"] : citation["end"]] == citation["quote"]
        assert citation["quote"] in answer["text"]


def source_ids(data: dict[str, Any]) -> set[str]:
    return {source["noteId"] for source in data["sources"]}


@dataclass
class Corpus:
    """An account with a small embedded corpus; ``ids`` names its notes and notebooks."""

    tenant: Tenant
    ids: dict[str, str]

    @property
    def client(self) -> Client:
        return self.tenant.client


@pytest.fixture(scope="module")
def corpus(database: embedded.EmbeddedDatabase, hybrid_api_url: str) -> Corpus:
    """Personal notes and two notebooks, each note embedded (shared by this module)."""
    tenant = new_tenant(database, hybrid_api_url)
    first, second = tenant.notebook("platform"), tenant.notebook("billing")
    client = tenant.client
    ids = {
        "deploy": client.save(DEPLOY, projectId=first)["id"],
        "refunds": client.save(REFUNDS, projectId=second)["id"],
        "tea": client.save(TEA, "preference")["id"],
        "first": first,
        "second": second,
    }
    for name in ("deploy", "refunds", "tea"):
        ready(client, ids[name])
    return Corpus(tenant, ids)


def test_extractive_answer_cites_verbatim_spans_of_the_evidence(corpus: Corpus) -> None:
    data = ask(corpus.client, {"query": "When do we deploy?"})["data"]
    assert data["status"] == "answered"
    answer = data["answer"]
    assert answer["generator"] == "extractive" and answer["format"] == "plain"
    assert "We deploy with Argo CD every Tuesday." in answer["text"]
    assert "plant" not in answer["text"] and "tea" not in answer["text"]
    assert_citations_exact(corpus.client, answer)
    deploy = corpus.ids["deploy"]
    assert answer["citations"][0]["noteId"] == deploy
    assert data["sources"][0]["noteId"] == deploy
    assert data["sources"][0]["content"] == DEPLOY and data["sources"][0]["version"] == 1


def test_citations_keep_naming_the_revision_they_quoted_after_a_correction(
    hybrid_tenant: Tenant,
) -> None:
    client = hybrid_tenant.client
    note = save_ready(client, "Backups run at 02:00 UTC every night.")
    first = ask(client, {"query": "When do backups run?"})["data"]["answer"]["citations"][0]
    assert (first["version"], first["revisionId"]) == (1, f"{note['id']}:1")
    corrected = client.patch(
        f"/v1/memories/{note['id']}", {"content": "Backups run at 04:30 UTC on weekdays."}
    )
    assert corrected.status_code == 200, corrected.text
    ready(client, note["id"])
    # The earlier citation still quotes exactly the revision it names ...
    assert revision_content(client, note["id"], 1)[first["start"] : first["end"]] == first["quote"]
    # ... and a new answer cites the corrected revision.
    data = ask(client, {"query": "When do backups run?"})["data"]
    assert data["answer"]["citations"][0]["revisionId"] == f"{note['id']}:2"
    assert "04:30" in data["answer"]["text"]
    assert_citations_exact(client, data["answer"])


def test_an_empty_account_has_no_evidence(hybrid_tenant: Tenant) -> None:
    data = ask(hybrid_tenant.client, {"query": "When do we deploy?"})["data"]
    assert data == {"status": "no_evidence", "answer": None, "sources": []}


def test_an_unrelated_question_has_no_evidence_and_no_invented_text(corpus: Corpus) -> None:
    data = ask(corpus.client, {"query": "What is the capital of France?"})["data"]
    assert data["status"] == "no_evidence"
    assert data["answer"] is None


def test_search_mode_returns_ranked_sources_without_an_answer(corpus: Corpus) -> None:
    data = ask(corpus.client, {"query": "refunds and invoices", "mode": "search"})["data"]
    assert data["status"] == "searched" and data["answer"] is None
    assert data["sources"][0]["noteId"] == corpus.ids["refunds"]
    assert data["sources"][0]["kind"] == "fact"
    assert data["sources"][0]["projectId"] == corpus.ids["second"]
    scores = [source["score"] for source in data["sources"]]
    assert scores == sorted(scores, reverse=True)


def test_scope_follows_project_id_omitted_null_or_a_notebook(corpus: Corpus) -> None:
    ids = corpus.ids
    query = "deploy argo refunds invoices green tea"

    def sources(**scope: Any) -> set[str]:
        return source_ids(ask(corpus.client, {"query": query, "mode": "search", **scope})["data"])

    everything = {ids["deploy"], ids["refunds"], ids["tea"]}
    assert sources() == everything
    assert sources(includePersonal=False) == {ids["deploy"], ids["refunds"]}
    assert sources(projectId=None) == {ids["tea"]}
    assert sources(projectId=ids["first"]) == {ids["deploy"]}
    assert sources(projectId=ids["first"], includePersonal=True) == {ids["deploy"], ids["tea"]}


def test_an_ungranted_or_foreign_notebook_is_not_found_and_other_accounts_never_appear(
    corpus: Corpus, database: embedded.EmbeddedDatabase, hybrid_api_url: str
) -> None:
    ids = corpus.ids
    narrow = corpus.tenant.key(
        "first only", personal=False, all_notebooks=False, notebook_ids=[UUID(ids["first"])]
    )
    refused = ask(narrow, {"query": "refunds", "projectId": ids["second"]}, status=404)
    assert refused["error"]["code"] == "not_found"
    assert ask(narrow, {"query": "tea", "projectId": None}, status=404)["success"] is False
    assert source_ids(ask(narrow, {"query": "deploy refunds tea", "mode": "search"})["data"]) == {
        ids["deploy"]
    }
    other = new_tenant(database, hybrid_api_url)
    mine = save_ready(other.client, "We deploy with Argo CD every Tuesday.")
    data = ask(other.client, {"query": "When do we deploy?"})["data"]
    assert source_ids(data) == {mine["id"]}
    assert {c["noteId"] for c in data["answer"]["citations"]} == {mine["id"]}
    foreign = ask(other.client, {"query": "deploy", "projectId": ids["first"]}, status=404)
    assert foreign["error"]["code"] == "not_found"


def test_limits_at_their_boundaries(corpus: Corpus) -> None:
    longest = ("When do we deploy? " * 400)[:6000]
    assert len(longest.strip()) == 6000
    assert ask(corpus.client, {"query": longest})["data"]["status"] == "answered"
    too_long = ask(corpus.client, {"query": longest + "x"}, status=400)
    assert too_long["error"]["details"][0]["field"] == "query"
    four = {"query": "When do we deploy?", "previousQuestions": ["q1", "q2", "q3", "q4"]}
    assert ask(corpus.client, four)["data"]["status"] == "answered"
    five = {**four, "previousQuestions": ["q0", *four["previousQuestions"]]}
    assert ask(corpus.client, five, status=400)["error"]["code"] == "validation_error"
    for bad in ({"query": "   "}, {"query": "x", "mode": "chat"}, {"query": "x", "extra": 1}):
        assert ask(corpus.client, bad, status=400)["error"]["code"] == "validation_error"


def test_a_read_only_key_may_ask(corpus: Corpus) -> None:
    reader = corpus.tenant.key("reader", personal=True, all_notebooks=True, read_only=True)
    assert ask(reader, {"query": "When do we deploy?"})["data"]["status"] == "answered"


@pytest.fixture(scope="module")
def disabled_ask() -> Iterator[Running]:
    """A grove-ask with answering switched off (and no model, so it starts at once)."""
    running = start_ask(
        {"GROVE_EMBEDDING_PROFILE": "disabled", "GROVE_ANSWER_GENERATOR": "disabled"}
    )
    yield running
    running.stop()


def lexical_api(database: embedded.EmbeddedDatabase, ask_address: str) -> Running:
    return start_api(
        {
            "GROVE_DATABASE_URL": database.runtime_url,
            "GROVE_API_WORKERS": "1",
            "GROVE_EMBEDDING_PROFILE": "disabled",
            "GROVE_ASK_ADDRESS": ask_address,
        }
    )


def test_answering_switched_off_in_grove_ask_says_disabled(
    database: embedded.EmbeddedDatabase, disabled_ask: Running
) -> None:
    api = lexical_api(database, disabled_ask.url)
    try:
        client = new_tenant(database, api.url).client
        note = client.save(DEPLOY)
        data = ask(client, {"query": "When do we deploy?"})["data"]
        assert data["status"] == "disabled" and data["answer"] is None
        assert source_ids(data) == {note["id"]}
    finally:
        api.stop()
    refused = [
        value
        for labels, value in scrape(disabled_ask)["grove_grpc_server_requests_total"]
        if labels["method"] == "Answer" and labels["code"] == "FAILED_PRECONDITION"
    ]
    assert refused and refused[0] >= 1


def test_grove_ask_down_answers_503_inference_unavailable(
    database: embedded.EmbeddedDatabase,
) -> None:
    api = lexical_api(database, f"127.0.0.1:{free_port()}")
    try:
        client = new_tenant(database, api.url).client
        client.save(DEPLOY)
        failed = ask(client, {"query": "When do we deploy?"}, status=503)
        assert failed["error"]["code"] == "inference_unavailable"
        assert failed["error"]["requestId"]
        # Search mode needs no generator, so it still works.
        assert ask(client, {"query": "deploy", "mode": "search"})["data"]["status"] == "searched"
    finally:
        api.stop()


def answer_call(address: str, **fields: Any) -> Any:
    """Call ``Inference.Answer`` directly over gRPC."""
    with grpc.insecure_channel(address) as channel:
        stub = inference_pb2_grpc.InferenceStub(channel)  # type: ignore[no-untyped-call]
        return stub.Answer(inference_pb2.AnswerRequest(**fields), timeout=60)


def evidence(count: int, chars: int = 40) -> list[Any]:
    text = ("We deploy with Argo CD every Tuesday. " * 200)[:chars]
    return [inference_pb2.Evidence(note_id=f"n{i}", version=1, content=text) for i in range(count)]


def test_grpc_answer_limits_at_their_boundaries(minilm_ask: str) -> None:
    fine = answer_call(
        minilm_ask,
        question="q" * 6000,
        previous_questions=["p"] * 8,
        evidence=evidence(24, chars=6000),
    )
    assert fine.generator == "extractive"
    refused: list[dict[str, Any]] = [
        {"question": "q" * 6001},
        {"question": "   "},
        {"question": "q", "previous_questions": ["p"] * 9},
        {"question": "q", "evidence": evidence(25)},
        {"question": "q", "evidence": evidence(1, chars=6001)},
        {
            "question": "q",
            "evidence": [inference_pb2.Evidence(note_id="n", version=0, content="c")],
        },
    ]
    for fields in refused:
        with pytest.raises(grpc.RpcError) as caught:
            answer_call(minilm_ask, **fields)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT, fields


def test_grpc_answer_quotes_exact_offsets_and_says_disabled_when_switched_off(
    minilm_ask: str, disabled_ask: Running
) -> None:
    content = "Intro line.\n- We deploy with Argo CD every Tuesday.\nUnrelated: the plant."
    reply = answer_call(
        minilm_ask,
        question="When do we deploy?",
        evidence=[inference_pb2.Evidence(note_id="n1", version=7, content=content)],
        format=inference_pb2.MARKDOWN,
    )
    [citation] = reply.citations
    assert (citation.note_id, citation.version) == ("n1", 7)
    assert content[citation.start : citation.end] == citation.quote
    assert citation.quote == "We deploy with Argo CD every Tuesday."
    assert reply.text == f"- {citation.quote}" and reply.format == inference_pb2.MARKDOWN
    with pytest.raises(grpc.RpcError) as caught:
        answer_call(disabled_ask.url, question="q", evidence=evidence(1))
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert caught.value.details().startswith("disabled:")
