"""Introspection asks about every active token, and about an inactive one once a minute."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from grove_auth.errors import Unauthorized
from grove_auth.provider import NEGATIVE_ENTRIES, Discovery, Introspection

ISSUER = "https://id.grove.test"


class Endpoint:
    """An RFC 7662 endpoint on loopback: ``active`` tokens are active; it counts calls."""

    def __init__(self) -> None:
        self.calls = 0
        endpoint = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server's method name
                endpoint.calls += 1
                form = self.rfile.read(int(self.headers["Content-Length"])).decode()
                active = "token=active" in form
                body = json.dumps({"active": active, "iss": ISSUER, "sub": "someone"}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                return

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/introspect"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    running = Endpoint()
    yield running
    running.server.shutdown()
    running.server.server_close()


def test_inactive_tokens_are_remembered_for_a_minute_active_ones_never(
    endpoint: Endpoint,
) -> None:
    now = [1000.0]
    introspection = Introspection(
        Discovery(ISSUER, introspection_url=endpoint.url), "grove", "secret", lambda: now[0]
    )
    for _ in range(3):
        assert introspection.claims("active")["sub"] == "someone"
    assert endpoint.calls == 3  # a revocation is seen at once
    for _ in range(3):
        with pytest.raises(Unauthorized):
            introspection.claims("made-up")
    assert endpoint.calls == 4
    now[0] += 61
    with pytest.raises(Unauthorized):
        introspection.claims("made-up")
    assert endpoint.calls == 5


def test_the_memory_of_inactive_tokens_is_bounded(endpoint: Endpoint) -> None:
    now = [1000.0]
    introspection = Introspection(
        Discovery(ISSUER, introspection_url=endpoint.url), "grove", "secret", lambda: now[0]
    )
    for i in range(NEGATIVE_ENTRIES + 5):
        introspection._remember_refused(i.to_bytes(32, "big"))
    assert len(introspection._refused) == NEGATIVE_ENTRIES
