"""Slow clients cannot stop a service: a connection that never finishes its request
costs the server a socket for a bounded time, never one of its few threads.

Each HTTP service runs here as in production (gunicorn's threaded workers for api,
share and console, uvicorn's for mcp) with short read timeouts, so the tests that wait
for a timeout take seconds.
"""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests

from grove_db import embedded
from grove_db.slow_clients import MAX_HEAD_BYTES
from tests.support.dev import dev_env
from tests.support.mcp import MCP_ACCEPT
from tests.support.processes import (
    Running,
    free_port,
    start_api,
    start_console,
    start_mcp,
    start_share,
)
from tests.support.tenants import new_tenant
from tests.support.waiting import wait_until

#: The services' read timeouts in these tests (production defaults are longer).
HEADER_TIMEOUT_SECONDS = 3
BODY_TIMEOUT_SECONDS = 2
TIMEOUTS = {
    "GROVE_HTTP_HEADER_TIMEOUT_SECONDS": str(HEADER_TIMEOUT_SECONDS),
    "GROVE_HTTP_BODY_TIMEOUT_SECONDS": str(BODY_TIMEOUT_SECONDS),
}
#: How many stalled connections a service must shrug off, as the issue measured it.
SLOW_CONNECTIONS = 200
#: A request line and one header, the blank line that ends them never sent.
PARTIAL_REQUEST = b"GET /healthz HTTP/1.1\r\nHost: slow.example\r\n"


def start(service: str, database: embedded.EmbeddedDatabase, tmp_path: Path) -> Running:
    """One HTTP service with the test timeouts and one worker, as its own fixture would
    start it; its ``url`` is the base URL ``/healthz`` hangs off."""
    if service == "api":
        return start_api(
            {
                "GROVE_DATABASE_URL": database.runtime_url,
                "GROVE_EMBEDDING_PROFILE": "disabled",
                "GROVE_API_WORKERS": "1",
                **TIMEOUTS,
            }
        )
    if service == "share":
        return start_share(database, **TIMEOUTS)
    if service == "console":
        port = free_port()
        identity = dev_env(tmp_path, free_port(), port)
        return start_console(database, port, {**identity, **TIMEOUTS})
    running = start_mcp(
        {
            "GROVE_DATABASE_URL": database.runtime_url,
            "GROVE_EMBEDDING_PROFILE": "disabled",
            "GROVE_MCP_WORKERS": "1",
            **TIMEOUTS,
        },
        workers=1,
    )
    running.url = running.url.removesuffix("/mcp")
    return running


#: The services on gunicorn's threaded worker (grove_db.slow_clients); grove-mcp is the
#: other of ``SERVICES``, on uvicorn.
THREADED = ["api", "share", "console"]
SERVICES = [*THREADED, "mcp"]


@pytest.fixture(scope="module", params=SERVICES)
def service(
    request: pytest.FixtureRequest,
    database: embedded.EmbeddedDatabase,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Running]:
    running = start(request.param, database, tmp_path_factory.mktemp(request.param))
    # gunicorn listens before its worker has loaded the app: wait for the app.
    wait_until(lambda: requests.get(f"{running.url}/healthz", timeout=30).ok)
    yield running
    running.stop()


def address(running: Running) -> tuple[str, int]:
    host, port = running.url.removeprefix("http://").split(":")
    return host, int(port)


@contextmanager
def stalled(
    running: Running, count: int, sent: bytes = PARTIAL_REQUEST
) -> Iterator[list[socket.socket]]:
    """``count`` connections that each sent ``sent`` and then nothing; all closed after."""
    connections: list[socket.socket] = []
    try:
        for _ in range(count):
            connection = socket.create_connection(address(running), timeout=5)
            connection.sendall(sent)
            connections.append(connection)
        yield connections
    finally:
        for connection in connections:
            connection.close()


