"""The MCP service with the SDK's own Streamable HTTP client (and the MCP Inspector CLI)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import time
import uuid
from pathlib import Path
from urllib.parse import urlparse

import mcp_types as types
import psutil
import psycopg
import pytest
import requests

from grove_cli import admin
from grove_contracts.tools import INSTRUCTIONS, TOOLS
from grove_db import embedded
from tests.support.keys import SECRET
from tests.support.mcp import (
    LIST_TOOLS,
    MCP_ACCEPT,
    assert_is_registry,
    call,
    connect,
    error_of,
    mcp_post,
    ok,
)
from tests.support.processes import start_mcp
from tests.support.tenants import Tenant, new_tenant
from tests.support.tools import require_tool
from tests.support.waiting import wait_until

MODERN = "2026-07-28"
HANDSHAKE_VERSIONS = {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}


def test_remember_then_recall_over_mcp(mcp_url: str, tenant: Tenant) -> None:
    key = tenant.client.key or ""
    saved = asyncio.run(
        call(mcp_url, key, "remember", {"content": "Ship on Fridays", "kind": "fact"})
    )
    assert not saved.is_error
    recalled = asyncio.run(call(mcp_url, key, "recall", {"query": "ship"}))
    items = recalled.structured_content["items"]
    assert [i["memory"]["id"] for i in items] == [saved.structured_content["id"]]


def test_initialize_and_tools_list_publish_the_registry(mcp_url: str, tenant: Tenant) -> None:
    async def scenario() -> tuple[types.ListToolsResult, str, str | None, str | None]:
        async with connect(mcp_url, tenant.client.key or "") as client:
            info = client.server_info
            return (
                await client.list_tools(),
                client.protocol_version,
                info.name if info else None,
                client.instructions,
            )

    listed, version, name, instructions = asyncio.run(scenario())
    assert version in HANDSHAKE_VERSIONS
    assert name == "grove"
    assert instructions == INSTRUCTIONS
    assert listed.next_cursor is None
    assert_is_registry(listed.tools)


def test_round_trip_over_mcp(mcp_url: str, tenant: Tenant) -> None:
    async def scenario() -> None:
        async with connect(mcp_url, tenant.client.key or "") as client:
            saved = ok(
                await client.call_tool(
                    "remember",
                    {"content": "The staging database is called lark", "kind": "fact"},
                ),
                "remember",
            )
            assert saved["version"] == 1
            note = saved["id"]

            recalled = ok(await client.call_tool("recall", {"query": "lark"}), "recall")
            assert [item["memory"]["id"] for item in recalled["items"]] == [note]

            updated = ok(
                await client.call_tool(
                    "update_memory", {"id": note, "content": "The staging database is wren"}
                ),
                "update_memory",
            )
            assert updated["version"] == 2
            assert updated["content"] == "The staging database is wren"
            assert updated["kind"] == "fact"  # omitted fields stay as they were

            got = ok(await client.call_tool("get_memory", {"id": note}), "get_memory")
            assert got["version"] == 2
            assert got["content"] == "The staging database is wren"

            history = ok(await client.call_tool("memory_history", {"id": note}), "memory_history")
            assert [r["version"] for r in history["items"]] == [1, 2]
            assert history["items"][0]["content"] == "The staging database is called lark"

            listed = ok(await client.call_tool("list_memories", {}), "list_memories")
            assert [m["id"] for m in listed["items"]] == [note]

            forgotten = ok(await client.call_tool("forget", {"ids": [note]}), "forget")
            assert forgotten["results"] == [{"id": note, "outcome": "deleted"}]

            gone = error_of(await client.call_tool("get_memory", {"id": note}))
            assert gone["code"] == "not_found"

    asyncio.run(scenario())


def test_invalid_arguments_are_tool_errors_not_protocol_errors(
    mcp_url: str, tenant: Tenant
) -> None:
    async def scenario() -> None:
        async with connect(mcp_url, tenant.client.key or "") as client:
            too_long = error_of(
                await client.call_tool("remember", {"content": "x" * 6001, "kind": "fact"})
            )
            assert too_long["code"] == "validation_error"
            assert [d["field"] for d in too_long["details"]] == ["content"]

            longest = ok(
                await client.call_tool("remember", {"content": "y" * 6000, "kind": "fact"}),
                "remember",
            )
            assert len(longest["content"]) == 6000

            too_many = error_of(
                await client.call_tool("forget", {"ids": [str(uuid.uuid4()) for _ in range(101)]})
            )
            assert too_many["code"] == "validation_error"
            assert [d["field"] for d in too_many["details"]] == ["ids"]

            hundred = [str(uuid.uuid4()) for _ in range(100)]
            outcomes = ok(await client.call_tool("forget", {"ids": hundred}), "forget")
            assert outcomes["results"] == [{"id": i, "outcome": "not_found"} for i in hundred]

            unknown_argument = error_of(
                await client.call_tool("get_memory", {"id": longest["id"], "bogus": 1})
            )
            assert unknown_argument["code"] == "validation_error"
            assert unknown_argument["details"] == [{"field": "bogus", "message": "unknown field"}]

            missing = error_of(await client.call_tool("remember", {"kind": "fact"}))
            assert missing["code"] == "validation_error"
            assert [d["field"] for d in missing["details"]] == ["content"]

            unknown_tool = error_of(await client.call_tool("no_such_tool", {}))
            assert unknown_tool["code"] == "unknown_tool"
            assert "no_such_tool" in unknown_tool["message"]

            # Each error has its own request ID.
            ids = {e["requestId"] for e in (too_long, too_many, unknown_argument, unknown_tool)}
            assert len(ids) == 4

    asyncio.run(scenario())


def test_another_tenants_note_is_not_found(
    each_engine: tuple[embedded.EmbeddedDatabase, str], engine_mcp: str
) -> None:
    """On one server and on the Citus cluster (``each_engine``): the tools that take a
    note's ID, and recall."""
    mcp_url = engine_mcp
    tenant, other = new_tenant(*each_engine), new_tenant(*each_engine)
    foreign = other.client.save("the other tenant's secret")["id"]

    async def scenario() -> None:
        async with connect(mcp_url, tenant.client.key or "") as client:
            for name, arguments in [
                ("get_memory", {"id": foreign}),
                ("update_memory", {"id": foreign, "content": "overwritten"}),
                ("memory_history", {"id": foreign}),
            ]:
                assert error_of(await client.call_tool(name, arguments))["code"] == "not_found"
            forgotten = ok(await client.call_tool("forget", {"ids": [foreign]}), "forget")
            assert forgotten["results"] == [{"id": foreign, "outcome": "not_found"}]
            recalled = ok(await client.call_tool("recall", {"query": "secret"}), "recall")
            assert recalled["items"] == []

    asyncio.run(scenario())
    still = other.client.get(f"/v1/memories/{foreign}").json()["data"]
    assert (still["version"], still["content"]) == (1, "the other tenant's secret")


