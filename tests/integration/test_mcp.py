"""The MCP service with the SDK's own Streamable HTTP client."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.integration.conftest import Tenant


async def call(url: str, key: str, name: str, arguments: dict[str, Any]) -> Any:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
    ):
        return await client.call_tool(name, arguments)


def test_remember_then_recall_over_mcp(mcp_url: str, tenant: Tenant) -> None:
    key = tenant.client.key or ""
    saved = asyncio.run(
        call(mcp_url, key, "remember", {"content": "Ship on Fridays", "kind": "fact"})
    )
    assert not saved.is_error
    recalled = asyncio.run(call(mcp_url, key, "recall", {"query": "ship"}))
    items = recalled.structured_content["items"]
    assert [i["memory"]["id"] for i in items] == [saved.structured_content["id"]]
