"""Locust users for ``bench.load``: 70% recall, 20% save, 10% list, over REST or MCP.

``GROVE_BENCH_KEY`` is the API key; the host is the api's base URL (``ApiUser``) or the
mcp's origin (``McpUser``: JSON-RPC ``tools/call`` on stateless ``/mcp``). Queries and
notes are LoCoMo texts passed in ``GROVE_BENCH_TEXTS`` (a JSON file).
"""

from __future__ import annotations

import itertools
import json
import os
import random
from typing import Any

from locust import HttpUser, constant, task

KEY = os.environ.get("GROVE_BENCH_KEY", "")
TEXTS: list[str] = json.loads(open(os.environ["GROVE_BENCH_TEXTS"]).read())
IDS = itertools.count(1)


def _text() -> str:
    return random.choice(TEXTS)  # noqa: S311 - load mix, not cryptography


class ApiUser(HttpUser):
    """REST: POST /v1/recall, POST /v1/memories, GET /v1/memories."""

    wait_time = constant(0)

    def on_start(self) -> None:
        self.client.headers["Authorization"] = f"Bearer {KEY}"

    @task(7)
    def recall(self) -> None:
        self.client.post("/v1/recall", json={"query": _text()}, name="recall")

    @task(2)
    def save(self) -> None:
        self.client.post("/v1/memories", json={"content": _text(), "kind": "fact"}, name="save")

    @task(1)
    def list(self) -> None:
        self.client.get("/v1/memories?limit=20", name="list")


class McpUser(HttpUser):
    """MCP: ``tools/call`` of recall, remember and list_memories on stateless /mcp."""

    wait_time = constant(0)

    def on_start(self) -> None:
        self.client.headers.update(
            {
                "Authorization": f"Bearer {KEY}",
                "Accept": "application/json, text/event-stream",
                "Content-Type": "application/json",
                "MCP-Protocol-Version": "2025-06-18",
            }
        )

    def _call(self, tool: str, arguments: dict[str, Any]) -> None:
        body = {
            "jsonrpc": "2.0",
            "id": next(IDS),
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        with self.client.post("/mcp", json=body, name=tool, catch_response=True) as response:
            result = response.json().get("result", {}) if response.ok else {}
            if not response.ok or result.get("isError"):
                response.failure(f"{tool}: {response.status_code} {response.text[:200]}")

    @task(7)
    def recall(self) -> None:
        self._call("recall", {"query": _text()})

    @task(2)
    def save(self) -> None:
        self._call("remember", {"content": _text(), "kind": "fact"})

    @task(1)
    def list(self) -> None:
        self._call("list_memories", {"limit": 20})