def test_missing_or_bad_token_is_401_with_resource_metadata(mcp_url: str, tenant: Tenant) -> None:
    origin = mcp_url.removesuffix("/mcp")
    metadata_url = f"{origin}/.well-known/oauth-protected-resource/mcp"

    anonymous = requests.post(mcp_url, json=LIST_TOOLS, headers=MCP_ACCEPT, timeout=30)
    assert anonymous.status_code == 401
    challenge = anonymous.headers["WWW-Authenticate"]
    assert challenge.startswith("Bearer ")
    assert f'resource_metadata="{metadata_url}"' in challenge

    metadata = requests.get(metadata_url, timeout=30)
    assert metadata.status_code == 200
    assert metadata.json()["resource"] == mcp_url

    def post_with(key: str) -> requests.Response:
        headers = {**MCP_ACCEPT, "Authorization": f"Bearer {key}"}
        return requests.post(mcp_url, json=LIST_TOOLS, headers=headers, timeout=30)

    assert post_with("grv_" + "A" * 43).status_code == 401
    assert post_with("not-even-a-key").status_code == 401

    issued = admin.create_key(tenant.database.migration_url, SECRET, tenant.account_id, "gone")
    assert post_with(issued.key).status_code == 200
    assert admin.revoke(tenant.database.migration_url, tenant.account_id, issued.id)
    revoked = post_with(issued.key)
    assert revoked.status_code == 401
    assert "Bearer" in revoked.headers["WWW-Authenticate"]


def test_get_is_405_and_a_foreign_host_is_refused(mcp_url: str, tenant: Tenant) -> None:
    auth = {**MCP_ACCEPT, "Authorization": f"Bearer {tenant.client.key}"}
    get = requests.get(mcp_url, headers=auth, timeout=30)
    assert get.status_code == 405
    assert get.headers["Allow"] == "POST"

    evil = requests.post(
        mcp_url, json=LIST_TOOLS, headers={**auth, "Host": "evil.example"}, timeout=30
    )
    assert 400 <= evil.status_code < 500, evil.status_code
    evil_origin = requests.post(
        mcp_url, json=LIST_TOOLS, headers={**auth, "Origin": "http://evil.example"}, timeout=30
    )
    assert 400 <= evil_origin.status_code < 500, evil_origin.status_code

    # Control: the same request from a local host works, with no session header needed.
    plain = requests.post(mcp_url, json=LIST_TOOLS, headers=auth, timeout=30)
    assert plain.status_code == 200
    assert "Mcp-Session-Id" not in plain.headers
    assert [t["name"] for t in plain.json()["result"]["tools"]] == [t.name for t in TOOLS]


