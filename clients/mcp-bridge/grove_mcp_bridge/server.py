"""The stdio MCP server: the API's tools, each call forwarded to ``POST /v1/tools/{tool}``.

It needs ``GROVE_API_URL`` and ``GROVE_API_KEY`` and nothing else: no database, no
credentials beyond the key. ``GROVE_BRIDGE_CAPTURE=paused`` is the host's own switch for
automatic capture: while it is set, a ``capture: "automatic"`` save is refused here, with
the error the server gives when it has capture paused, and never reaches the API.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR

from grove_mcp_bridge import __version__
from grove_mcp_bridge.api import ApiError, GroveApi, Registry
from grove_mcp_bridge.results import failure, success

CAPTURE_SETTING = "GROVE_BRIDGE_CAPTURE"
CAPTURE_VALUES = ("on", "paused")


@dataclass(frozen=True)
class BridgeSettings:
    """The bridge's configuration, from its environment."""

    api_url: str
    key: str
    capture_paused: bool

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> BridgeSettings:
        """Read the settings; a missing or bad value stops the bridge with one line."""
        api_url = environ.get("GROVE_API_URL", "").strip()
        key = environ.get("GROVE_API_KEY", "").strip()
        if not api_url or not key:
            sys.exit("grove-mcp-bridge: set GROVE_API_URL and GROVE_API_KEY")
        capture = environ.get(CAPTURE_SETTING, "on").strip() or "on"
        if capture not in CAPTURE_VALUES:
            sys.exit(f"grove-mcp-bridge: {CAPTURE_SETTING} must be 'on' or 'paused'")
        return cls(api_url, key, capture_paused=capture == "paused")


class Bridge:
    """Lists the API's tools and forwards their calls.

    The registry is fetched once and kept; while the API cannot give it (down, a bad
    key, an API without ``/v1/tools``), each listing and call asks again and answers
    why it could not.
    """

    def __init__(self, api: GroveApi, capture_paused: bool) -> None:
        self._api = api
        self._capture_paused = capture_paused
        self._registry: Registry | None = None

    async def registry(self) -> Registry:
        """The API's registry; raises ``ApiError`` while the API cannot give it."""
        if self._registry is None:
            self._registry = await self._api.registry(uuid.uuid4().hex)
        return self._registry

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        try:
            registry = await self.registry()
        except ApiError as ex:
            raise MCPError(INTERNAL_ERROR, f"{ex.code}: {ex.message}") from ex
        return types.ListToolsResult(tools=list(registry.tools.values()))

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await self.forward(params.name, dict(params.arguments or {}))

    async def forward(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """One call to the API, as an MCP tool result. Only a tool of the registry is
        sent: its name becomes part of the URL's path."""
        request_id = uuid.uuid4().hex
        try:
            registry = await self.registry()
        except ApiError as ex:
            message = ex.message
            if ex.code == "unsupported_by_server":  # an API older than /v1/tools
                message = f"this Grove API does not offer {name[:100]!r}"
            return failure(ex.code, message, ex.request_id, ex.details)
        if name not in registry.tools:
            return failure("unknown_tool", f"no tool is named {name[:100]!r}", request_id)
        if self._capture_paused and arguments.get("capture") == "automatic":
            return failure(
                "automatic_capture_paused",
                f"automatic capture is paused on this host ({CAPTURE_SETTING}=paused);"
                ' save with capture "explicit" only when the user asked for it',
                request_id,
            )
        try:
            return success(await self._api.call(name, arguments, request_id))
        except ApiError as ex:
            return failure(ex.code, ex.message, ex.request_id, ex.details)


async def serve(settings: BridgeSettings) -> None:
    """Serve MCP on standard input and output until the host closes them."""
    api = GroveApi(settings.api_url, settings.key)
    bridge = Bridge(api, settings.capture_paused)
    try:
        # The instructions go out at initialization: fetch them first. An API that
        # cannot answer yet does not stop the bridge; its tools load on first use.
        instructions = (await bridge.registry()).instructions
    except ApiError:
        instructions = None
    server: Server[Any] = Server(
        "grove",
        version=__version__,
        instructions=instructions,
        on_list_tools=bridge.list_tools,
        on_call_tool=bridge.call_tool,
    )
    try:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        await api.aclose()


def main() -> None:
    """Entry point of ``grove-mcp-bridge``."""
    anyio.run(serve, BridgeSettings.from_environment(os.environ))
