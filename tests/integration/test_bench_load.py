"""A short run of the load benchmark's locust users against the real api and mcp."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import load
from tests.support.tenants import Tenant


@pytest.mark.parametrize("target", ["api", "mcp"])
def test_the_load_benchmark_runs_without_errors(
    target: str, api_url: str, mcp_url: str, tenant: Tenant, tmp_path: Path
) -> None:
    texts = tmp_path / "texts.json"
    texts.write_text(json.dumps(["Ana adopted a kitten", "Ben plays the cello"]))
    host, user = (api_url, "ApiUser") if target == "api" else (mcp_url[: -len("/mcp")], "McpUser")
    rows = load.locust(host, user, tenant.client.key or "", texts, users=2, seconds=3)
    total = rows["Aggregated"]
    assert total["requests"] > 10
    assert total["failures"] == 0
    names = {"api": {"recall", "save", "list"}, "mcp": {"recall", "remember", "list_memories"}}
    assert names[target] <= set(rows)
    assert "Aggregated" in load.table({target: rows})
