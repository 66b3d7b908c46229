"""The pages that promise features stay true: project memory's page covers each of its
features, tools and limits, and the hosted-chat page names tests that exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from grove_contracts.project_memory import (
    DEFAULT_LIST_LIMIT,
    DEFAULT_RETRIEVE_LIMIT,
    MAX_BODY_BYTES,
    MAX_EMBEDDING_DIMENSIONS,
    MAX_KEY_CHARS,
    MAX_LIST_LIMIT,
    MAX_RETRIEVE_LIMIT,
    MAX_TITLE_CHARS,
    POOL_MAX_REQUEST_BYTES,
    PROJECT_MEMORY_TOOLS,
)

ROOT = Path(__file__).resolve().parents[2]
PROJECT_MEMORY = (ROOT / "docs" / "project-memory.md").read_text()
HOSTED_CHAT = (ROOT / "docs" / "hosted-chat.md").read_text()

FEATURES = [
    "Records",
    "Keys",
    "Authority",
    "Provenance",
    "Expiry",
    "Embeddings",
    "Retrieval",
    "Audit",
    "Limits",
    "MCP tools",
    "The pool's routes",
]


@pytest.mark.parametrize("feature", FEATURES)
def test_project_memory_page_has_a_section_for_each_feature(feature: str) -> None:
    assert f"\n## {feature}\n" in PROJECT_MEMORY


def test_project_memory_page_names_every_tool_route_and_limit() -> None:
    for tool in PROJECT_MEMORY_TOOLS:
        assert f"`{tool.name}`" in PROJECT_MEMORY, tool.name
    for route in ("GET /status", "GET /entry", "PUT /entry", "POST /retrieve", "DELETE /entry"):
        assert route in PROJECT_MEMORY, route
    to = "\N{EN DASH}"  # the page writes ranges with an en dash
    limits = [
        f"1{to}{MAX_KEY_CHARS} characters",
        f"1{to}{MAX_TITLE_CHARS} characters",
        f"{MAX_BODY_BYTES:,} UTF-8 bytes",
        f"1{to}{MAX_EMBEDDING_DIMENSIONS:,} numbers",
        f"1{to}{MAX_LIST_LIMIT} (default {DEFAULT_LIST_LIMIT})",
        f"1{to}{MAX_RETRIEVE_LIMIT} (default {DEFAULT_RETRIEVE_LIMIT})",
        f"{POOL_MAX_REQUEST_BYTES // 1024} KiB",
    ]
    for limit in limits:
        assert limit in PROJECT_MEMORY, limit


def test_the_hosted_chat_page_names_tests_that_exist() -> None:
    named = re.findall(r"`(tests/[\w/]+\.py)::(test_\w+)`", HOSTED_CHAT)
    also = re.findall(r"`::(test_\w+)`", HOSTED_CHAT)  # more tests of the file named before
    assert len(named) >= 4 and also
    defined: dict[str, set[str]] = {}
    for path, name in named:
        tree = ast.parse((ROOT / path).read_text())
        defined[path] = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert name in defined[path], f"{path}::{name}"
    everything = set().union(*defined.values())
    assert set(also) <= everything, set(also) - everything