def mcp_workers(port: int) -> list[psutil.Process]:
    """The worker processes of the grove-mcp master that listens on ``port``."""
    for process in psutil.process_iter(["cmdline"]):
        try:
            if not any("grove-mcp" in part for part in process.info["cmdline"] or []):
                continue
            listening = any(
                c.status == psutil.CONN_LISTEN and c.laddr.port == port
                for c in process.net_connections(kind="tcp")
            )
            children = process.children()
            if listening and children:
                return list(children)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return []


def cpu_seconds(workers: list[psutil.Process]) -> dict[int, float]:
    return {w.pid: w.cpu_times().user + w.cpu_times().system for w in workers}


def test_no_session_affinity_across_workers(mcp_url: str, tenant: Tenant) -> None:
    """One legacy session whose every POST is a new connection, plus separate clients.

    Without keep-alive each POST may land on either worker; the session keeps
    working, and both workers' CPU time grows (so both served calls).
    """
    key = tenant.client.key or ""
    note = tenant.client.save("spread across workers")["id"]
    workers = mcp_workers(urlparse(mcp_url).port or 0)
    assert len(workers) == 2, workers

    async def burst() -> None:
        async with connect(mcp_url, key, keepalive=False) as client:
            for _ in range(20):
                got = ok(await client.call_tool("get_memory", {"id": note}), "get_memory")
                assert got["id"] == note
        for _ in range(5):  # separate clients, stateless: no Mcp-Session-Id to carry
            async with connect(mcp_url, key) as client:
                ok(await client.call_tool("list_memories", {}), "list_memories")

    busy: dict[int, float] = dict.fromkeys(cpu_seconds(workers), 0.0)
    for _ in range(8):
        before = cpu_seconds(workers)
        asyncio.run(burst())
        after = cpu_seconds(workers)
        for pid in busy:
            busy[pid] += after[pid] - before[pid]
        # 0.05 s is five clock ticks: far more than an idle worker spends in a burst.
        if sum(seconds >= 0.05 for seconds in busy.values()) >= 2:
            break
    assert sum(seconds >= 0.05 for seconds in busy.values()) >= 2, busy


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_both_protocol_eras(mcp_url: str, tenant: Tenant, mode: str) -> None:
    async def scenario() -> str:
        async with connect(mcp_url, tenant.client.key or "", mode=mode) as client:
            assert_is_registry((await client.list_tools()).tools)
            saved = ok(
                await client.call_tool(
                    "remember", {"content": f"era {mode} marker", "kind": "fact"}
                ),
                "remember",
            )
            recalled = ok(await client.call_tool("recall", {"query": "marker"}), "recall")
            assert [i["memory"]["id"] for i in recalled["items"]] == [saved["id"]]
            missing = error_of(await client.call_tool("get_memory", {"id": str(uuid.uuid4())}))
            assert missing["code"] == "not_found"
            return client.protocol_version

    version = asyncio.run(scenario())
    if mode == "legacy":
        assert version in HANDSHAKE_VERSIONS
    else:
        assert version == MODERN


def test_grants_apply_over_mcp(
    each_engine: tuple[embedded.EmbeddedDatabase, str], engine_mcp: str
) -> None:
    """On one server and on the Citus cluster (``each_engine``)."""
    mcp_url, tenant = engine_mcp, new_tenant(*each_engine)
    notebook = tenant.notebook("work")
    in_notebook = tenant.client.save("notebook only", projectId=notebook)["id"]
    personal = tenant.client.save("personal note")["id"]
    read_only = tenant.key("ro", personal=True, all_notebooks=True, read_only=True).key or ""
    personal_only = tenant.key("mine", personal=True, all_notebooks=False).key or ""

    async def scenario() -> None:
        async with connect(mcp_url, read_only) as client:
            refused = error_of(
                await client.call_tool("remember", {"content": "no", "kind": "fact"})
            )
            assert refused["code"] == "forbidden"
            ok(await client.call_tool("get_memory", {"id": in_notebook}), "get_memory")
        async with connect(mcp_url, personal_only) as client:
            hidden = error_of(await client.call_tool("get_memory", {"id": in_notebook}))
            assert hidden["code"] == "not_found"
            mine = ok(await client.call_tool("get_memory", {"id": personal}), "get_memory")
            assert mine["id"] == personal

    asyncio.run(scenario())
    assert len(tenant.client.get("/v1/memories").json()["data"]["items"]) == 2


