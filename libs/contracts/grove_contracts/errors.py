"""Stable error codes, their HTTP statuses, and the error envelope."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ValidationError

#: Every error code a Grove service may answer, with its HTTP status.
ERROR_STATUS: dict[str, int] = {
    "validation_error": 400,
    "invalid_json": 400,
    "invalid_cursor": 400,
    "unauthorized": 401,
    "forbidden": 403,
    "owner_session_required": 403,
    "connection_required": 403,
    "identity_not_provisioned": 403,
    "credential_not_allowed": 403,
    "authority_protected": 403,
    "quota_exceeded": 403,
    "connection_conflict": 409,
    "auth_provider_unavailable": 503,
    "not_found": 404,
    "method_not_allowed": 405,
    "version_conflict": 409,
    "passage_read_only": 409,
    "file_unreadable": 422,
    "conflict": 409,
    "subtree_changed": 409,
    "target_archived": 409,
    "notebook_cycle": 409,
    "notebook_name_taken": 409,
    "move_refused": 409,
    "idempotency_conflict": 409,
    "automatic_capture_paused": 409,
    "context_unavailable": 409,
    "turn_in_progress": 409,
    "generator_changed": 409,
    "conversation_full": 409,
    "import_in_progress": 409,
    "import_refused": 400,
    "proposal_stale": 409,
    "proposal_undone": 409,
    "proposal_not_applied": 409,
    "not_undoable": 409,
    "proposal_out_of_scope": 403,
    "last_admin": 409,
    "gone": 410,
    "request_timeout": 408,
    "payload_too_large": 413,
    "unsupported_media_type": 415,
    "unknown_tool": 404,
    "too_many_requests": 429,
    "rate_limited": 429,
    "internal": 500,
    "unsafe_role": 500,
    "unavailable": 503,
    "database_timeout": 503,
    "inference_unavailable": 503,
    "inference_timeout": 504,
    "client_closed_request": 499,
}


class GroveError(Exception):
    """The request could not be completed."""

    # The root of every library's errors (grove_db, grove_auth, grove_memory): each
    # carries a stable code from ERROR_STATUS, its HTTP status and a message for people,
    # so a service maps this one class at its edge. It lives here because grove_contracts
    # is the library every other one imports and it imports none of them.
    code = "internal"
    status = 500

    def __init__(self, message: str | None = None) -> None:
        # The class's docstring is its default message.
        self.message = message or " ".join(str(self.__doc__).split())
        super().__init__(self.message)


class FieldError(BaseModel):
    """One invalid field of a request."""

    field: str
    message: str


class ErrorBody(BaseModel):
    """The ``error`` member of a failure envelope."""

    code: str
    message: str
    requestId: str
    details: list[FieldError] | None = None


class ErrorEnvelope(BaseModel):
    """Every failure: ``{success: false, error: {code, message, requestId, details?}}``."""

    success: Literal[False]
    error: ErrorBody


def error_envelope(
    code: str, message: str, request_id: str, details: list[FieldError] | None = None
) -> dict[str, Any]:
    """Build ``{success: false, error: {...}}`` (``details`` only when present)."""
    body = ErrorBody(code=code, message=message, requestId=request_id, details=details)
    return {"success": False, "error": body.model_dump(exclude_none=True)}


def success_envelope(data: Any) -> dict[str, Any]:
    """Build ``{success: true, data}``."""
    return {"success": True, "data": data}


def validation_details(ex: ValidationError) -> list[FieldError]:
    """Pydantic errors as ``[{field, message}]``; unknown fields are named as such."""
    details = []
    for error in ex.errors(include_url=False):
        field = ".".join(str(part) for part in error["loc"])
        message = str(error["msg"]).removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "unknown field"
        elif not field and ": " in message:
            # Model-level checks say "field: message" (see grove_contracts).
            field, _, message = message.partition(": ")
        details.append(FieldError(field=field or "body", message=message))
    return details


def settings_problems(ex: ValidationError) -> str:
    """A service's invalid settings as one line naming the environment variables."""
    problems = []
    for error in ex.errors(include_url=False):
        name = "_".join(str(part) for part in error["loc"]).upper()
        variable = name if name.startswith(("GROVE_", "OPENAI_")) else f"GROVE_{name}"
        message = str(error["msg"]).removeprefix("Value error, ")
        problems.append(f"{variable}: {message}" if name else message)
    return "; ".join(problems)
