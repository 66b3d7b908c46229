"""grove-mcp's own limits: concurrent calls per credential, body size; owner-only names."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator

import pytest

from grove_db import embedded
from tests.support.clients import error_of
from tests.support.mcp import PROTOCOL, connect, mcp_post
from tests.support.mcp import error_of as tool_error
from tests.support.processes import start_mcp
from tests.support.tenants import Tenant


@pytest.fixture
def silent_ask() -> Iterator[str]:
    """An address that accepts TCP connections and never answers (a hung ask service)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join(timeout=5)
    for connection in accepted:
        connection.close()
    listener.close()


def test_concurrent_calls_beyond_the_per_credential_limit_are_refused(
    database: embedded.EmbeddedDatabase, tenant: Tenant, silent_ask: str
) -> None:
    # Each recall waits out its 300 ms query-embedding budget on the silent ask service,
    # so four calls at once overlap on the single worker, whose limit is one.
    mcp = start_mcp(
        {
            "GROVE_DATABASE_URL": database.runtime_url,
            "GROVE_EMBEDDING_PROFILE": "minilm",
            "GROVE_ASK_ADDRESS": silent_ask,
            "GROVE_MCP_WORKERS": "1",
            "GROVE_MCP_PER_CREDENTIAL_CONCURRENCY": "1",
        },
        workers=1,
    )
    try:

        async def burst() -> list[str]:
            async with connect(mcp.url, tenant.client.key or "") as client:
                results = await asyncio.gather(
                    *(client.call_tool("recall", {"query": f"q{i}"}) for i in range(4))
                )
            return ["ok" if not r.is_error else tool_error(r)["code"] for r in results]

        outcomes = asyncio.run(burst())
        assert "ok" in outcomes
        assert "too_many_requests" in outcomes
    finally:
        mcp.stop()


def test_bodies_over_the_limit_are_refused(mcp_url: str, tenant: Tenant) -> None:
    body = (
        '{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"pad": "'
        + "x" * (70 * 1024)
        + '"}}'
    )
    response = mcp_post(mcp_url, tenant.client.key or "", body, **PROTOCOL)
    assert response.status_code == 413
    # The standard envelope, naming the limit (GROVE_MAX_BODY_BYTES for a personal key).
    assert response.json()["error"]["code"] == "payload_too_large"
    assert "65536" in response.json()["error"]["message"]


@pytest.mark.parametrize("nested", ["[" * 60_000, '{"a":' * 10_000 + "1" + "}" * 10_000])
def test_deeply_nested_json_is_refused_without_a_500(
    mcp_url: str, tenant: Tenant, nested: str
) -> None:
    for body in (
        nested,
        '{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": ' + nested + "}",
    ):
        response = mcp_post(mcp_url, tenant.client.key or "", body, **PROTOCOL)
        assert response.status_code == 400, response.text
        assert response.json()["error"]["code"] == -32700  # JSON-RPC parse error


@pytest.mark.parametrize("name", ["archive_notebook", "delete_notebook", "list_archived_notebooks"])
def test_owner_session_operations_are_refused_to_keys(tenant: Tenant, name: str) -> None:
    response = tenant.client.post(f"/v1/tools/{name}", {"id": "x"})
    assert response.status_code == 403
    assert error_of(response)["code"] == "owner_session_required"
