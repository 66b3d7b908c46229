"""Every failure becomes the standard envelope, mapped once, here at the edge."""

from __future__ import annotations

import logging
from typing import Any

import falcon
from pydantic import ValidationError

from grove_auth.errors import Unauthorized
from grove_contracts.errors import (
    ERROR_STATUS,
    FieldError,
    GroveError,
    error_envelope,
    validation_details,
)
from grove_db.errors import DatabaseError
from grove_memory.errors import InvalidRequest

log = logging.getLogger("grove.api")


class ApiError(GroveError):
    """An error found by the HTTP layer itself (bad body, wrong media type, ...)."""

    def __init__(self, code: str, message: str, details: list[FieldError] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.status = ERROR_STATUS[code]
        self.details = details


FALCON_CODES = {
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
    429: "rate_limited",
    503: "unavailable",
    400: "validation_error",
}


def install(app: falcon.App[falcon.Request, falcon.Response]) -> None:
    """Register the handlers that turn every exception into an error envelope."""
    app.add_error_handler(Exception, _unexpected)
    app.add_error_handler(falcon.HTTPError, _falcon_error)
    app.add_error_handler(ValidationError, _validation)
    # Every library's errors (and ApiError) derive from GroveError, which carries the
    # code, status and message; Falcon picks the handler of the most specific class, so
    # a 401 also gets its WWW-Authenticate header.
    app.add_error_handler(GroveError, _domain)
    app.add_error_handler(Unauthorized, _auth)


def _respond(
    req: falcon.Request,
    resp: falcon.Response,
    status: int,
    code: str,
    message: str,
    details: list[FieldError] | None = None,
) -> None:
    resp.status = status
    resp.media = error_envelope(code, message, str(req.context.get("request_id", "-")), details)


def _domain(
    req: falcon.Request, resp: falcon.Response, ex: GroveError, params: dict[str, Any]
) -> None:
    details = getattr(ex, "details", None)
    if details and isinstance(details[0], dict):
        details = [FieldError(**d) for d in details]
    if isinstance(ex, InvalidRequest):
        details = [FieldError(field=ex.field, message=ex.detail)]
    if isinstance(ex, DatabaseError) and ex.status == 503:
        # A full pool or a restarting database: worth a retry soon (as grove-mcp says).
        resp.set_header("Retry-After", "1")
    _respond(req, resp, ex.status, ex.code, ex.message, details)


def _auth(
    req: falcon.Request, resp: falcon.Response, ex: Unauthorized, params: dict[str, Any]
) -> None:
    resp.set_header("WWW-Authenticate", 'Bearer realm="grove"')
    _respond(req, resp, ex.status, ex.code, ex.message)


def _validation(
    req: falcon.Request, resp: falcon.Response, ex: ValidationError, params: dict[str, Any]
) -> None:
    _respond(req, resp, 400, "validation_error", "the request is not valid", validation_details(ex))


def _falcon_error(
    req: falcon.Request, resp: falcon.Response, ex: falcon.HTTPError, params: dict[str, Any]
) -> None:
    for name, value in dict(ex.headers or {}).items():
        resp.set_header(name, value)
    status = ex.status_code
    code = FALCON_CODES.get(status, "internal" if status >= 500 else "validation_error")
    _respond(req, resp, status, code, ex.title or code)


def _unexpected(
    req: falcon.Request, resp: falcon.Response, ex: Exception, params: dict[str, Any]
) -> None:
    # The log has the type and stack frames, never the message: it may quote note content.
    log.error("unhandled_error", exc_info=ex, extra={"fields": {"route": req.uri_template}})
    _respond(req, resp, 500, "internal", "internal error; quote the request ID when reporting it")
