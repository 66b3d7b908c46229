"""A loopback HTTP proxy in front of the api that injects faults into the first requests."""

from __future__ import annotations

import http.client
import socket
import struct
import threading
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from tests.support.loopback import Handler, Server

#: ``forward`` passes the request on; ``429`` answers it with a rate-limit error (Retry-After
#: 1) without passing it on; ``drop`` passes it on, waits for the api's answer, then
#: resets the client's connection without answering, as a network failure would.
Fault = Literal["forward", "429", "drop"]

RATE_LIMITED = {
    "success": False,
    "error": {"code": "rate_limited", "message": "slow down", "requestId": "proxy"},
}


@dataclass(frozen=True)
class Seen:
    """One request as the proxy received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class FaultyProxy:
    """Forwards to ``upstream``; the first requests meet ``faults`` in order, the rest pass."""

    def __init__(self, upstream: str, faults: list[Fault] | None = None) -> None:
        self.upstream = urlsplit(upstream)
        self.faults = list(faults or [])
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        proxy = self

        class Forward(Handler):
            def do_GET(self) -> None:
                proxy.handle(self)

            do_POST = do_PATCH = do_DELETE = do_GET

        self.server = Server(Forward)
        self.url = self.server.url

    def close(self) -> None:
        self.server.close()

    def handle(self, handler: Handler) -> None:
        body = handler.body()
        with self._lock:
            headers = {k.lower(): v for k, v in handler.headers.items()}
            self.seen.append(Seen(handler.command, handler.path, headers, body))
            fault = self.faults.pop(0) if self.faults else "forward"
        if fault == "429":
            handler.answer(RATE_LIMITED, 429, headers={"Retry-After": "1"})
            return
        status, content_type, answer_headers, payload = self.forward(handler, body)
        if fault == "drop":
            # Linger 0: closing sends a reset, the answer is lost after the api acted.
            handler.connection.setsockopt(
                socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
            )
            handler.close_connection = True
            return
        handler.answer(payload, status, content_type, answer_headers)

    def forward(self, handler: Handler, body: bytes) -> tuple[int, str, dict[str, str], bytes]:
        host, port = self.upstream.hostname or "127.0.0.1", self.upstream.port
        connection = http.client.HTTPConnection(host, port, timeout=30)
        skip = {"host", "connection", "accept-encoding", "content-length"}
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in skip}
        try:
            connection.request(handler.command, handler.path, body or None, headers)
            response = connection.getresponse()
            payload = response.read()
        finally:
            connection.close()
        kept = {
            name: response.headers[name]
            for name in ("X-Request-Id", "Retry-After")
            if response.headers.get(name) is not None
        }
        content_type = response.headers.get("Content-Type", "application/json")
        return response.status, content_type, kept, payload
