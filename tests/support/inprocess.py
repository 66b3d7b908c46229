"""grove-api's app in the test process: ``create_app`` behind a requests transport.

Tests of pure API behaviour (validation, envelopes, status codes, routes) need no
gunicorn; mounted on a ``Client``'s session, ``InProcessApi`` hands each request to the
app through ``falcon.testing`` and answers with a ``requests.Response``, so a test reads
the same either way. What only a real server shows (the socket, slow clients, timeouts,
gunicorn's own answers, logs, metrics ports) stays on ``api_url``.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import falcon.testing
import requests
from requests.adapters import BaseAdapter
from requests.structures import CaseInsensitiveDict
from requests.utils import get_encoding_from_headers

from tests.support.clients import Client

#: The base URL clients of the in-process app use; nothing listens there.
IN_PROCESS_URL = "http://grove-api.in-process"


class InProcessApi(BaseAdapter):
    """A requests transport that runs each request through a Falcon app in this process."""

    url = IN_PROCESS_URL

    def __init__(self, app: falcon.App[falcon.Request, falcon.Response]) -> None:
        super().__init__()
        self.app = falcon.testing.TestClient(app)

    def client(self, key: str | None = None) -> Client:
        """A client of the app calling with ``key`` (none: no Authorization header)."""
        return Client(self.url, key, transport=self)

    def send(
        self, request: requests.PreparedRequest, *args: Any, **kwargs: Any
    ) -> requests.Response:
        """Simulate ``request`` on the app (the whole body is sent and read at once)."""
        assert request.method and request.url
        body = request.body
        if not isinstance(body, str | bytes | None):
            raise TypeError("in process, a request body is str or bytes, not a stream")
        target = urlsplit(request.url)
        result = self.app.simulate_request(
            request.method,
            target.path or "/",
            query_string=target.query,
            headers=dict(request.headers),
            body=body,
        )
        return _response(request, result.status, result.headers, result.content)

    def close(self) -> None:
        """Nothing to release: the app and its pool belong to whoever built them."""


def _response(
    request: requests.PreparedRequest, status: str, headers: Mapping[str, str], content: bytes
) -> requests.Response:
    """A ``requests.Response`` as the HTTP transport would build it, body unread."""
    response = requests.Response()
    code, _, reason = status.partition(" ")
    response.status_code = int(code)
    response.reason = reason
    response.headers = CaseInsensitiveDict(headers)
    response.encoding = get_encoding_from_headers(response.headers)
    response.raw = io.BytesIO(content)
    response.url = request.url or ""
    response.request = request
    return response
