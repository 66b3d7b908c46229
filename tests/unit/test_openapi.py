"""The OpenAPI table and the app agree, and the document is complete and consistent.

``test_every_served_route_is_in_the_openapi_table`` is the guard for new routes: register
a route in ``create_app`` and this fails until ``grove_api.openapi.OPERATIONS`` has it.
"""

from __future__ import annotations

import json
import re
from typing import Any

import falcon
import falcon.testing
import pytest
import schemathesis
from psycopg_pool import ConnectionPool

from grove_api.app import Deps, create_app
from grove_api.openapi import OPERATIONS, Operation, document, served
from grove_api.settings import ApiSettings

SECRET = "unit-test-secret-unit-test-secret-0123"
METHODS = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> falcon.App:
    """The api with every optional route switched on; the pool is never opened."""
    settings = ApiSettings(
        database_url="postgresql://unused/grove",
        secret_key=SECRET,  # type: ignore[arg-type]
        dev_auth=True,
        oidc_issuer="http://127.0.0.1:8080/dev-issuer",
        dev_issuer_key=str(tmp_path_factory.mktemp("dev") / "dev-issuer.pem"),
        oidc_audience="grove-api",
        website_origin="http://127.0.0.1:8083",
        embedding_profile="disabled",
    )
    pool = ConnectionPool("postgresql://unused/grove", open=False)
    deps = Deps(pool=pool, key_secret=b"k", cursor_secret=b"c", share_secret=b"s", embedder=None)
    return create_app(settings, deps)


def test_every_served_route_is_in_the_openapi_table(app: falcon.App) -> None:
    routes = served(app)
    table = {(op.method, op.path) for op in OPERATIONS}
    missing = sorted(routes - table)
    assert not missing, (
        "routes registered in create_app but missing from grove_api.openapi.OPERATIONS"
        f" (add an Operation for each, as the comment above OPERATIONS says): {missing}"
    )
    stale = sorted(table - routes)
    assert not stale, f"OPERATIONS lists routes that create_app does not serve: {stale}"


def test_the_document_is_valid_openapi_3_1() -> None:
    doc = document()
    assert doc["openapi"] == "3.1.0"
    schemathesis.openapi.from_dict(doc).validate()  # the OpenAPI 3.1 meta-schema


def test_each_operation_is_listed_once() -> None:
    keys = [(op.method, op.path) for op in OPERATIONS]
    assert len(keys) == len(set(keys))


def test_every_reference_resolves_to_a_component() -> None:
    doc = document()
    schemas = doc["components"]["schemas"]
    refs = set(re.findall(r'"\$ref": "#/components/schemas/([^"]+)"', json.dumps(doc)))
    assert refs <= set(schemas), refs - set(schemas)


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: f"{op.method} {op.path}")
def test_operation_documents_success_errors_and_security(op: Operation) -> None:
    path = re.sub(r"{(\w+)(?::\w+)?}", r"{\1}", op.path)
    documented = document()["paths"][path][op.method.lower()]
    responses = documented["responses"]
    assert str(op.status) in responses
    assert "500" in responses
    error = responses["500"]["content"]["application/json"]["schema"]
    assert error == {"$ref": "#/components/schemas/ErrorEnvelope"}
    if op.auth == "none":
        assert documented["security"] == []
    else:
        assert documented["security"] == [{"bearer": []}]
        assert {"401", "429"} <= set(responses)
    if op.auth == "owner":
        assert "403" in responses
        assert "owner_session_required" in documented["description"]
    if op.body is not None:
        assert {"400", "413", "415"} <= set(responses)
        assert documented["requestBody"]["content"]["application/json"]["schema"]
    names = {p["name"] for p in documented["parameters"] if p["in"] == "path"}
    assert names == set(re.findall(r"{(\w+)", op.path))


def test_success_envelope_wraps_data_of_the_contract_model() -> None:
    get_memory = document()["paths"]["/v1/memories/{memory_id}"]["get"]
    schema = get_memory["responses"]["200"]["content"]["application/json"]["schema"]
    assert schema["required"] == ["success", "data"]
    assert schema["properties"]["data"] == {"$ref": "#/components/schemas/Memory"}


def test_query_models_become_query_parameters() -> None:
    listing = document()["paths"]["/v1/memories"]["get"]
    query = {p["name"]: p for p in listing["parameters"] if p["in"] == "query"}
    assert {"kind", "projectId", "cursor", "limit", "sort"} <= set(query)
    assert query["limit"]["schema"]["maximum"] == 100
    assert not any(p["required"] for p in query.values())


def test_the_document_is_served_without_credentials(app: falcon.App) -> None:
    client = falcon.testing.TestClient(app)
    response = client.simulate_get("/v1/openapi.json")
    assert response.status_code == 200
    served_doc: dict[str, Any] = response.json
    assert served_doc["openapi"].startswith("3.1")
    assert set(served_doc["paths"]) == set(document()["paths"])


def test_links_lead_from_created_resources_to_operations_on_them() -> None:
    doc = document()
    operation_ids = {
        operation["operationId"]
        for path in doc["paths"].values()
        for method, operation in path.items()
        if method in METHODS
    }
    created = doc["paths"]["/v1/memories"]["post"]["responses"]["201"]["links"]
    assert created["get_memories_memory_id"]["parameters"] == {
        "memory_id": "$response.body#/data/id"
    }
    for path in doc["paths"].values():
        for operation in path.values():
            for response in operation["responses"].values():
                for link in response.get("links", {}).values():
                    assert link["operationId"] in operation_ids
