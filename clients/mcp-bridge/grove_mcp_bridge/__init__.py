"""``grove-mcp-bridge``: Grove's agent tools on stdio, forwarded to the REST API.

A distribution of its own (the MCP SDK and its HTTP client only), so a host that speaks
only stdio, Claude Desktop say, runs it with ``uvx`` or ``pipx`` without installing the
server. It takes the tool registry from the API it forwards to (``GET /v1/tools``).
"""

from __future__ import annotations

__version__ = "0.1.0"
