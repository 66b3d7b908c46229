"""Calling grove-mcp as an agent does: the MCP SDK's Streamable HTTP client with a
bearer credential, and the checks every tool result gets (its structured content, the
same JSON as text, valid per the tool's output model; or an ``isError`` envelope); and
raw JSON-RPC posts to /mcp for what no SDK client would send."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import mcp_types as types
import requests
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from grove_contracts.tools import TOOLS, TOOLS_BY_NAME
from tests.support.schemas import undescribed

MCP_ACCEPT = {"Accept": "application/json, text/event-stream"}
#: The protocol version header raw requests send.
PROTOCOL = {"MCP-Protocol-Version": "2025-11-25"}
INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "grove-tests", "version": "1.0"},
    },
}
LIST_TOOLS: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
DESCRIBED = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")


@asynccontextmanager
async def connect(
    url: str, key: str, mode: str = "legacy", keepalive: bool = True
) -> AsyncIterator[Client]:
    """An SDK client with the key; without keep-alive each POST opens a new TCP connection."""
    limits = httpx2.Limits(max_keepalive_connections=0) if not keepalive else None
    options: dict[str, Any] = {"limits": limits} if limits is not None else {}
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, **options) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client


def text_json(result: types.CallToolResult) -> Any:
    """The JSON in the result's single text content block."""
    texts = [block for block in result.content if isinstance(block, types.TextContent)]
    assert len(texts) == 1, result
    return json.loads(texts[0].text)


def ok(result: types.CallToolResult, tool: str) -> dict[str, Any]:
    """A successful result: structured content, the same JSON as text, valid per the tool."""
    assert not result.is_error, result
    data = result.structured_content
    assert isinstance(data, dict), result
    assert text_json(result) == data
    TOOLS_BY_NAME[tool].output_model.model_validate(data)
    return data


def error_of(result: types.CallToolResult) -> dict[str, Any]:
    """The error of an ``isError`` result: {code, message, requestId[, details]}.

    Read from the JSON text; structured content, when present, must say the same.
    """
    assert result.is_error is True, result
    error = text_json(result)["error"]
    if result.structured_content is not None:
        assert result.structured_content == {"error": error}
    assert isinstance(error["code"], str) and error["code"]
    assert isinstance(error["message"], str) and error["message"]
    assert isinstance(error["requestId"], str) and error["requestId"]
    return error  # type: ignore[no-any-return]


def mcp_post(url: str, token: str, body: Any, **headers: str) -> requests.Response:
    """One JSON-RPC POST to /mcp outside any SDK client: ``body`` is an object, or the
    raw text to send."""
    data = body if isinstance(body, str) else json.dumps(body)
    sent = {
        **MCP_ACCEPT,
        "Content-Type": "application/json",
        "Authorization": f"Bearer {token}",
        **headers,
    }
    return requests.post(url, data=data, headers=sent, timeout=30)


async def call(url: str, key: str, name: str, arguments: dict[str, Any]) -> Any:
    """One tool call on a connection of its own."""
    async with connect(url, key) as client:
        return await client.call_tool(name, arguments)


def published(tool: types.Tool) -> dict[str, Any]:
    """A listed tool in the wire's camelCase, comparable with ``Tool.describe()``."""
    dumped = tool.model_dump(by_alias=True, exclude_none=True, mode="json")
    return {key: dumped.get(key) for key in DESCRIBED}


def assert_is_registry(tools: list[types.Tool]) -> None:
    """The listed tools are exactly the registry's, field for field, and every argument
    has its description."""
    assert [tool.name for tool in tools] == [tool.name for tool in TOOLS]
    for listed, tool in zip(tools, TOOLS, strict=True):
        assert published(listed) == tool.describe(), tool.name
        assert undescribed(listed.input_schema) == [], tool.name
        assert listed.title and listed.description
        annotations = listed.annotations
        assert annotations is not None
        assert annotations.read_only_hint is tool.read_only
        assert annotations.destructive_hint is tool.destructive
        assert annotations.idempotent_hint is tool.idempotent
        assert annotations.open_world_hint is False
        assert listed.input_schema["type"] == "object"
        assert listed.output_schema is not None and listed.output_schema["type"] == "object"


@asynccontextmanager
async def agent_session(
    url: str, token: str, mode: str = "legacy", name: str = "Test Agent", version: str = "1.2.3"
) -> AsyncIterator[Client]:
    """An MCP SDK client with a bearer token that calls itself ``name`` ``version`` (its
    clientInfo)."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(
            streamable_http_client(url, http_client=http),
            mode=mode,
            client_info=types.Implementation(name=name, version=version),
        ) as client,
    ):
        yield client
