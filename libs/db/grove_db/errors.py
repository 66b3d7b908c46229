"""Errors raised by the database layer."""

from __future__ import annotations


class DatabaseError(Exception):
    """The database could not complete the request."""

    code = "unavailable"
    status = 503


class UnsafeRoleError(DatabaseError):
    """The runtime database role may bypass row-level security."""

    code = "unsafe_role"
    status = 500
