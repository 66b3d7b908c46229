"""Tool listings and tool results in MCP's terms.

The stdio bridge (``clients/mcp-bridge``) gives its results in the same shapes;
``tests/integration/test_bridge.py`` compares them.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

from grove_contracts.tools import TOOLS, Tool


def mcp_tool(tool: Tool) -> types.Tool:
    """A registry tool as MCP publishes it."""
    hints = tool.annotations()
    return types.Tool(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema=tool.input_schema(),
        output_schema=tool.output_schema(),
        annotations=types.ToolAnnotations(
            title=hints["title"],
            read_only_hint=hints["readOnlyHint"],
            destructive_hint=hints["destructiveHint"],
            idempotent_hint=hints["idempotentHint"],
            open_world_hint=hints["openWorldHint"],
        ),
    )


def tool_list() -> types.ListToolsResult:
    """Every registry tool."""
    return types.ListToolsResult(tools=[mcp_tool(tool) for tool in TOOLS])


async def list_tools(
    ctx: Any, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    """The ``tools/list`` handler of the service."""
    return tool_list()


def success(data: dict[str, Any]) -> types.CallToolResult:
    """A result with ``structuredContent`` and the same JSON as text."""
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(data, ensure_ascii=False))],
        structured_content=data,
    )


def failure(
    code: str,
    message: str,
    request_id: str,
    details: list[dict[str, str]] | None = None,
    extra: dict[str, str] | None = None,
) -> types.CallToolResult:
    """A tool error the model can read and act on (``isError: true``), not a protocol error.

    The error is JSON text only: ``structuredContent`` must match the tool's output
    schema, and clients such as the MCP Inspector check it on errors too.
    """
    error: dict[str, Any] = {"code": code, "message": message, "requestId": request_id}
    if details:
        error["details"] = details
    error.update(extra or {})
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps({"error": error}, ensure_ascii=False))],
        is_error=True,
    )
