"""Reading request bodies and query strings into contract models, with limits."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, TypeVar
from uuid import UUID

import falcon
from pydantic import BaseModel

from grove_api.errors import ApiError
from grove_memory.portability.restore_checks import RestoreError

M = TypeVar("M", bound=BaseModel)

#: How far past the body limit we keep reading before answering 413.
DRAIN_FACTOR = 16


def read_json(req: falcon.Request, model: type[M], max_bytes: int) -> M:
    """Parse a JSON object body into ``model`` (415, 413, 400 on the way)."""
    media_type = (req.content_type or "").split(";")[0].strip().lower()
    if media_type != "application/json":
        raise ApiError("unsupported_media_type", "send the body as application/json")
    raw = req.bounded_stream.read(max_bytes + 1)
    if len(raw) > max_bytes:
        discard(req.bounded_stream, max_bytes * DRAIN_FACTOR)
        raise ApiError("payload_too_large", f"the body exceeds {max_bytes} bytes")
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as ex:
        raise ApiError("invalid_json", "the body is not valid JSON") from ex
    except RecursionError as ex:
        raise ApiError("invalid_json", "the body is nested too deeply") from ex
    if not isinstance(data, dict):
        raise ApiError("validation_error", "the body must be a JSON object")
    try:
        return model.model_validate(data)
    except RecursionError as ex:
        raise ApiError("invalid_json", "the body is nested too deeply") from ex


def discard(stream: Any, budget: int) -> None:
    """Read (and drop) up to ``budget`` more bytes of an oversized body, so the client
    can see the 413.

    A server that answers before the client has finished sending makes most clients
    report a reset connection instead of the answer. Beyond the budget we stop reading
    and let the connection close.
    """
    remaining = budget
    while remaining > 0:
        chunk = stream.read(min(remaining, 64 * 1024))
        if not chunk:
            return
        remaining -= len(chunk)


def socket_timeout(req: falcon.Request, seconds: float) -> None:
    """Give each read of the request and each write of the response ``seconds`` on the
    client's socket (gunicorn's), so a client that stops costs a thread for that long."""
    connection = req.env.get("gunicorn.socket")
    if connection is not None:
        connection.settimeout(seconds)


def incoming(req: falcon.Request, timeout: float) -> Any:
    """The request body as it arrives, each piece within ``timeout`` seconds. A chunked
    body has no length: the server's own stream ends with it (gunicorn's does)."""
    socket_timeout(req, timeout)
    return req.bounded_stream if req.content_length is not None else req.stream


def read_lines(
    req: falcon.Request, max_line_bytes: int, media_type: str, timeout: float
) -> Iterator[bytes]:
    """The body's lines as they arrive, each piece within ``timeout`` seconds (415 unless
    it is ``media_type``); a line over ``max_line_bytes`` (its newline aside) stops them
    with ``RestoreError`` naming it."""
    sent = (req.content_type or "").split(";")[0].strip().lower()
    if sent != media_type:
        raise ApiError("unsupported_media_type", f"send the body as {media_type}")
    return _lines(incoming(req, timeout), max_line_bytes)


#: How much of a body of lines is read at a time.
CHUNK_BYTES = 64 * 1024


def _lines(stream: Any, limit: int) -> Iterator[bytes]:
    """Split the stream into lines, holding at most one line and one chunk. (Falcon's
    ``BoundedStream.readline(size)`` stops early after a few lines, so it is not used.)"""
    number, pending = 0, b""
    while True:
        chunk = stream.read(CHUNK_BYTES)
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for line in complete:
            number += 1
            if len(line.rstrip(b"\r")) > limit:
                raise RestoreError(f"the line is longer than {limit} bytes", number)
            yield line + b"\n"
        if len(pending) > limit + 1:
            raise RestoreError(f"the line is longer than {limit} bytes", number + 1)
        if not chunk:
            if pending:
                yield pending
            return


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
            "validation_error",
            "Idempotency-Key and operationId differ; send one or make them equal",
        )
    return from_header
