"""HTTP edges and every validation boundary.

These are the app's own answers, so they run on ``create_app`` in this process: here
``make_tenant`` (and so ``tenant``) makes accounts on the in-process app. What needs the
socket (a body over the limit is drained, so the client sees the 413) stays on gunicorn.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable

import pytest

from grove_db import embedded
from tests.support.clients import Client, error_of
from tests.support.inprocess import InProcessApi
from tests.support.tenants import Tenant, new_tenant


@pytest.fixture
def make_tenant(make_inprocess_tenant: Callable[[], Tenant]) -> Callable[[], Tenant]:
    """Accounts on the app in this process: these tests need no server."""
    return make_inprocess_tenant


def test_every_response_carries_a_request_id(tenant: Tenant) -> None:
    assert tenant.client.get("/healthz").headers["X-Request-Id"]
    echoed = tenant.client.get("/v1/memories", headers={"X-Request-Id": "trace-123"})
    assert echoed.headers["X-Request-Id"] == "trace-123"
    assert tenant.client.get("/nowhere").headers["X-Request-Id"]


def test_health_and_readiness_need_no_key(inprocess_api: InProcessApi) -> None:
    anonymous = inprocess_api.client()
    assert anonymous.get("/healthz").json()["data"]["status"] == "ok"
    assert anonymous.get("/readyz").json()["data"]["database"] == "ok"


@pytest.mark.parametrize("header", [None, "Bearer", "Bearer grv_not-a-real-key", "Basic abc"])
def test_missing_or_bad_credentials_answer_401_with_challenge(
    inprocess_api: InProcessApi, header: str | None
) -> None:
    headers = {"Authorization": header} if header else {}
    response = inprocess_api.client().get("/v1/memories", headers=headers)
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert error_of(response)["code"] == "unauthorized"


@pytest.mark.parametrize("length, status", [(6000, 201), (6001, 400)])
def test_content_length_limit_is_6000_characters(tenant: Tenant, length: int, status: int) -> None:
    response = tenant.client.post("/v1/memories", {"content": "x" * length, "kind": "fact"})
    assert response.status_code == status, response.text


def test_content_is_trimmed_and_blank_content_is_rejected(tenant: Tenant) -> None:
    assert tenant.client.save("  padded  \n")["content"] == "padded"
    padded_limit = tenant.client.post(
        "/v1/memories", {"content": " " + "y" * 6000 + " ", "kind": "fact"}
    )
    assert padded_limit.status_code == 201
    blank = tenant.client.post("/v1/memories", {"content": "   ", "kind": "fact"})
    assert blank.status_code == 400
    assert error_of(blank)["details"] == [
        {"field": "content", "message": "content must not be empty"}
    ]


@pytest.mark.parametrize("days, status", [(0, 400), (1, 201), (365, 201), (366, 400)])
def test_retention_days_range_is_1_to_365(tenant: Tenant, days: int, status: int) -> None:
    response = tenant.client.post(
        "/v1/memories", {"content": "temp", "kind": "fact", "retentionDays": days}
    )
    assert response.status_code == status, response.text
    if status == 400:
        assert error_of(response)["details"][0]["field"] == "retentionDays"


@pytest.mark.parametrize("limit, status", [(100, 200), (101, 400), (0, 400)])
def test_list_limit_is_at_most_100(tenant: Tenant, limit: int, status: int) -> None:
    assert tenant.client.get(f"/v1/memories?limit={limit}").status_code == status


@pytest.mark.parametrize(
    "field, value, limit",
    [("sourceAgent", "a", 100), ("sourceRef", "r", 500)],
)
def test_provenance_length_limits(tenant: Tenant, field: str, value: str, limit: int) -> None:
    ok = tenant.client.post(
        "/v1/memories", {"content": "c", "kind": "fact", "provenance": {field: value * limit}}
    )
    assert ok.status_code == 201
    assert ok.json()["data"]["provenance"][field] == value * limit
    too_long = tenant.client.post(
        "/v1/memories", {"content": "c", "kind": "fact", "provenance": {field: value * (limit + 1)}}
    )
    assert too_long.status_code == 400
    assert error_of(too_long)["details"][0]["field"] == f"provenance.{field}"


@pytest.mark.parametrize(
    "path, body",
    [
        ("/v1/memories", {"content": "c", "kind": "fact", "accountId": str(uuid.uuid4())}),
        ("/v1/memories", {"content": "c", "kind": "fact", "ownerId": "me"}),
        ("/v1/memories/search", {"query": "q", "surprise": 1}),
        ("/v1/recall", {"query": "q", "accountId": "x"}),
        ("/v1/memories/forget", {"ids": [str(uuid.uuid4())], "extra": True}),
        ("/v1/notebooks", {"name": "n", "accountId": "x"}),
    ],
)
def test_unknown_fields_are_rejected_by_name(
    tenant: Tenant, path: str, body: dict[str, object]
) -> None:
    response = tenant.client.post(path, body)
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "validation_error"
    unknown = [k for k in body if k not in {"content", "kind", "query", "ids", "name"}]
    assert error["details"] == [{"field": unknown[0], "message": "unknown field"}]


def test_unknown_field_in_patch_is_rejected(tenant: Tenant) -> None:
    note = tenant.client.save()
    response = tenant.client.patch(f"/v1/memories/{note['id']}", {"accountId": "x"})
    assert response.status_code == 400
    assert error_of(response)["details"] == [{"field": "accountId", "message": "unknown field"}]


def test_unknown_query_parameter_is_rejected(tenant: Tenant) -> None:
    response = tenant.client.get("/v1/memories?owner=someone")
    assert response.status_code == 400
    assert error_of(response)["details"][0]["field"] == "owner"


@pytest.mark.parametrize("raw", ["{", "[1, 2]", "not json", '"a string"'])
def test_malformed_json_answers_400(tenant: Tenant, raw: str) -> None:
    response = tenant.client.session.post(
        tenant.client.base + "/v1/memories",
        data=raw,
        headers=tenant.client.headers({"Content-Type": "application/json"}),
        timeout=10,
    )
    assert response.status_code == 400
    assert error_of(response)["code"] in {"invalid_json", "validation_error"}


@pytest.mark.parametrize("raw", ["[" * 30_000, '{"a":' * 6_000 + "1" + "}" * 6_000])
def test_deeply_nested_json_answers_400_not_500(tenant: Tenant, raw: str) -> None:
    for path in ("/v1/memories", "/v1/tools/remember"):
        response = tenant.client.session.post(
            tenant.client.base + path,
            data=raw,
            headers=tenant.client.headers({"Content-Type": "application/json"}),
            timeout=10,
        )
        assert response.status_code == 400, (path, response.text)
        assert error_of(response)["code"] == "invalid_json"


def test_wrong_content_type_answers_415(tenant: Tenant) -> None:
    response = tenant.client.session.post(
        tenant.client.base + "/v1/memories",
        data=json.dumps({"content": "c", "kind": "fact"}),
        headers=tenant.client.headers({"Content-Type": "text/plain"}),
        timeout=10,
    )
    assert response.status_code == 415
    assert error_of(response)["code"] == "unsupported_media_type"


def test_body_over_64_kib_answers_413_and_stores_nothing(
    database: embedded.EmbeddedDatabase, api_url: str
) -> None:
    tenant = new_tenant(database, api_url)  # over a real socket, which must see the 413
    body = json.dumps(
        {"content": "x", "kind": "fact", "provenance": {"sourceRef": "y" * (64 * 1024)}}
    )
    response = tenant.client.session.post(
        tenant.client.base + "/v1/memories",
        data=body,
        headers=tenant.client.headers({"Content-Type": "application/json"}),
        timeout=10,
    )
    assert response.status_code == 413
    assert error_of(response)["code"] == "payload_too_large"
    assert tenant.client.get("/v1/memories").json()["data"]["items"] == []


def test_body_of_exactly_64_kib_is_read(tenant: Tenant) -> None:
    prefix = '{"content": "x", "kind": "fact", "provenance": {"sourceRef": "'
    padding = " " * (64 * 1024 - len(prefix) - len('"}}'))
    body = prefix + '"}}' + padding  # JSON allows trailing whitespace
    assert len(body.encode()) == 64 * 1024
    response = tenant.client.session.post(
        tenant.client.base + "/v1/memories",
        data=body,
        headers=tenant.client.headers({"Content-Type": "application/json"}),
        timeout=10,
    )
    assert response.status_code == 201, response.text


def test_unknown_route_and_method_use_the_envelope(tenant: Tenant) -> None:
    missing = tenant.client.get("/v1/nothing-here")
    assert missing.status_code == 404
    assert error_of(missing)["code"] == "not_found"
    wrong_method = tenant.client.session.delete(
        tenant.client.base + "/v1/memories", headers=tenant.client.headers(), timeout=10
    )
    assert wrong_method.status_code == 405
    assert error_of(wrong_method)["code"] == "method_not_allowed"


def test_unknown_or_malformed_note_id_is_404(tenant: Tenant) -> None:
    assert tenant.client.get(f"/v1/memories/{uuid.uuid4()}").status_code == 404
    assert tenant.client.get("/v1/memories/not-a-uuid").status_code == 404
    assert tenant.client.patch(f"/v1/memories/{uuid.uuid4()}", {"content": "c"}).status_code == 404


def test_unknown_notebook_is_404_not_403(tenant: Tenant) -> None:
    response = tenant.client.post(
        "/v1/memories", {"content": "c", "kind": "fact", "projectId": str(uuid.uuid4())}
    )
    assert response.status_code == 404
    assert error_of(response)["code"] == "not_found"


def test_kind_must_be_one_of_the_five(tenant: Tenant) -> None:
    for kind in ("preference", "fact", "decision", "solution"):
        assert tenant.client.post("/v1/memories", {"content": "c", "kind": kind}).status_code == 201
    assert (
        tenant.client.post("/v1/memories", {"content": "c", "kind": "opinion"}).status_code == 400
    )
    assert tenant.client.post("/v1/memories", {"content": "c"}).status_code == 400


def test_search_query_limits(tenant: Tenant) -> None:
    client: Client = tenant.client
    assert client.post("/v1/memories/search", {"query": ""}).status_code == 400
    assert client.post("/v1/memories/search", {"query": "q" * 1000}).status_code == 200
    assert client.post("/v1/memories/search", {"query": "q" * 1001}).status_code == 400
    assert client.post("/v1/memories/search", {"query": "q", "limit": 50}).status_code == 200
    assert client.post("/v1/memories/search", {"query": "q", "limit": 51}).status_code == 400


def test_recall_limits(tenant: Tenant) -> None:
    client = tenant.client
    assert client.post("/v1/recall", {"limit": 20}).status_code == 200
    assert client.post("/v1/recall", {"limit": 21}).status_code == 400
    assert client.post("/v1/recall", {"maxChars": 20000}).status_code == 200
    assert client.post("/v1/recall", {"maxChars": 20001}).status_code == 400


@pytest.mark.parametrize("text", ["a\x00b", "a\udc00b"], ids=["nul", "lone-surrogate"])
def test_text_postgresql_cannot_store_is_a_400_envelope_not_a_500(
    tenant: Tenant, text: str
) -> None:
    client = tenant.client
    for path, body, field in [
        ("/v1/memories", {"content": text, "kind": "fact"}, "content"),
        ("/v1/memories/search", {"query": text}, "query"),
        ("/v1/recall", {"taskId": text}, "taskId"),
        ("/v1/notebooks", {"name": text}, "name"),
        ("/v1/tools/list_memories", {"sourceAgent": text}, "sourceAgent"),
    ]:
        response = client.post(path, body)
        assert response.status_code == 400, (path, response.text)
        assert error_of(response)["details"][0]["field"] == field
    listed = client.get("/v1/memories", params={"sourceAgent": "a\x00b"})
    assert listed.status_code == 400
