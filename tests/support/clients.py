"""HTTP clients of the API and its envelopes."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import requests
from requests.adapters import BaseAdapter


@dataclass
class Client:
    """HTTP calls to the API with one key.

    ``transport``, if given, is mounted on the session for ``base``: it carries the calls
    instead of a socket (``tests.support.inprocess.InProcessApi`` runs them in this process).
    """

    base: str
    key: str | None
    session: requests.Session = field(default_factory=requests.Session)
    transport: BaseAdapter | None = None

    def __post_init__(self) -> None:
        if self.transport is not None:
            self.session.mount(self.base, self.transport)

    def with_key(self, key: str | None) -> Client:
        """A client of the same API (same transport) calling with ``key``."""
        return Client(self.base, key, transport=self.transport)

    def headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        base = {"Authorization": f"Bearer {self.key}"} if self.key else {}
        return {**base, **(extra or {})}

    def get(self, path: str, **kwargs: Any) -> requests.Response:
        return self.session.get(
            self.base + path,
            headers=self.headers(kwargs.pop("headers", None)),
            timeout=30,
            **kwargs,
        )

    def post(self, path: str, json: Any = None, **kwargs: Any) -> requests.Response:
        return self.session.post(
            self.base + path,
            json=json,
            headers=self.headers(kwargs.pop("headers", None)),
            timeout=30,
            **kwargs,
        )

    def patch(self, path: str, json: Any = None, **kwargs: Any) -> requests.Response:
        return self.session.patch(
            self.base + path,
            json=json,
            headers=self.headers(kwargs.pop("headers", None)),
            timeout=30,
            **kwargs,
        )

    def put(self, path: str, json: Any = None, **kwargs: Any) -> requests.Response:
        return self.session.put(
            self.base + path,
            json=json,
            headers=self.headers(kwargs.pop("headers", None)),
            timeout=30,
            **kwargs,
        )

    def delete(self, path: str, **kwargs: Any) -> requests.Response:
        return self.session.delete(
            self.base + path,
            headers=self.headers(kwargs.pop("headers", None)),
            timeout=30,
            **kwargs,
        )

    def save(self, content: str = "a note", kind: str = "fact", **fields: Any) -> dict[str, Any]:
        """Save a note and return its resource as ``GET /v1/memories/{id}`` shows it
        (asserting 201; the answer's ``similar`` list is checked and left out)."""
        response = self.post("/v1/memories", {"content": content, "kind": kind, **fields})
        assert response.status_code == 201, response.text
        saved: dict[str, Any] = response.json()["data"]
        assert isinstance(saved.pop("similar"), list)
        return saved


def error_of(response: requests.Response) -> dict[str, Any]:
    """The error member of a failure envelope, checking it echoes the request ID."""
    body = response.json()
    assert body["success"] is False, response.text
    assert body["error"]["requestId"] == response.headers["X-Request-Id"]
    return body["error"]  # type: ignore[no-any-return]


def data_of(response: requests.Response) -> Any:
    """The data member of a success envelope."""
    body = response.json()
    assert body["success"] is True, response.text
    return body["data"]


def race(calls: list[Callable[[requests.Session], requests.Response]]) -> list[requests.Response]:
    """Run each call on its own thread and session, released together by a barrier."""
    barrier = threading.Barrier(len(calls))
    results: list[requests.Response | BaseException | None] = [None] * len(calls)

    def run(index: int) -> None:
        with requests.Session() as session:
            try:
                barrier.wait(timeout=10)
                results[index] = calls[index](session)
            except BaseException as ex:  # re-raised in the test's thread
                results[index] = ex

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    responses: list[requests.Response] = []
    for result in results:
        if isinstance(result, BaseException):
            raise result
        assert result is not None
        responses.append(result)
    return responses
