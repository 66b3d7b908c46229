"""Errors of the memory service, each with a stable code and an HTTP status."""

from __future__ import annotations

from grove_contracts.errors import GroveError


class ServiceError(GroveError):
    """The memory service could not complete the request."""

    code = "internal"
    status = 500


class NotFound(ServiceError):
    """No such note or notebook."""

    code = "not_found"
    status = 404


class Forbidden(ServiceError):
    """This credential lacks the capability for that operation."""

    code = "forbidden"
    status = 403


class VersionConflict(ServiceError):
    """The note changed since the version you read; read it again and retry."""

    code = "version_conflict"
    status = 409


class PassageReadOnly(ServiceError):
    """This note is a passage of an uploaded file: it changes only with its file (upload a
    new version, move, archive or delete the file)."""

    code = "passage_read_only"
    status = 409


class Conflict(ServiceError):
    """The change conflicts with another note."""

    code = "conflict"
    status = 409


class NotebookCycle(ServiceError):
    """A notebook cannot move under itself or one of its descendants."""

    code = "notebook_cycle"
    status = 409


class NotebookNameTaken(ServiceError):
    """Another notebook with this name (ignoring case) already sits beside it."""

    code = "notebook_name_taken"
    status = 409


class MoveRefused(ServiceError):
    """Some notes cannot be moved, so none were; ``details`` says why for each."""

    code = "move_refused"
    status = 409

    def __init__(self, details: list[dict[str, str]]) -> None:
        super().__init__()
        self.details = details


class IdempotencyConflict(ServiceError):
    """This operationId was already used with different arguments."""

    code = "idempotency_conflict"
    status = 409


class CapturePaused(ServiceError):
    """Automatic capture is paused for this account; save with capture "explicit" only
    when the user asked for it."""

    code = "automatic_capture_paused"
    status = 409


class AccountDeleted(ServiceError):
    """This account has been deleted."""

    code = "unauthorized"
    status = 401


class Gone(ServiceError):
    """The note this operation saved has since been deleted."""

    code = "gone"
    status = 410


class InvalidCursor(ServiceError):
    """The cursor is malformed, tampered with, or belongs to another listing."""

    code = "invalid_cursor"
    status = 400


class InvalidRequest(ServiceError):
    """The request is not valid."""

    code = "validation_error"
    status = 400

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.detail = message
