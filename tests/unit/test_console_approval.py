"""What the approval page says an agent tried, and the grants it proposes."""

from __future__ import annotations

import json
import uuid
from typing import Any

from grove_console.access import proposed_grants, tried
from grove_mcp.app import _attempt

NOTEBOOK = "0b7c5a3e-7b43-4b8e-9a55-0d5f3c1b2a10"
NAMES = {NOTEBOOK: "Runbooks"}


def test_a_save_in_a_notebook_proposes_that_notebook_with_write_only_there() -> None:
    attempts = [{"tool": "remember", "capability": "write", "projectId": NOTEBOOK}]
    assert tried(attempts, NAMES) == [
        "save or change notes in the notebook Runbooks (its “remember” tool)"
    ]
    assert proposed_grants(attempts, NAMES) == {
        "personal": False,
        "allProjects": False,
        "projectIds": [NOTEBOOK],
        "capabilities": ["memory:read", "memory:write"],
    }


def test_without_attempts_the_proposal_is_personal_notes_read_only() -> None:
    assert tried([], NAMES) == []
    assert proposed_grants([], NAMES) == {
        "personal": True,
        "allProjects": False,
        "projectIds": [],
        "capabilities": ["memory:read"],
    }


def test_a_notebook_the_owner_does_not_have_is_never_proposed() -> None:
    other = "5e0e3a51-53f5-4a3c-8f5b-1a8e0f0f6b11"
    attempts: list[dict[str, Any]] = [
        {"tool": "forget", "capability": "delete", "projectId": None},
        {"tool": "search_memories", "capability": "read", "projectId": other},
    ]
    grants = proposed_grants(attempts, NAMES)
    assert grants["projectIds"] == [] and grants["personal"] is True
    assert grants["capabilities"] == ["memory:read", "memory:delete"]
    assert tried(attempts, NAMES)[1] == "read notes in a notebook (its “search_memories” tool)"


def call(name: object, arguments: object = None) -> bytes:
    params = {"name": name, **({"arguments": arguments} if arguments is not None else {})}
    return json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    ).encode()


def test_only_a_known_tools_call_is_an_attempt() -> None:
    assert _attempt(call("remember", {"content": "x", "projectId": NOTEBOOK})) == (
        "remember",
        "write",
        uuid.UUID(NOTEBOOK),
    )
    assert _attempt(call("forget", {"ids": []})) == ("forget", "delete", None)
    assert _attempt(call("recall", {"projectId": "not an id"})) == ("recall", "read", None)
    for body in (
        call("made_up_tool"),
        call(["remember"]),
        b"not json",
        json.dumps({"method": "initialize", "params": {}}).encode(),
        json.dumps([1, 2]).encode(),
    ):
        assert _attempt(body) is None, body
