"""``GET /v1/openapi.json``: an OpenAPI 3.1 document of every REST route, from the contracts.

This module only builds the document. The routes are declared in their area modules
(``notes``, ``files``, ``owner``, ...) and joined in ``grove_api.routes.ROUTES``, the one
table of what the api serves: ``create_app`` registers each route's resource from it and
``document`` turns its operations into OpenAPI with the JSON Schemas of the
``grove_contracts`` models, so a field added to a contract shows up here without further
edits. Tests fail when the app serves anything else than the table, or a responder reads
another body or query model than its operation documents.
"""

from __future__ import annotations

import re
from functools import cached_property
from importlib import metadata
from typing import Any

import falcon
from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from grove_api.routing import Operation, Payload, Route
from grove_api.settings import ApiSettings
from grove_contracts.errors import ErrorEnvelope

OPENAPI_VERSION = "3.1.0"
REF_TEMPLATE = "#/components/schemas/{model}"


class OpenApi:
    """``GET /v1/openapi.json``: the document of the operations this api serves (public).

    A route registered only under some settings (the dev issuer's keys) is documented
    only where served. Built on the first request, so starting a worker stays cheap.
    """

    def __init__(self, settings: ApiSettings, routes: tuple[Route, ...]) -> None:
        self._settings = settings
        self._routes = routes

    @cached_property
    def document(self) -> dict[str, Any]:
        """The document, restricted to the served operations."""
        return document(
            tuple(
                op
                for route in self._routes
                if route.when(self._settings)
                for op in route.operations
            )
        )

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.media = self.document


ERROR_TEXT = {
    400: "The request is not valid (`validation_error`, `invalid_json`, `invalid_cursor`)",
    401: "Missing, invalid or revoked credentials (`unauthorized`)",
    403: "The credential may not do this (`forbidden`, `connection_required`,"
    " `owner_session_required`)",
    404: "No such route, resource or tool (`not_found`, `unknown_tool`)",
    409: "The request conflicts with the current state (`version_conflict`, ...)",
    410: "What the operation saved has since been deleted (`gone`)",
    413: "The body is too large (`payload_too_large`)",
    414: "The request line (path and query string) is too long; answered by the HTTP server",
    415: "The body is not `application/json` (`unsupported_media_type`)",
    429: "Over a rate or concurrency limit (`rate_limited`); see `Retry-After`",
    499: "The client closed the request before it was answered",
    500: "An unexpected error (`internal`); quote the request ID",
    503: "A dependency is unavailable (`unavailable`, `database_timeout`, ...)",
    504: "The answering service did not answer in time (`inference_timeout`)",
}


#: Statuses answered by gunicorn itself, before the app: an HTML page, not an envelope.
SERVER_ERRORS = {414: "text/html"}


RESPONSE_HEADERS = {
    401: {"WWW-Authenticate": {"schema": {"type": "string"}}},
    429: {"Retry-After": {"schema": {"type": "string"}}},
    503: {"Retry-After": {"schema": {"type": "string"}}},
}


CONVERTER = re.compile(r"{(\w+)(?::(\w+))?}")


def document(operations: tuple[Operation, ...]) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``operations``."""
    refs, schemas = _schemas(operations)
    paths: dict[str, dict[str, Any]] = {}
    for op in operations:
        path = CONVERTER.sub(r"{\1}", op.path)
        paths.setdefault(path, {})[op.method.lower()] = _operation(op, refs)
    for op in operations:
        links = _links(op, operations)
        if links:
            path = CONVERTER.sub(r"{\1}", op.path)
            paths[path][op.method.lower()]["responses"][str(op.status)]["links"] = links
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "Grove API",
            "version": metadata.version("grove"),
            "description": "Owner and agent REST of Grove. Every JSON answer is an envelope:"
            " `{success: true, data}` or `{success: false, error: {code, message, requestId,"
            " details?}}`.",
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "An API key (`grv_...`), a project key (`grvp_...`),"
                    " an agent's OAuth access token, or the account owner's session token.",
                }
            },
        },
    }


def _links(op: Operation, operations: tuple[Operation, ...]) -> dict[str, Any]:
    """Links from ``op``'s answer to the operations taking the parameters it creates."""
    links = {}
    for target in operations:
        names = {name for name, _ in CONVERTER.findall(target.path)}
        supplied = {
            name: f"$response.body#/data{pointer}"
            for name, pointer in op.creates.items()
            if name in names
        }
        if supplied and target is not op:
            links[_operation_id(target)] = {
                "operationId": _operation_id(target),
                "parameters": supplied,
            }
    return links


def _operation_id(op: Operation) -> str:
    segments = _segments(op)
    return "_".join([op.method.lower(), *re.split(r"\W+", "_".join(segments))])


