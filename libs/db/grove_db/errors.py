"""Errors raised by the database layer."""

from __future__ import annotations

from grove_contracts.errors import GroveError


class DatabaseError(GroveError):
    """The database could not complete the request."""

    code = "unavailable"
    status = 503


class QueryTimeout(DatabaseError):
    """The database took longer than the statement deadline; try again."""

    code = "database_timeout"
    status = 503


class UnsafeRoleError(DatabaseError):
    """The runtime database role may bypass row-level security."""

    code = "unsafe_role"
    status = 500


class QuotaExceeded(DatabaseError):
    """The account holds as many of something as it may (the message names the limit)."""

    code = "quota_exceeded"
    status = 403


class ClientTimeout(DatabaseError, TimeoutError):
    """The client stopped sending the request before it was complete."""

    # Raised by the serving layer (grove_db.slow_clients), which lives in this library;
    # a TimeoutError still, as a socket's own timeout is, for code that catches those.
    code = "request_timeout"
    status = 408


#: The SQLSTATE PostgreSQL raises when a statement grows a count past its quota (0021).
QUOTA_SQLSTATE = "GQ001"