# --- MCP Inspector CLI (the reference TypeScript client) ---------------------------------

INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
NETWORK_ERRORS = re.compile(r"ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|network")


def inspector(home: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the Inspector CLI once; the npm cache stays in the user's so reruns are fast."""
    npx = require_tool("npx", "runs the MCP Inspector CLI")
    env = {
        **os.environ,
        "HOME": str(home),
        "npm_config_cache": os.environ.get("npm_config_cache", str(Path.home() / ".npm")),
        "npm_config_update_notifier": "false",
        "NO_COLOR": "1",
    }
    started = time.monotonic()
    done = subprocess.run(
        [npx, "-y", INSPECTOR, "--cli", url, "--transport", "http", *args, "--format", "json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    if done.returncode != 0 and not done.stdout.strip() and NETWORK_ERRORS.search(done.stderr):
        pytest.fail(
            f"npx could not fetch {INSPECTOR} after {time.monotonic() - started:.0f}s"
            f" (network): {done.stderr[-3000:]}"
        )
    return done


def test_mcp_inspector_cli(mcp_url: str, tenant: Tenant, tmp_path: Path) -> None:
    require_tool("npx", "runs the MCP Inspector CLI")
    auth = ("--header", f"Authorization: Bearer {tenant.client.key}")
    listed = inspector(tmp_path, mcp_url, "--method", "tools/list", *auth)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    tools = json.loads(listed.stdout)["result"]["tools"]
    assert [t["name"] for t in tools] == [t.name for t in TOOLS]
    assert [t["inputSchema"] for t in tools] == [t.input_schema() for t in TOOLS]

    note = tenant.client.save("seen by the inspector")["id"]
    args = ("--method", "tools/call", "--tool-name", "get_memory", *auth)
    got = inspector(tmp_path, mcp_url, *args, "--tool-arg", f"id={note}")
    assert got.returncode == 0, got.stdout + got.stderr
    result = json.loads(got.stdout)["result"]
    assert result["isError"] is False
    assert result["structuredContent"]["id"] == note

    anonymous = inspector(tmp_path, mcp_url, "--method", "tools/list")
    assert anonymous.returncode == 3, anonymous.stdout + anonymous.stderr
    assert "auth_required" in anonymous.stdout + anonymous.stderr

    # A tool error must reach the Inspector as a tool error (exit 5), not as a client
    # failure: structured content that breaks the tool's outputSchema is rejected.
    missing = inspector(tmp_path, mcp_url, *args, "--tool-arg", f"id={uuid.uuid4()}")
    assert missing.returncode == 5, missing.stdout + missing.stderr
    assert "not_found" in missing.stdout


def test_an_unreachable_database_answers_503_with_the_envelope(
    database: embedded.EmbeddedDatabase, tenant: Tenant
) -> None:
    """The token check itself needs the database: while grove-mcp cannot reach it, every
    request gets 503 ``unavailable`` in the envelope (never a bare 500), and service
    resumes by itself once the database is back."""
    role = f"grove_app_{uuid.uuid4().hex[:8]}"
    superuser = psycopg.connect(database.superuser_url, autocommit=True)
    superuser.execute(
        f"CREATE ROLE {role} LOGIN NOSUPERUSER NOBYPASSRLS IN ROLE {embedded.RUNTIME_ROLE}"
    )
    env = {
        "GROVE_DATABASE_URL": embedded.role_url(database.runtime_url, role),
        "GROVE_EMBEDDING_PROFILE": "disabled",
        "GROVE_DB_POOL_SIZE": "1",
    }
    mcp = start_mcp(env)
    key = str(tenant.client.key)
    try:
        assert mcp_post(mcp.url, key, LIST_TOOLS).status_code == 200
        superuser.execute(f"ALTER ROLE {role} NOLOGIN")
        superuser.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (role,)
        )
        refused = mcp_post(mcp.url, key, LIST_TOOLS)
        assert refused.status_code == 503, refused.text
        error = refused.json()["error"]
        assert error["code"] == "unavailable" and error["requestId"]
        superuser.execute(f"ALTER ROLE {role} LOGIN")
        wait_until(lambda: mcp_post(mcp.url, key, LIST_TOOLS).status_code == 200, timeout=30)
    finally:
        mcp.stop()
        superuser.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (role,)
        )
        superuser.execute(f"DROP ROLE {role}")
        superuser.close()
