"""MCP over HTTP as the benchmarks' clients speak it: reading a tool call's answer."""

from __future__ import annotations

import json
from typing import Any

import requests


def mcp_result(response: requests.Response) -> dict[str, Any] | None:
    """The ``result`` of a JSON-RPC answer, sent as JSON or as an event stream."""
    text = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        lines = [line[5:] for line in text.splitlines() if line.startswith("data:")]
        text = lines[-1] if lines else "{}"
    try:
        result = json.loads(text).get("result")
    except ValueError:
        return None
    return result if isinstance(result, dict) else None
