"""Every service's log: JSON lines with request and trace IDs, and never a secret or a note.

A random marker goes into notes, queries, query strings, bad bodies and bad tokens on
every path (REST and MCP, lexical and semantic); after the services stop, no line of
any of them may contain it, nor the API key.
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
from collections.abc import Callable
from typing import Any

import requests

from grove_db import embedded
from tests.support.clients import data_of, error_of
from tests.support.fakes import OpenAIStack
from tests.support.mcp import LIST_TOOLS, MCP_ACCEPT, call, ok
from tests.support.processes import Running, start_api, start_mcp
from tests.support.tenants import new_tenant
from tests.support.waiting import wait_until

UUID_PATTERN = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
KEYS = ("ts", "level", "service", "logger", "event", "request_id", "trace_id")


def entries(running: Running) -> list[dict[str, Any]]:
    """Every non-empty stderr line of the service, each asserted to be one JSON object."""
    parsed = []
    for line in running.lines:
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            raise AssertionError(f"not a JSON line: {line!r}") from None
        assert isinstance(entry, dict), line
        missing = [key for key in KEYS if key not in entry]
        assert not missing, (missing, line)
        parsed.append(entry)
    return parsed


def test_no_secret_or_content_reaches_any_log(
    database: embedded.EmbeddedDatabase, openai_stack: Callable[..., OpenAIStack]
) -> None:
    stack = openai_stack()
    mcp = start_mcp(
        {
            "GROVE_DATABASE_URL": database.runtime_url,
            "GROVE_EMBEDDING_PROFILE": "openai",
            "GROVE_ASK_ADDRESS": stack.ask.url,
        }
    )
    services = {"api": stack.api, "mcp": mcp, "ask": stack.ask, "worker": stack.workers[0]}
    try:
        marker = "zebra-" + secrets.token_hex(8)
        bad_token = f"grv_{marker}"
        client = stack.tenant.client
        key = client.key or ""

        via_rest = client.save(f"{marker} saved over REST")
        via_mcp = ok(
            asyncio.run(
                call(mcp.url, key, "remember", {"content": f"{marker} over MCP", "kind": "fact"})
            ),
            "remember",
        )
        for note_id in (via_rest["id"], via_mcp["id"]):

            def indexed(note_id: str = note_id) -> bool:
                return bool(data_of(client.get(f"/v1/memories/{note_id}"))["indexing"] == "ready")

            wait_until(indexed)

        recalled = data_of(client.post("/v1/recall", {"query": marker}))
        assert recalled["items"]
        searched = data_of(client.post("/v1/memories/search", {"query": marker}))
        assert {item["memory"]["id"] for item in searched["items"]} == {
            via_rest["id"],
            via_mcp["id"],
        }
        assert ok(asyncio.run(call(mcp.url, key, "recall", {"query": marker})), "recall")["items"]
        # The semantic path really ran: the marker reached the provider as a query.
        assert marker in stack.fake.calls

        assert client.get("/v1/memories", params={"sourceAgent": marker}).status_code == 200
        unknown = client.get("/v1/memories", params={"query": marker})
        assert unknown.status_code == 400
        assert error_of(unknown)["code"] == "validation_error"
        invalid = client.post("/v1/memories", {"content": marker, "kind": marker})
        assert invalid.status_code == 400
        assert error_of(invalid)["code"] == "validation_error"
        malformed = client.post(
            "/v1/memories",
            data=f'{{"content": "{marker}", ',
            headers={"Content-Type": "application/json"},
        )
        assert malformed.status_code == 400
        refused = requests.get(
            f"{stack.api.url}/v1/memories",
            headers={"Authorization": f"Bearer {bad_token}"},
            timeout=30,
        )
        assert refused.status_code == 401
        refused_mcp = requests.post(
            mcp.url,
            json=LIST_TOOLS,
            headers={**MCP_ACCEPT, "Authorization": f"Bearer {bad_token}"},
            timeout=30,
        )
        assert refused_mcp.status_code == 401
    finally:
        mcp.stop()
        for worker in stack.workers:
            worker.stop()
        stack.api.stop()
        stack.ask.stop()

    for name, running in services.items():
        for line in running.lines:
            for secret in (marker, key, bad_token):
                assert secret not in line, (name, line)

    logged = {name: entries(running) for name, running in services.items()}
    for name, lines in logged.items():
        assert lines, name
        assert {entry["service"] for entry in lines} == {name}, name

    api_requests = [entry for entry in logged["api"] if entry["event"] == "request"]
    assert api_requests
    for entry in api_requests:
        assert not UUID_PATTERN.search(entry["route"]), entry
        assert entry["route"].startswith("/") or entry["route"] == "unmatched", entry
        assert isinstance(entry["status"], int) and isinstance(entry["duration_ms"], float | int)
        assert entry["method"] in ("GET", "POST", "PATCH", "DELETE"), entry
        assert entry["request_id"], entry
    routes = {entry["route"] for entry in api_requests}
    assert any("{memory_id" in route for route in routes), routes
    assert {"/v1/memories", "/v1/recall", "/v1/memories/search"} <= routes, routes
    statuses = {entry["status"] for entry in api_requests}
    assert {200, 201, 400, 401} <= statuses, statuses

    mcp_requests = [entry for entry in logged["mcp"] if entry["event"] == "request"]
    assert {entry["route"] for entry in mcp_requests} == {"/mcp"}
    assert {200, 401} <= {entry["status"] for entry in mcp_requests}


def test_request_and_trace_ids_reach_the_request_log(database: embedded.EmbeddedDatabase) -> None:
    api = start_api(
        {
            "GROVE_DATABASE_URL": database.runtime_url,
            "GROVE_EMBEDDING_PROFILE": "disabled",
            "GROVE_API_WORKERS": "1",
        }
    )
    try:
        client = new_tenant(database, api.url).client
        trace_id = secrets.token_hex(16)
        response = client.get(
            "/v1/memories",
            headers={
                "X-Request-Id": "test-req-123",
                "traceparent": f"00-{trace_id}-{secrets.token_hex(8)}-01",
            },
        )
        assert response.status_code == 200
        assert response.headers["X-Request-Id"] == "test-req-123"

        def logged() -> dict[str, Any] | None:
            for line in list(api.lines):
                if '"test-req-123"' in line:
                    entry = json.loads(line)
                    if entry["event"] == "request":
                        return entry  # type: ignore[no-any-return]
            return None

        entry = wait_until(logged, timeout=10)
    finally:
        api.stop()
    assert entry["request_id"] == "test-req-123"
    assert entry["trace_id"] == trace_id
    assert entry["service"] == "api"
    assert (entry["method"], entry["route"], entry["status"]) == ("GET", "/v1/memories", 200)
