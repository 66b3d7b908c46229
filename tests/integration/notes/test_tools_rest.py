"""The registry over REST: ``GET /v1/tools`` and ``POST /v1/tools/{tool}``."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import requests

from grove_contracts.tools import INSTRUCTIONS, TOOLS, TOOLS_BY_NAME
from tests.support.clients import Client, data_of, error_of
from tests.support.schemas import undescribed
from tests.support.tenants import Tenant


def tool(client: Client, name: str, arguments: Any) -> requests.Response:
    return client.post(f"/v1/tools/{name}", arguments)


def tool_data(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A successful tool call: 200 and data valid against the tool's output model."""
    response = tool(client, name, arguments)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = data_of(response)
    TOOLS_BY_NAME[name].output_model.model_validate(data)
    return data


def test_get_tools_lists_the_registry(tenant: Tenant) -> None:
    response = tenant.client.get("/v1/tools")
    assert response.status_code == 200, response.text
    listed = data_of(response)["tools"]
    # JSON round trip: what a client sees equals what the registry describes.
    assert listed == json.loads(json.dumps([t.describe() for t in TOOLS]))
    # The server's instructions too: the stdio bridge sends them at initialization.
    assert data_of(response)["instructions"] == INSTRUCTIONS
    assert len({t["name"] for t in listed}) == len(TOOLS)
    for described in listed:
        assert undescribed(described["inputSchema"]) == [], described["name"]


def test_tool_endpoints_need_a_key(api_url: str) -> None:
    anonymous = Client(api_url, None)
    for response in (
        anonymous.get("/v1/tools"),
        tool(anonymous, "remember", {"content": "x", "kind": "fact"}),
        tool(anonymous, "no_such_tool", {}),
        Client(api_url, "grv_" + "B" * 43).get("/v1/tools"),
    ):
        assert response.status_code == 401, response.text
        assert error_of(response)["code"] == "unauthorized"


def test_remember_tool_saves_like_post_memories(tenant: Tenant) -> None:
    via_tool = tool(
        tenant.client, "remember", {"content": "Deploys need two reviews", "kind": "decision"}
    )
    assert via_tool.status_code == 200, via_tool.text  # the tool endpoint answers 200, not 201
    saved = data_of(via_tool)
    TOOLS_BY_NAME["remember"].output_model.model_validate(saved)
    via_rest = tenant.client.save("Deploys need three reviews", "decision")
    assert set(saved) == set(via_rest) | {"similar"}
    assert (saved["kind"], saved["version"], saved["capture"]) == ("decision", 1, "explicit")
    stored = data_of(tenant.client.get(f"/v1/memories/{saved['id']}"))
    assert {**stored, "similar": []} == saved


def test_round_trip_through_tool_endpoints(tenant: Tenant) -> None:
    client = tenant.client
    note = tool_data(client, "remember", {"content": "Cache keys use sha256", "kind": "fact"})["id"]
    recalled = tool_data(client, "recall", {"query": "sha256"})
    assert [i["memory"]["id"] for i in recalled["items"]] == [note]
    updated = tool_data(client, "update_memory", {"id": note, "content": "Cache keys use blake3"})
    assert (updated["version"], updated["content"], updated["kind"]) == (
        2,
        "Cache keys use blake3",
        "fact",
    )
    assert tool_data(client, "get_memory", {"id": note})["version"] == 2
    history = tool_data(client, "memory_history", {"id": note})
    assert [r["version"] for r in history["items"]] == [1, 2]
    found = tool_data(client, "search_memories", {"query": "blake3"})
    assert [i["memory"]["id"] for i in found["items"]] == [note]
    assert [m["id"] for m in tool_data(client, "list_memories", {})["items"]] == [note]
    notebook = tool_data(client, "create_notebook", {"name": "infra"})
    listed = tool_data(client, "list_notebooks", {})
    assert [n["id"] for n in listed["items"]] == [notebook["id"]]
    forgotten = tool_data(client, "forget", {"ids": [note]})
    assert forgotten["results"] == [{"id": note, "outcome": "deleted"}]
    gone = tool(client, "get_memory", {"id": note})
    assert gone.status_code == 404
    assert error_of(gone)["code"] == "not_found"


def test_validation_errors_are_400_with_details(tenant: Tenant) -> None:
    client = tenant.client

    def invalid(name: str, arguments: Any) -> list[dict[str, str]]:
        response = tool(client, name, arguments)
        assert response.status_code == 400, response.text
        error = error_of(response)
        assert error["code"] == "validation_error"
        return error.get("details", [])  # type: ignore[no-any-return]

    assert [d["field"] for d in invalid("remember", {"content": "x" * 6001, "kind": "fact"})] == [
        "content"
    ]
    longest = tool_data(client, "remember", {"content": "z" * 6000, "kind": "fact"})
    assert len(longest["content"]) == 6000
    # Trimming happens first: 6,000 characters inside whitespace still fit.
    padded = tool_data(client, "remember", {"content": "  " + "w" * 6000 + "\n", "kind": "fact"})
    assert len(padded["content"]) == 6000

    ids = [str(uuid.uuid4()) for _ in range(101)]
    assert [d["field"] for d in invalid("forget", {"ids": ids})] == ["ids"]
    outcomes = tool_data(client, "forget", {"ids": ids[:100]})
    assert outcomes["results"] == [{"id": i, "outcome": "not_found"} for i in ids[:100]]

    assert invalid("get_memory", {"id": longest["id"], "bogus": True}) == [
        {"field": "bogus", "message": "unknown field"}
    ]
    assert [d["field"] for d in invalid("get_memory", {"id": "not-a-uuid"})] == ["id"]
    assert [d["field"] for d in invalid("remember", {"kind": "fact"})] == ["content"]
    assert invalid("remember", ["not", "an", "object"]) == []

    bad_json = client.post(
        "/v1/tools/remember", data=b"{nope", headers={"Content-Type": "application/json"}
    )
    assert bad_json.status_code == 400
    assert error_of(bad_json)["code"] == "invalid_json"


def test_unknown_tool_is_404_unknown_tool(tenant: Tenant) -> None:
    response = tool(tenant.client, "no_such_tool", {})
    assert response.status_code == 404
    error = error_of(response)
    assert error["code"] == "unknown_tool"
    assert "no_such_tool" in error["message"]


def test_grants_apply_to_tool_endpoints(tenant: Tenant, make_tenant: Callable[[], Tenant]) -> None:
    victim = make_tenant()
    foreign = victim.client.save("someone else's")["id"]

    def theirs() -> tuple[Any, Any]:
        """The victim's note and its revisions, as the victim reads them."""
        return (
            data_of(victim.client.get(f"/v1/memories/{foreign}")),
            data_of(victim.client.get(f"/v1/memories/{foreign}/revisions"))["items"],
        )

    before = theirs()
    for name, arguments in [
        ("get_memory", {"id": foreign}),
        ("update_memory", {"id": foreign, "content": "mine now"}),
    ]:
        response = tool(tenant.client, name, arguments)
        assert response.status_code == 404, response.text
        assert error_of(response)["code"] == "not_found"
    assert theirs() == before
    assert (before[0]["version"], before[0]["content"]) == (1, "someone else's")

    read_only = tenant.key("ro", personal=True, all_notebooks=True, read_only=True)
    refused = tool(read_only, "remember", {"content": "nope", "kind": "fact"})
    assert refused.status_code == 403, refused.text
    assert error_of(refused)["code"] == "forbidden"
    assert tool(read_only, "list_memories", {}).status_code == 200