def closed_by_server(connection: socket.socket) -> bool:
    """Whether the server has closed ``connection`` (it reads as ended or reset)."""
    readable, _, _ = select.select([connection], [], [], 0)
    if not readable:
        return False
    try:
        return connection.recv(65536) == b""
    except ConnectionResetError:
        return True


def timed_healthz(running: Running) -> float:
    """Seconds ``GET /healthz`` took on a fresh connection (it must answer 200)."""
    started = time.monotonic()
    response = requests.get(f"{running.url}/healthz", timeout=30)
    elapsed = time.monotonic() - started
    assert response.status_code == 200, response.text
    return elapsed


def test_slow_clients_cannot_stop_healthz(service: Running) -> None:
    with stalled(service, SLOW_CONNECTIONS) as connections:
        assert timed_healthz(service) < 1.0
        # The stalled connections were all still open meanwhile: they cost a socket each.
        assert not any(closed_by_server(connection) for connection in connections)
        assert timed_healthz(service) < 1.0


def test_pipelined_requests_are_served_and_the_next_head_is_timed_from_its_first_byte(
    service: Running,
) -> None:
    request = b"GET /healthz HTTP/1.1\r\nHost: slow.example\r\n\r\n"
    with stalled(service, 1, request * 2 + b"GET /healthz HTTP/1.1\r\n") as (connection,):
        connection.settimeout(30)
        answered = time.monotonic()
        received = read_to_end(connection)
        closed = time.monotonic()
    assert received.count(b"HTTP/1.1 200") == 2, received
    assert closed - answered >= HEADER_TIMEOUT_SECONDS


def test_clients_that_never_close_their_end_cannot_stop_healthz(service: Running) -> None:
    # Each is answered and closed on the server's side; the server then waits a while
    # for the client's end (to read what it may still send), which never comes.
    request = b"GET /healthz HTTP/1.1\r\nHost: slow.example\r\nConnection: close\r\n\r\n"
    with stalled(service, 20, request) as connections:
        for connection in connections:
            connection.settimeout(30)
            assert connection.recv(65536).startswith(b"HTTP/1.1 200")
        assert timed_healthz(service) < 1.0


def test_a_connection_that_never_finishes_its_headers_is_closed_at_the_header_timeout(
    service: Running,
) -> None:
    trickle = PARTIAL_REQUEST + b"X-Slow: "
    with stalled(service, 1) as (silent,), stalled(service, 1, trickle) as (trickling,):
        opened = time.monotonic()

        def trickled_until_closed() -> bool:
            # One more byte of a header each poll: the timeout bounds the whole head,
            # not each wait between two bytes.
            try:
                trickling.sendall(b"a")
            except OSError:
                return True
            return closed_by_server(trickling)

        wait_until(trickled_until_closed, timeout=HEADER_TIMEOUT_SECONDS + 15, interval=0.25)
        assert time.monotonic() - opened >= HEADER_TIMEOUT_SECONDS
        wait_until(lambda: closed_by_server(silent), timeout=15)


def test_a_request_whose_head_arrives_slowly_within_the_timeout_is_answered(
    service: Running,
) -> None:
    with stalled(service, 1, b"GET /healthz HTTP/1.1\r\n") as (connection,):
        time.sleep(HEADER_TIMEOUT_SECONDS / 2)  # the client's pause, not a wait for state
        connection.sendall(b"Host: slow.example\r\nConnection: close\r\n\r\n")
        answer = read_to_end(connection)
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]