def _segments(op: Operation) -> list[str]:
    return [s for s in CONVERTER.sub(r"\1", op.path).strip("/").split("/") if s != "v1"]


def _schemas(
    operations: tuple[Operation, ...],
) -> tuple[dict[Any, Any], dict[str, Any]]:
    """JSON Schemas of every contract model the operations use, one namespace."""
    wanted: dict[tuple[type[BaseModel], JsonSchemaMode], None] = {
        (ErrorEnvelope, "serialization"): None
    }
    for op in operations:
        for model in (*_models(op.query), *_models(op.body)):
            wanted[(model, "validation")] = None
        for model in _models(op.response):
            wanted[(model, "serialization")] = None
    refs, definitions = models_json_schema(list(wanted), ref_template=REF_TEMPLATE)
    return dict(refs), dict(definitions.get("$defs", {}))


def _models(payload: Payload | None) -> tuple[type[BaseModel], ...]:
    if payload is None or isinstance(payload, dict):
        return ()
    return tuple(dict.fromkeys(payload)) if isinstance(payload, tuple) else (payload,)


def _schema_of(payload: Payload, refs: dict[Any, Any], mode: JsonSchemaMode) -> dict[str, Any]:
    """A bare schema as is; one model's reference; ``anyOf`` several models."""
    if isinstance(payload, dict):
        return payload
    models = _models(payload)
    if len(models) == 1:
        return dict(refs[(models[0], mode)])
    return {"anyOf": [refs[(model, mode)] for model in models]}


def _operation(op: Operation, refs: dict[Any, Any]) -> dict[str, Any]:
    result: dict[str, Any] = {
        "operationId": _operation_id(op),
        "summary": op.summary,
        "tags": [_segments(op)[0].lstrip(".") or "service"],
        "parameters": _path_parameters(op) + _query_parameters(op),
        "responses": _responses(op, refs),
        "security": [] if op.auth == "none" else [{"bearer": []}],
    }
    description = [op.description] if op.description else []
    if op.auth == "owner":
        description.append(
            "Only the account owner's session may call this: API keys and agent tokens get"
            " 403 `owner_session_required`."
        )
    if description:
        result["description"] = " ".join(description)
    if op.body is not None:
        result["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": _schema_of(op.body, refs, "validation")}},
        }
    return result


def _path_parameters(op: Operation) -> list[dict[str, Any]]:
    parameters = []
    for name, converter in CONVERTER.findall(op.path):
        schema: dict[str, Any] = {"type": "string"}
        if converter == "uuid":
            schema["format"] = "uuid"
        if name in op.path_values:
            schema["enum"] = list(op.path_values[name])
        parameters.append({"name": name, "in": "path", "required": True, "schema": schema})
    return parameters


def _query_parameters(op: Operation) -> list[dict[str, Any]]:
    """The query model's fields as parameters; a field's description is the parameter's."""
    if op.query is None:
        return []
    schema = op.query.model_json_schema(ref_template=REF_TEMPLATE)
    required = set(schema.get("required", ()))
    parameters = []
    for name, prop in schema.get("properties", {}).items():
        parameter: dict[str, Any] = {"name": name, "in": "query", "required": name in required}
        if "description" in prop:
            parameter["description"] = prop["description"]
        parameter["schema"] = {k: v for k, v in prop.items() if k not in ("title", "description")}
        parameters.append(parameter)
    return parameters


def _responses(op: Operation, refs: dict[Any, Any]) -> dict[str, Any]:
    data = _schema_of(op.response, refs, "serialization")
    schema = (
        {
            "type": "object",
            "required": ["success", "data"],
            "properties": {"success": {"const": True}, "data": data},
        }
        if op.envelope
        else data
    )
    success = {"description": op.summary, "content": {op.media_type: {"schema": schema}}}
    responses: dict[str, Any] = {str(status): success for status in (op.status, *op.also)}
    for status in sorted(_error_statuses(op)):
        error: dict[str, Any] = {
            "description": ERROR_TEXT.get(status, "An error"),
            "content": {
                "application/json": {"schema": {"$ref": REF_TEMPLATE.format(model="ErrorEnvelope")}}
            },
        }
        if status in SERVER_ERRORS:
            error["content"] = {SERVER_ERRORS[status]: {"schema": {"type": "string"}}}
        if status in RESPONSE_HEADERS:
            error["headers"] = RESPONSE_HEADERS[status]
        responses[str(status)] = error
    return responses


def _error_statuses(op: Operation) -> set[int]:
    statuses = {500, *op.errors}
    if op.auth != "none":
        statuses |= {401, 403, 429, 503}
    if op.body is not None:
        statuses |= {400, 413, 415}
    if op.query is not None:
        statuses |= {400, 414}
    if CONVERTER.search(op.path):
        statuses.add(404)
    return statuses
