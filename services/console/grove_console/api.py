"""grove-api over REST, as the signed-in owner (the token never leaves the server)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import requests

TIMEOUT_SECONDS = 10
#: A download is relayed in pieces of this size: memory stays bounded at any account size.
CHUNK_BYTES = 64 * 1024


class ApiError(Exception):
    """grove-api refused: its status, stable code and message, shown on the page."""

    def __init__(
        self, status: int, code: str, message: str, details: list[str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        #: Each refused field as "field: why" (a validation error's ``details``).
        self.details = details or []


class SignedOut(Exception):
    """grove-api no longer accepts the session's token: sign in again."""


@dataclass(frozen=True)
class Download:
    """A file the API serves as an attachment: its headers and its bytes in pieces."""

    content_type: str
    disposition: str
    length: int | None
    pieces: Iterator[bytes]


@dataclass(frozen=True)
class Api:
    base: str

    def call(
        self,
        token: str,
        method: str,
        path: str,
        body: Any = None,
        params: dict[str, Any] | None = None,
    ) -> Any:
        """The ``data`` of a successful answer; ``ApiError`` or ``SignedOut`` otherwise."""
        response = self._send(token, method, path, body, params, stream=False)
        return self._data(response)

    def stream(self, token: str, path: str) -> Iterator[bytes]:
        """A successful answer's body in pieces (each read within the timeout)."""
        response = self._send(token, "GET", path, None, None, stream=True)
        if not response.ok:
            self._data(response)

        def pieces() -> Iterator[bytes]:
            with response:
                yield from response.iter_content(CHUNK_BYTES)

        return pieces()

    def download(self, token: str, path: str) -> Download:
        """A successful attachment answer: its type, ``Content-Disposition``, length and
        body in pieces (relayed as they arrive, never held whole)."""
        response = self._send(token, "GET", path, None, None, stream=True)
        if not response.ok:
            self._data(response)
        length = response.headers.get("Content-Length")

        def pieces() -> Iterator[bytes]:
            with response:
                yield from response.iter_content(CHUNK_BYTES)

        return Download(
            content_type=response.headers.get("Content-Type", "application/octet-stream"),
            disposition=response.headers.get("Content-Disposition", "attachment"),
            length=int(length) if length and length.isdigit() else None,
            pieces=pieces(),
        )

    def upload(
        self,
        token: str,
        path: str,
        params: dict[str, Any],
        content_type: str,
        pieces: Iterable[bytes],
    ) -> Any:
        """POST a raw body sent as it is read (chunked), with its ``Content-Type``; the
        ``data`` of a successful answer. Not retried: the body is read once."""
        response = self._send(
            token, "POST", path, None, params, stream=False, data=pieces, content_type=content_type
        )
        return self._data(response)

    def _send(
        self,
        token: str,
        method: str,
        path: str,
        body: Any,
        params: dict[str, Any] | None,
        stream: bool,
        data: Iterable[bytes] | None = None,
        content_type: str | None = None,
    ) -> requests.Response:
        headers = {"Authorization": f"Bearer {token}"}
        if content_type is not None:
            headers["Content-Type"] = content_type
        try:
            response = requests.request(
                method,
                self.base.rstrip("/") + path,
                json=body,
                data=data,
                params=params,
                headers=headers,
                timeout=TIMEOUT_SECONDS,
                stream=stream,
            )
        except requests.RequestException as ex:
            raise ApiError(
                503, "unavailable", "Grove's API cannot be reached; retry shortly"
            ) from ex
        if response.status_code == 401:
            response.close()
            raise SignedOut()
        return response

    @staticmethod
    def _data(response: requests.Response) -> Any:
        try:
            envelope = response.json()
        except ValueError as ex:
            raise ApiError(502, "bad_gateway", "Grove's API answered something unreadable") from ex
        if not response.ok or not envelope.get("success"):
            error = envelope.get("error") or {}
            raise ApiError(
                response.status_code,
                str(error.get("code", "error")),
                str(error.get("message", "the request failed")),
                [f"{d.get('field')}: {d.get('message')}" for d in error.get("details") or []],
            )
        return envelope.get("data")
