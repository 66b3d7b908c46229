"""Reading request bodies and query strings into contract models, with limits."""

from __future__ import annotations

import json
from typing import TypeVar
from uuid import UUID

import falcon
from pydantic import BaseModel

from grove_api.errors import ApiError

M = TypeVar("M", bound=BaseModel)


def read_json(req: falcon.Request, model: type[M], max_bytes: int) -> M:
    """Parse a JSON object body into ``model`` (415, 413, 400 on the way)."""
    media_type = (req.content_type or "").split(";")[0].strip().lower()
    if media_type != "application/json":
        raise ApiError("unsupported_media_type", "send the body as application/json")
    if req.content_length is not None and req.content_length > max_bytes:
        raise ApiError("payload_too_large", f"the body exceeds {max_bytes} bytes")
    raw = req.bounded_stream.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise ApiError("payload_too_large", f"the body exceeds {max_bytes} bytes")
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as ex:
        raise ApiError("invalid_json", "the body is not valid JSON") from ex
    if not isinstance(data, dict):
        raise ApiError("validation_error", "the body must be a JSON object")
    return model.model_validate(data)


def read_query(req: falcon.Request, model: type[M]) -> M:
    """Validate the query string against ``model``; unknown parameters are errors."""
    return model.model_validate(dict(req.params))


def operation_id(req: falcon.Request, body_value: UUID | None) -> UUID | None:
    """The operation ID from the body or the ``Idempotency-Key`` header (must agree)."""
    header = req.get_header("Idempotency-Key")
    if header is None:
        return body_value
    try:
        from_header = UUID(header)
    except ValueError as ex:
        raise ApiError("validation_error", "Idempotency-Key must be a UUID") from ex
    if body_value is not None and body_value != from_header:
        raise ApiError(
            "validation_error", "Idempotency-Key and operationId differ; send one or make them equal"
        )
    return from_header