def read_to_end(connection: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    received = b""
    while chunk := connection.recv(65536):
        received += chunk
    return received


#: A request each service reads the body of (share reads none: it answers 405 and then
#: drains the body, which is bounded the same way), and the start of that body.
BODY_REQUESTS = {
    "grove-api": ("/v1/memories", "application/json", b'{"content": "'),
    "grove-console": ("/dev/login", "application/x-www-form-urlencoded", b"subject=slow"),
    "grove-share": ("/healthz", "application/json", b"{"),
    "grove-mcp": ("/mcp", "application/json", b'{"jsonrpc": '),
}
#: What each service answers when the body stops (grove-mcp's app sees the client leave).
BODY_ANSWERS = {
    "grove-api": b"HTTP/1.1 408",
    "grove-console": b"HTTP/1.1 408",
    "grove-share": b"HTTP/1.1 405",
    "grove-mcp": b"",
}


def test_a_body_that_stops_arriving_is_cut_at_the_body_timeout(
    service: Running, database: embedded.EmbeddedDatabase
) -> None:
    path, media, start = BODY_REQUESTS[service.name]
    key = new_tenant(database, service.url).client.key
    host, port = address(service)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: {media}\r\n"
        f"Accept: {MCP_ACCEPT['Accept']}\r\nAuthorization: Bearer {key}\r\n"
        "Content-Length: 1000\r\n\r\n"
    )
    with stalled(service, 1, head.encode() + start) as (connection,):
        opened = time.monotonic()
        connection.settimeout(30)
        answer = read_to_end(connection)
        waited = time.monotonic() - opened
    assert waited >= BODY_TIMEOUT_SECONDS
    expected = BODY_ANSWERS[service.name]
    assert answer.startswith(expected) and (expected or not answer), answer[:300]
    if service.name == "grove-api":
        assert b'"code":"request_timeout"' in answer.replace(b" ", b""), answer


# grove-mcp holds no thread while a body arrives: it has no minimum rate.
@pytest.mark.parametrize("service", THREADED, indirect=True)
def test_a_body_trickled_below_the_minimum_rate_is_cut(
    service: Running, database: embedded.EmbeddedDatabase
) -> None:
    path, media, start = BODY_REQUESTS[service.name]
    key = new_tenant(database, service.url).client.key
    head = (
        f"POST {path} HTTP/1.1\r\nHost: slow.example\r\nContent-Type: {media}\r\n"
        f"Authorization: Bearer {key}\r\nContent-Length: 60000\r\n\r\n"
    )
    received = bytearray()
    with stalled(service, 1, head.encode() + start) as (connection,):
        opened = time.monotonic()

        def trickled_until_closed() -> bool:
            # What the server sent first, then one more byte of body: each well within
            # the body timeout, far below 500 bytes a second.
            if select.select([connection], [], [], 0)[0]:
                try:
                    chunk = connection.recv(65536)
                except ConnectionResetError:
                    return True
                if not chunk:
                    return True
                received.extend(chunk)
            try:
                connection.sendall(b"a")
            except OSError:
                return True
            return False

        wait_until(trickled_until_closed, timeout=BODY_TIMEOUT_SECONDS + 15, interval=0.25)
        assert time.monotonic() - opened >= BODY_TIMEOUT_SECONDS
    assert received.startswith(BODY_ANSWERS[service.name]), received[:300]


def head_of(size: int) -> bytes:
    """A request for /healthz whose line and headers take exactly ``size`` bytes."""
    start = b"GET /healthz HTTP/1.1\r\nHost: slow.example\r\nConnection: close\r\n"
    fillers: list[bytes] = []
    left = size - len(start) - 2
    while left > 0:
        line = b"X-Fill-%d: " % len(fillers)
        value = min(8000, left - len(line) - 2)
        fillers.append(line + b"a" * value + b"\r\n")
        left -= len(fillers[-1])
    head = start + b"".join(fillers) + b"\r\n"
    assert len(head) == size
    return head


# uvicorn's h11 bounds grove-mcp's head itself, at 16 KiB.
@pytest.mark.parametrize("service", THREADED, indirect=True)
def test_a_head_of_64_kib_is_served_and_one_byte_more_is_431(service: Running) -> None:
    with stalled(service, 1, head_of(MAX_HEAD_BYTES)) as (connection,):
        assert read_to_end(connection).startswith(b"HTTP/1.1 200")
    with stalled(service, 1, head_of(MAX_HEAD_BYTES + 1)) as (connection,):
        assert read_to_end(connection).startswith(b"HTTP/1.1 431")
