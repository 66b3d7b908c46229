"""The OpenAPI table and the app agree, and the document is complete and consistent.

``create_app`` registers the routes of ``grove_api.routes.ROUTES``, the table the
document is built from; ``test_every_served_route_is_in_the_openapi_table`` still guards
against a route added some other way, and
``test_each_responder_reads_the_body_and_query_its_operation_documents`` against a table
entry that says one model while its resource reads another.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import falcon
import falcon.testing
import pytest
import schemathesis
from psycopg_pool import ConnectionPool
from pydantic import ValidationError

from grove_api.app import Deps, create_app, wire
from grove_api.openapi import document
from grove_api.routes import OPERATIONS, PUBLIC_PATHS, ROUTES
from grove_api.routing import Operation, Route, served
from grove_api.settings import ApiSettings
from grove_api.wiring import Wiring
from grove_contracts.notes import ListQuery

SECRET = "unit-test-secret-unit-test-secret-0123"
METHODS = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}
#: A body field and a query parameter no request model has (every one refuses them).
PROBE = "probeNoModelHas"


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> ApiSettings:
    """Every optional route switched on."""
    return ApiSettings(
        database_url="postgresql://unused/grove",
        secret_key=SECRET,  # type: ignore[arg-type]
        dev_auth=True,
        oidc_issuer="http://127.0.0.1:8080/dev-issuer",
        dev_issuer_key=str(tmp_path_factory.mktemp("dev") / "dev-issuer.pem"),
        oidc_audience="grove-api",
        website_origin="http://127.0.0.1:8083",
        embedding_profile="disabled",
    )


@pytest.fixture(scope="module")
def deps() -> Deps:
    """Collaborators of the api; the pool is never opened."""
    pool = ConnectionPool("postgresql://unused/grove", open=False)
    return Deps(pool=pool, key_secret=b"k", cursor_secret=b"c", share_secret=b"s", embedder=None)


@pytest.fixture(scope="module")
def app(settings: ApiSettings, deps: Deps) -> falcon.App[falcon.Request, falcon.Response]:
    """The api with every optional route switched on."""
    return create_app(settings, deps)


@pytest.fixture(scope="module")
def wiring(settings: ApiSettings, deps: Deps) -> Wiring:
    """What ``create_app`` builds the resources from."""
    return wire(settings, deps)


def test_every_served_route_is_in_the_openapi_table(
    app: falcon.App[falcon.Request, falcon.Response],
) -> None:
    routes = served(app)
    table = {(op.method, op.path) for op in OPERATIONS}
    missing = sorted(routes - table)
    assert not missing, (
        "routes registered in create_app but missing from grove_api.routes.OPERATIONS"
        f" (add an Operation for each, as the comment above OPERATIONS says): {missing}"
    )
    stale = sorted(table - routes)
    assert not stale, f"OPERATIONS lists routes that create_app does not serve: {stale}"


@pytest.mark.parametrize("route", ROUTES, ids=lambda route: route.path)
def test_each_responder_reads_the_body_and_query_its_operation_documents(
    route: Route, wiring: Wiring
) -> None:
    resource = route.resource(wiring)
    for op in route.operations:
        documented = {model.__name__ for model in _models(op.body) + _models(op.query)}
        read = _model_read(resource, op)
        where = f"{op.method} {op.path}"
        if documented:
            assert read in documented, f"{where} reads {read}, documents {sorted(documented)}"
        else:
            assert read is None, f"{where} reads {read}, documents neither body nor query"


def _models(models: Any) -> tuple[type, ...]:
    """A body or query of the table as a tuple of models (a tool body is several)."""
    if models is None:
        return ()
    return models if isinstance(models, tuple) else (models,)


def _model_read(resource: object, op: Operation) -> str | None:
    """The model that refuses the probe in the responder of ``op`` (None: none does).

    The request carries the probe as a JSON body field and as a query parameter, so
    whichever of the two the responder reads first refuses it; responders read before
    they do anything else. One that reads neither goes on to fail on the fake principal
    or the closed pool, or answers; either way nothing refused the probe.
    """
    params: dict[str, Any] = {
        name: uuid.uuid4() if converter == "uuid" else op.path_values[name][0]
        for name, converter in re.findall(r"{(\w+)(?::(\w+))?}", op.path)
    }
    req = falcon.testing.create_req(
        method=op.method,
        query_string=f"{PROBE}=1",
        headers={"Content-Type": "application/json"},
        body=json.dumps({PROBE: 1}),
    )
    req.context.principal = object()
    try:
        getattr(resource, f"on_{op.method.lower()}")(req, falcon.Response(), **params)
    except ValidationError as ex:
        return ex.title
    except Exception:  # past reading: the fake principal or the closed pool
        return None
    return None


def test_the_document_is_valid_openapi_3_1() -> None:
    doc = document(OPERATIONS)
    assert doc["openapi"] == "3.1.0"
    schemathesis.openapi.from_dict(doc).validate()  # the OpenAPI 3.1 meta-schema


def test_each_operation_is_listed_once() -> None:
    keys = [(op.method, op.path) for op in OPERATIONS]
    assert len(keys) == len(set(keys))


def test_every_reference_resolves_to_a_component() -> None:
    doc = document(OPERATIONS)
    schemas = doc["components"]["schemas"]
    refs = set(re.findall(r'"\$ref": "#/components/schemas/([^"]+)"', json.dumps(doc)))
    assert refs <= set(schemas), refs - set(schemas)


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: f"{op.method} {op.path}")
def test_operation_documents_success_errors_and_security(op: Operation) -> None:
    path = re.sub(r"{(\w+)(?::\w+)?}", r"{\1}", op.path)
    documented = document(OPERATIONS)["paths"][path][op.method.lower()]
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
    get_memory = document(OPERATIONS)["paths"]["/v1/memories/{memory_id}"]["get"]
    schema = get_memory["responses"]["200"]["content"]["application/json"]["schema"]
    assert schema["required"] == ["success", "data"]
    assert schema["properties"]["data"] == {"$ref": "#/components/schemas/Memory"}


def test_query_models_become_query_parameters() -> None:
    listing = document(OPERATIONS)["paths"]["/v1/memories"]["get"]
    query = {p["name"]: p for p in listing["parameters"] if p["in"] == "query"}
    assert {"kind", "projectId", "cursor", "limit", "sort"} <= set(query)
    assert query["limit"]["schema"]["maximum"] == 100
    assert not any(p["required"] for p in query.values())
    # The model's field descriptions document the parameters.
    assert query["limit"]["description"] == ListQuery.model_fields["limit"].description
    assert all(p["description"] for p in query.values())


def test_the_document_is_served_without_credentials(
    app: falcon.App[falcon.Request, falcon.Response],
) -> None:
    client = falcon.testing.TestClient(app)
    response = client.simulate_get("/v1/openapi.json")
    assert response.status_code == 200
    served_doc: dict[str, Any] = response.json
    assert served_doc["openapi"].startswith("3.1")
    assert set(served_doc["paths"]) == set(document(OPERATIONS)["paths"])


def test_public_routes_need_no_credentials_and_the_others_do(
    app: falcon.App[falcon.Request, falcon.Response],
) -> None:
    assert all("{" not in path for path in PUBLIC_PATHS)  # compared with request paths
    client = falcon.testing.TestClient(app)
    assert client.simulate_get("/healthz").status_code == 200
    assert client.simulate_get("/.well-known/oauth-protected-resource/mcp").status_code == 200
    assert client.simulate_get("/v1/tools").status_code == 401


def test_links_lead_from_created_resources_to_operations_on_them() -> None:
    doc = document(OPERATIONS)
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
