"""``grove-mcp-bridge``: the stdio bridge to the REST API, with the SDK's stdio client.

Also: the tools are published identically by grove-mcp, ``GET /v1/tools`` and the bridge,
the bridge ships as a distribution of its own, and its host can pause automatic capture.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import re
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from grove_cli import admin
from grove_contracts.tools import INSTRUCTIONS, TOOLS
from grove_mcp import results
from grove_mcp_bridge import results as bridge_results
from tests.support import loopback
from tests.support.clients import data_of
from tests.support.mcp import DESCRIBED, assert_is_registry, connect, error_of, ok
from tests.support.tenants import Tenant

BRIDGE = str(Path(sys.executable).with_name("grove-mcp-bridge"))
AUTOMATIC = {"content": "noticed on my own", "kind": "fact", "capture": "automatic"}


@asynccontextmanager
async def bridge(api_url: str, key: str, mode: str = "legacy", **env: str) -> AsyncIterator[Client]:
    """An SDK stdio client on a fresh ``grove-mcp-bridge`` pointed at ``api_url``."""
    server = StdioServerParameters(
        command=BRIDGE, args=[], env={"GROVE_API_URL": api_url, "GROVE_API_KEY": key, **env}
    )
    async with Client(server, mode=mode) as client:
        yield client


def test_bridge_lists_the_registry(api_url: str, tenant: Tenant) -> None:
    async def scenario() -> tuple[list[types.Tool], str | None]:
        async with bridge(api_url, tenant.client.key or "") as client:
            return (await client.list_tools()).tools, client.instructions

    tools, instructions = asyncio.run(scenario())
    assert_is_registry(tools)
    # The same instructions as grove-mcp, note-writing guidance included.
    assert instructions == INSTRUCTIONS


def test_round_trip_through_the_bridge(api_url: str, tenant: Tenant) -> None:
    async def scenario() -> str:
        async with bridge(api_url, tenant.client.key or "") as client:
            saved = ok(
                await client.call_tool(
                    "remember", {"content": "Bridge notes reach the API", "kind": "fact"}
                ),
                "remember",
            )
            note = saved["id"]
            recalled = ok(await client.call_tool("recall", {"query": "bridge"}), "recall")
            assert [i["memory"]["id"] for i in recalled["items"]] == [note]
            updated = ok(
                await client.call_tool("update_memory", {"id": note, "kind": "decision"}),
                "update_memory",
            )
            assert (updated["version"], updated["kind"]) == (2, "decision")
            assert updated["content"] == "Bridge notes reach the API"
            history = ok(await client.call_tool("memory_history", {"id": note}), "memory_history")
            assert [r["version"] for r in history["items"]] == [1, 2]
            forgotten = ok(await client.call_tool("forget", {"ids": [note]}), "forget")
            assert forgotten["results"] == [{"id": note, "outcome": "deleted"}]
            gone = error_of(await client.call_tool("get_memory", {"id": note}))
            assert gone["code"] == "not_found"
            return str(note)

    note = asyncio.run(scenario())
    # The same account saw it all: the API now answers 404 for the forgotten note.
    assert tenant.client.get(f"/v1/memories/{note}").status_code == 404


def test_api_errors_come_back_as_tool_errors(
    api_url: str, tenant: Tenant, make_tenant: Callable[[], Tenant]
) -> None:
    foreign = make_tenant().client.save("not yours")["id"]

    async def scenario() -> None:
        async with bridge(api_url, tenant.client.key or "") as client:
            hidden = error_of(await client.call_tool("get_memory", {"id": foreign}))
            assert hidden["code"] == "not_found"
            invalid = error_of(
                await client.call_tool("remember", {"content": "x" * 6001, "kind": "fact"})
            )
            assert invalid["code"] == "validation_error"
            assert [d["field"] for d in invalid["details"]] == ["content"]

    asyncio.run(scenario())


def test_bad_key_comes_back_as_unauthorized(api_url: str) -> None:
    async def scenario() -> dict[str, Any]:
        async with bridge(api_url, "grv_" + "C" * 43) as client:
            return error_of(await client.call_tool("list_memories", {}))

    assert asyncio.run(scenario())["code"] == "unauthorized"


@contextmanager
def old_api(
    paths: list[str] | None = None, registry: threading.Event | None = None
) -> Iterator[str]:
    """A stand-in for a Grove API without /v1/tools: its generic 404 for every request,
    whose method and path it appends to ``paths``; once ``registry`` is set,
    ``GET /v1/tools`` answers the real registry (and only tool calls are missing)."""

    class Handler(loopback.Handler):
        def do_POST(self) -> None:  # http.server's method name
            self.refuse()

        def do_GET(self) -> None:  # http.server's method name
            if registry is not None and registry.is_set() and self.path == "/v1/tools":
                if paths is not None:
                    paths.append(f"GET {self.path}")
                listing = {"tools": [t.describe() for t in TOOLS], "instructions": INSTRUCTIONS}
                self.answer({"success": True, "data": listing})
                return
            self.refuse()

        def refuse(self) -> None:
            if paths is not None:
                paths.append(f"{self.command} {self.path}")
            self.body()
            error = {"code": "not_found", "message": "404 Not Found", "requestId": "x"}
            self.answer({"success": False, "error": error}, status=404)

    server = loopback.Server(Handler)
    try:
        yield server.url
    finally:
        server.close()


@pytest.mark.parametrize("name", ["../keys", "../../v1/keys", "remember/../../keys", "x?y=1"])
def test_the_bridge_never_puts_an_unknown_tool_name_into_a_url(name: str) -> None:
    async def scenario(url: str) -> tuple[dict[str, Any], dict[str, Any]]:
        async with bridge(url, "grv_any") as client:
            unknown = error_of(await client.call_tool(name, {}))
            known = error_of(await client.call_tool("list_memories", {}))
            return unknown, known

    paths: list[str] = []
    served = threading.Event()
    served.set()
    with old_api(paths, registry=served) as url:
        unknown, known = asyncio.run(scenario(url))
    assert unknown["code"] == "unknown_tool"
    assert "no tool is named" in unknown["message"]
    # Only the registry tool reached the API; the unknown name sent nothing.
    assert known["code"] == "unsupported_by_server"
    assert paths == ["GET /v1/tools", "POST /v1/tools/list_memories"]


def test_a_bridge_started_before_its_api_answers_loads_the_tools_later() -> None:
    ready = threading.Event()

    async def scenario(url: str) -> tuple[dict[str, Any], list[types.Tool], dict[str, Any]]:
        async with bridge(url, "grv_any") as client:
            early = error_of(await client.call_tool("list_memories", {}))
            ready.set()
            tools = (await client.list_tools()).tools
            later = error_of(await client.call_tool("list_memories", {}))
            return early, tools, later

    paths: list[str] = []
    with old_api(paths, registry=ready) as url:
        early, tools, later = asyncio.run(scenario(url))
    assert early["code"] == "unsupported_by_server"
    assert_is_registry(tools)
    # Asked at start and at the first call, loaded at the listing, then kept.
    assert paths == ["GET /v1/tools"] * 3 + ["POST /v1/tools/list_memories"]
    assert later["code"] == "unsupported_by_server"


def test_an_api_without_tool_endpoints_is_unsupported_by_server() -> None:
    async def scenario(url: str) -> dict[str, Any]:
        async with bridge(url, "grv_any") as client:
            return error_of(await client.call_tool("get_memory", {"id": str(uuid.uuid4())}))

    with old_api() as url:
        error = asyncio.run(scenario(url))
    assert error["code"] == "unsupported_by_server"
    assert "get_memory" in error["message"]


def test_an_unreachable_api_is_unavailable() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"

        async def scenario() -> dict[str, Any]:
            async with bridge(url, "grv_any") as client:
                return error_of(await client.call_tool("list_memories", {}))

        assert asyncio.run(scenario())["code"] == "unavailable"


def test_bridge_needs_url_and_key() -> None:
    done = subprocess.run(
        [BRIDGE], env={}, input="", capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode != 0
    assert "GROVE_API_URL" in done.stderr


def test_a_bad_capture_setting_stops_the_bridge_with_one_line() -> None:
    env = {"GROVE_API_URL": "http://127.0.0.1:9", "GROVE_API_KEY": "grv_any"}
    done = subprocess.run(
        [BRIDGE],
        env={**env, "GROVE_BRIDGE_CAPTURE": "off"},
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    assert done.stderr.strip().splitlines() == [
        "grove-mcp-bridge: GROVE_BRIDGE_CAPTURE must be 'on' or 'paused'"
    ]


def test_bridge_imports_no_server_code() -> None:
    # Only its own package of Grove's, and no database driver or server framework.
    script = (
        "import json, sys\n"
        "import grove_mcp_bridge.server\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = set(json.loads(done.stdout))
    assert {m for m in loaded if m.startswith("grove")} == {"grove_mcp_bridge"}
    assert not loaded & {"psycopg", "psycopg_pool", "falcon", "gunicorn", "grpc", "pypdf"}


def test_the_bridge_package_declares_none_of_the_servers_dependencies() -> None:
    def names(distribution: str) -> set[str]:
        required = importlib.metadata.requires(distribution) or []
        return {re.split(r"[ <>=!~;\[]", r, maxsplit=1)[0].lower() for r in required}

    bridge_needs = names("grove-mcp-bridge")
    assert bridge_needs == {"mcp", "mcp-types", "httpx2"}
    # Everything it needs comes with the MCP SDK: nothing heavy of the server's.
    assert bridge_needs - {"mcp"} <= names("mcp")
    server_only = names("grove") - names("mcp") - {"mcp"}
    assert {"psycopg", "gunicorn", "grpcio", "pypdf", "falcon"} <= server_only
    assert not bridge_needs & server_only


def test_the_bridge_gives_tool_results_in_the_shape_grove_mcp_gives_them() -> None:
    data = {"id": "n1", "version": 2}
    details = [{"field": "content", "message": "too long"}]
    assert bridge_results.success(data) == results.success(data)
    assert bridge_results.failure("c", "m", "r", details) == results.failure("c", "m", "r", details)
    assert bridge_results.failure("c", "m", "r") == results.failure("c", "m", "r")


def test_a_host_that_paused_capture_refuses_automatic_saves_before_the_api(
    api_url: str, tenant: Tenant
) -> None:
    note = tenant.client.save("explicit before")
    key = tenant.client.key or ""

    async def scenario() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        async with bridge(api_url, key, GROVE_BRIDGE_CAPTURE="paused") as client:
            refused = error_of(await client.call_tool("remember", AUTOMATIC))
            corrected = error_of(
                await client.call_tool("update_memory", {"id": note["id"], "capture": "automatic"})
            )
            explicit = ok(
                await client.call_tool("remember", {**AUTOMATIC, "capture": "explicit"}),
                "remember",
            )
            return refused, corrected, explicit

    refused, corrected, explicit = asyncio.run(scenario())
    for error in (refused, corrected):
        assert error["code"] == "automatic_capture_paused"
        assert "GROVE_BRIDGE_CAPTURE" in error["message"]
    assert explicit["capture"] == "explicit"
    # Nothing automatic reached the API: the first note is unchanged, the explicit one saved.
    listed = data_of(tenant.client.get("/v1/memories"))["items"]
    assert sorted(m["content"] for m in listed) == ["explicit before", "noticed on my own"]
    assert {m["capture"] for m in listed} == {"explicit"}
    assert data_of(tenant.client.get(f"/v1/memories/{note['id']}"))["version"] == 1
    # The same error shape as the server's own pause (the account's, here).
    assert admin.set_automatic_capture(tenant.database.migration_url, tenant.account_id, True)

    async def server_side() -> dict[str, Any]:
        async with bridge(api_url, key) as client:
            return error_of(await client.call_tool("remember", AUTOMATIC))

    server = asyncio.run(server_side())
    assert server["code"] == "automatic_capture_paused"
    assert set(server) == set(refused) == {"code", "message", "requestId"}


def test_a_host_with_capture_on_leaves_automatic_saves_to_the_server(
    api_url: str, tenant: Tenant
) -> None:
    async def scenario() -> dict[str, Any]:
        async with bridge(api_url, tenant.client.key or "", GROVE_BRIDGE_CAPTURE="on") as client:
            return ok(await client.call_tool("remember", AUTOMATIC), "remember")

    assert asyncio.run(scenario())["capture"] == "automatic"


def test_schemas_are_identical_across_mcp_rest_and_bridge(
    mcp_url: str, api_url: str, tenant: Tenant
) -> None:
    key = tenant.client.key or ""

    def wire(tools: list[types.Tool]) -> list[dict[str, Any]]:
        dumped = [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools]
        return [{k: d.get(k) for k in DESCRIBED} for d in dumped]

    async def listings() -> tuple[list[types.Tool], list[types.Tool], list[types.Tool]]:
        async with connect(mcp_url, key) as http:
            over_http = (await http.list_tools()).tools
        async with connect(mcp_url, key, mode="auto") as modern:
            over_modern = (await modern.list_tools()).tools
        async with bridge(api_url, key) as stdio:
            over_stdio = (await stdio.list_tools()).tools
        return over_http, over_modern, over_stdio

    over_http, over_modern, over_stdio = asyncio.run(listings())
    rest = data_of(tenant.client.get("/v1/tools"))["tools"]
    assert rest == wire(over_http) == wire(over_modern) == wire(over_stdio)
    assert [t["name"] for t in rest] == [t.name for t in TOOLS]
    for listed in rest:
        assert set(listed["annotations"]) == {
            "title",
            "readOnlyHint",
            "destructiveHint",
            "idempotentHint",
            "openWorldHint",
        }
