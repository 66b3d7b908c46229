"""Authentication errors."""

from __future__ import annotations


class AuthError(Exception):
    """Missing or invalid credentials."""

    code = "unauthorized"
    status = 401

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or self.__doc__)
        self.message = message or str(self.__doc__)
