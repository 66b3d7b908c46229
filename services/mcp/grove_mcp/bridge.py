"""``grove-mcp-stdio``: an MCP server on stdio that forwards every call to the REST API.

It needs only ``GROVE_API_URL`` and ``GROVE_API_KEY``: no database, no credentials
beyond the key, and it imports nothing from ``grove_db`` or ``grove_memory`` (a test
holds it to that). Tools come from the shared registry; each call of one of them is
``POST {GROVE_API_URL}/v1/tools/{name}`` (any other name is refused without a request),
and API errors come back as ``isError``.
"""

from __future__ import annotations

import os
import sys
import uuid
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
import requests
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server

from grove_contracts.tools import INSTRUCTIONS, TOOLS_BY_NAME
from grove_mcp.results import failure, list_tools, success

TIMEOUT_SECONDS = 60


class Forwarder:
    """Calls the REST tool endpoint with the key."""

    def __init__(self, api_url: str, key: str) -> None:
        self._url = api_url.rstrip("/") + "/v1/tools/"
        self._session = requests.Session()
        self._session.headers["Authorization"] = f"Bearer {key}"

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        return await anyio.to_thread.run_sync(self.forward, params.name, arguments)

    def forward(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """One call to the API, as an MCP tool result. Only a tool of the registry is
        sent: its name becomes part of the URL's path."""
        request_id = uuid.uuid4().hex
        if name not in TOOLS_BY_NAME:
            return failure("unknown_tool", f"no tool is named {name[:100]!r}", request_id)
        try:
            response = self._session.post(
                self._url + name,
                json=arguments,
                timeout=TIMEOUT_SECONDS,
                headers={"X-Request-Id": request_id},
            )
            body = response.json()
        except (requests.RequestException, ValueError) as ex:
            return failure(
                "unavailable", f"the Grove API did not answer: {type(ex).__name__}", request_id
            )
        if body.get("success") is True:
            return success(body["data"])
        error = body.get("error") or {}
        code, message = error.get("code", "internal"), error.get("message", "refused")
        if response.status_code == 404 and (code == "unknown_tool" or _route_missing(message)):
            code, message = "unsupported_by_server", f"this Grove API does not offer {name!r}"
        return failure(code, message, error.get("requestId", request_id), error.get("details"))


def _route_missing(message: str) -> bool:
    # An API older than /v1/tools answers its generic route-not-found title.
    return message == "404 Not Found"


def main() -> None:
    """Entry point of ``grove-mcp-stdio``."""
    api_url = os.environ.get("GROVE_API_URL", "").strip()
    key = os.environ.get("GROVE_API_KEY", "").strip()
    if not api_url or not key:
        sys.exit("grove-mcp-stdio: set GROVE_API_URL and GROVE_API_KEY")
    forwarder = Forwarder(api_url, key)
    server: Server[Any] = Server(
        "grove",
        version="0.1.0",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=forwarder.call_tool,
    )

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(run)
