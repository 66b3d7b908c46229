"""The exceptions of the client: one class per family of the API's error answers.

Every failure the API answers is ``{success: false, error: {code, message, requestId}}``
with an HTTP status; ``error_for`` turns it into the class of its status, carrying the
stable ``code`` (branch on it for the cases a family groups, such as
``version_conflict`` and ``idempotency_conflict`` under ``Conflict``).
"""

from __future__ import annotations

from typing import Any


class GroveError(Exception):
    """Grove answered an error."""

    def __init__(
        self,
        message: str | None = None,
        *,
        code: str = "error",
        status: int | None = None,
        request_id: str | None = None,
        details: list[dict[str, Any]] | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.message = message or (self.__doc__ or "").strip()
        self.code = code
        self.status = status
        self.request_id = request_id
        self.details = details or []
        self.retry_after = retry_after
        super().__init__(self.message)

    def __str__(self) -> str:
        where = f", request {self.request_id}" if self.request_id else ""
        return f"{self.code} ({self.status}{where}): {self.message}"


class ValidationError(GroveError):
    """The request was refused as invalid (400); ``details`` names the fields."""


class AuthError(GroveError):
    """The credential is missing, unknown, expired or revoked (401)."""


class PermissionDenied(GroveError):
    """The credential may not do this (403): read-only, not granted, or owner only."""


class NotFound(GroveError):
    """No such resource for this credential (404)."""


class Conflict(GroveError):
    """The request conflicts with the resource's state (409); see ``code``."""


class Gone(GroveError):
    """The resource existed but is gone (410), e.g. a replayed save of a forgotten note."""


class PayloadTooLarge(GroveError):
    """The request body is over the API's limit (413)."""


class UnsupportedMediaType(GroveError):
    """The body's ``Content-Type`` is not one the route accepts (415), e.g. a file type."""


class RateLimited(GroveError):
    """Too many requests (429); ``retry_after`` says how many seconds to wait."""


class Unavailable(GroveError):
    """Grove could not answer now (503, 504, or no connection); try again later."""


class ServerError(GroveError):
    """Grove failed unexpectedly (500); ``request_id`` identifies it in its logs."""


STATUS_ERRORS: dict[int, type[GroveError]] = {
    400: ValidationError,
    401: AuthError,
    403: PermissionDenied,
    404: NotFound,
    409: Conflict,
    410: Gone,
    413: PayloadTooLarge,
    415: UnsupportedMediaType,
    429: RateLimited,
    500: ServerError,
    503: Unavailable,
    504: Unavailable,
}


def error_for(
    status: int, body: Any, request_id: str | None, retry_after: float | None
) -> GroveError:
    """The exception for an error answer: its envelope's fields, or the bare status."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        error = {"code": f"http_{status}", "message": f"HTTP {status} without an envelope"}
    details = error.get("details")
    cls = STATUS_ERRORS.get(status, GroveError)
    return cls(
        str(error.get("message") or ""),
        code=str(error.get("code") or f"http_{status}"),
        status=status,
        request_id=error.get("requestId") or request_id,
        details=details if isinstance(details, list) else None,
        retry_after=retry_after,
    )
