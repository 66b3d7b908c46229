"""Tool results in MCP's terms, as grove-mcp gives them.

The same shapes as ``grove_mcp.results`` of the server: the bridge ships without the
server, so it keeps its own copy (``tests/integration/test_bridge.py`` compares them).
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types


def success(data: dict[str, Any]) -> types.CallToolResult:
    """A result with ``structuredContent`` and the same JSON as text."""
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(data, ensure_ascii=False))],
        structured_content=data,
    )


def failure(
    code: str, message: str, request_id: str, details: list[dict[str, str]] | None = None
) -> types.CallToolResult:
    """A tool error the model can read and act on (``isError: true``), as JSON text
    ``{"error": {code, message, requestId, details?}}``."""
    error: dict[str, Any] = {"code": code, "message": message, "requestId": request_id}
    if details:
        error["details"] = details
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps({"error": error}, ensure_ascii=False))],
        is_error=True,
    )
