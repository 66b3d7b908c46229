"""Calling grove-mcp as an agent does: the MCP SDK's Streamable HTTP client with a
bearer credential, and the checks every tool result gets (its structured content, the
same JSON as text, valid per the tool's output model; or an ``isError`` envelope)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from grove_contracts.tools import TOOLS_BY_NAME


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
