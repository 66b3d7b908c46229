"""Who saved what: every revision records the owner or the connection that wrote it, a
note shows its current revision's (``savedBy``), and listing and search filter by it."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from grove_db import embedded
from grove_db.pool import set_tenant
from tests.support.clients import Client, data_of, error_of
from tests.support.mcp import connect
from tests.support.owners import AUDIENCE, McpStack, OwnedAccount, mcp_stack, owned_tenant


@pytest.fixture(scope="module")
def stack(database: embedded.EmbeddedDatabase) -> Iterator[McpStack]:
    with mcp_stack(database, mcp_workers=1) as started:
        yield started


@pytest.fixture
def account(stack: McpStack) -> OwnedAccount:
    return OwnedAccount(stack, *owned_tenant(stack.database, stack.api.url))


def connections(account: OwnedAccount) -> dict[str, dict[str, Any]]:
    """The account's connections as its owner lists them, by ID."""
    return {c["id"]: c for c in data_of(account.session.get("/v1/connections"))["items"]}


def key_connection(account: OwnedAccount) -> str:
    """The connection of the account's full-access key (named "full")."""
    (found,) = [str(c["id"]) for c in connections(account).values() if c["name"] == "full"]
    return found


def note(client: Client, note_id: str) -> dict[str, Any]:
    return data_of(client.get(f"/v1/memories/{note_id}"))  # type: ignore[no-any-return]


def revisions(client: Client, note_id: str) -> list[dict[str, Any]]:
    return data_of(client.get(f"/v1/memories/{note_id}/revisions"))["items"]  # type: ignore[no-any-return]


def listed(client: Client, **params: Any) -> set[str]:
    response = client.get("/v1/memories", params={"limit": 100, **params})
    assert response.status_code == 200, response.text
    return {item["id"] for item in data_of(response)["items"]}


def searched(client: Client, query: str, **fields: Any) -> set[str]:
    response = client.post("/v1/memories/search", {"query": query, **fields})
    assert response.status_code == 200, response.text
    return {item["memory"]["id"] for item in data_of(response)["items"]}


def by_connection(connection_id: str, name: str, revoked: bool = False) -> dict[str, Any]:
    return {"kind": "connection", "connectionId": connection_id, "name": name, "revoked": revoked}


OWNER = {"kind": "owner", "connectionId": None, "name": None, "revoked": False}


def test_a_keys_save_names_the_keys_connection(account: OwnedAccount) -> None:
    connection = key_connection(account)
    response = account.key.post("/v1/memories", {"content": "The VPN is WireGuard", "kind": "fact"})
    assert response.status_code == 201, response.text
    saved = data_of(response)
    assert saved["savedBy"] == by_connection(connection, "full")
    assert note(account.key, saved["id"])["savedBy"] == by_connection(connection, "full")
    assert note(account.session, saved["id"])["savedBy"] == by_connection(connection, "full")
    assert [r["savedBy"] for r in revisions(account.session, saved["id"])] == [
        by_connection(connection, "full")
    ]


def test_the_owners_correction_says_owner_and_each_revision_keeps_its_saver(
    account: OwnedAccount,
) -> None:
    connection = key_connection(account)
    saved = account.key.save("Standup is at 9:30")
    corrected = account.session.patch(f"/v1/memories/{saved['id']}", {"content": "Standup: 9:45"})
    assert corrected.status_code == 200, corrected.text
    assert data_of(corrected)["savedBy"] == OWNER
    assert note(account.key, saved["id"])["savedBy"] == OWNER
    assert [r["savedBy"] for r in revisions(account.key, saved["id"])] == [
        by_connection(connection, "full"),
        OWNER,
    ]
    # Bringing back version 1 is the owner's save too, though it restores the key's words.
    restored = account.session.post("/v1/tools/restore_memory", {"id": saved["id"], "version": 1})
    assert restored.status_code == 200, restored.text
    assert data_of(restored)["savedBy"] == OWNER
    assert data_of(restored)["content"] == "Standup is at 9:30"
    # The owner's own new note.
    assert account.session.save("Mine")["savedBy"] == OWNER


def test_a_batch_and_a_move_record_the_connection_that_made_them(account: OwnedAccount) -> None:
    connection = key_connection(account)
    other = account.tenant.key("mover", personal=True, all_notebooks=True)
    mover = next(c["id"] for c in connections(account).values() if c["name"] == "mover")
    response = account.key.post(
        "/v1/memories/batch", {"items": [{"content": "batched", "kind": "fact"}]}
    )
    assert response.status_code == 200, response.text
    (item,) = data_of(response)["items"]
    assert item["memory"]["savedBy"] == by_connection(connection, "full")
    notebook = account.tenant.notebook("moved here")
    moved = other.post(
        "/v1/tools/move_memories", {"ids": [item["memory"]["id"]], "projectId": notebook}
    )
    assert moved.status_code == 200, moved.text
    assert data_of(moved)["items"][0]["savedBy"] == by_connection(mover, "mover")


def test_an_mcp_agents_save_names_the_approved_agent(
    stack: McpStack, account: OwnedAccount
) -> None:
    token = stack.provider.token(account.subject, aud=AUDIENCE, client_id="notes-agent")

    async def call(name: str, arguments: dict[str, Any]) -> Any:
        async with connect(stack.mcp.url, token) as client:
            return await client.call_tool(name, arguments)

    refused = asyncio.run(call("remember", {"content": "c", "kind": "fact"}))
    assert refused.is_error
    (agent,) = [c for c in connections(account).values() if c["clientId"] == "notes-agent"]
    approved = account.session.post(
        f"/v1/connections/requests/{agent['pendingRequest']['id']}/approve",
        {"grants": {"personal": True, "capabilities": ["memory:read", "memory:write"]}},
    )
    assert approved.status_code == 200, approved.text
    result = asyncio.run(call("remember", {"content": "The agent wrote this", "kind": "fact"}))
    assert not result.is_error, result
    saved = result.structured_content
    assert saved["savedBy"] == by_connection(agent["id"], agent["name"])
    assert note(account.session, saved["id"])["savedBy"] == by_connection(
        agent["id"], agent["name"]
    )
    corrected = asyncio.run(
        call("update_memory", {"id": saved["id"], "content": "The agent corrected this"})
    )
    assert not corrected.is_error, corrected
    assert [r["savedBy"]["connectionId"] for r in revisions(account.session, saved["id"])] == [
        agent["id"],
        agent["id"],
    ]


def test_a_renamed_or_revoked_connection_shows_as_it_is_now(account: OwnedAccount) -> None:
    connection = key_connection(account)
    saved = account.key.save("Deploys happen on Tuesdays")
    with psycopg.connect(account.tenant.database.migration_url) as conn, conn.transaction():
        set_tenant(conn, account.tenant.account_id)
        conn.execute("UPDATE connections SET name = 'laptop' WHERE id = %s", (connection,))
    assert note(account.session, saved["id"])["savedBy"] == by_connection(connection, "laptop")
    revoked = account.session.delete(f"/v1/connections/{connection}")
    assert revoked.status_code == 200, revoked.text
    assert note(account.session, saved["id"])["savedBy"] == by_connection(
        connection, "laptop", revoked=True
    )
    assert [r["savedBy"] for r in revisions(account.session, saved["id"])] == [
        by_connection(connection, "laptop", revoked=True)
    ]


def test_listing_and_search_filter_by_the_connection_that_saved_the_current_version(
    account: OwnedAccount,
) -> None:
    first = key_connection(account)
    other = account.tenant.key("second", personal=True, all_notebooks=True)
    second = next(c["id"] for c in connections(account).values() if c["name"] == "second")
    mine = {account.key.save(f"heron sighting {n}")["id"] for n in range(3)}
    theirs = other.save("heron count at the lake")["id"]
    owners = account.session.save("heron photo album")["id"]
    assert listed(account.session, connectionId=first) == mine
    assert listed(account.session, connectionId=second) == {theirs}
    assert listed(account.session) == mine | {theirs, owners}
    assert searched(account.session, "heron", connectionId=first) == mine
    assert searched(account.session, "heron", connectionId=second) == {theirs}
    # A connection's filter follows the current version: corrected by the other, a note
    # is the other's now (its history still says who wrote version 1).
    moved = sorted(mine)[0]
    assert other.patch(f"/v1/memories/{moved}", {"content": "heron, corrected"}).status_code == 200
    assert listed(account.key, connectionId=first) == mine - {moved}
    assert listed(account.key, connectionId=second) == {theirs, moved}
    assert searched(account.key, "heron", connectionId=second) == {theirs, moved}
    # Pages of a filtered listing hold to the filter.
    response = account.key.get("/v1/memories", params={"limit": 1, "connectionId": first})
    page = data_of(response)
    assert len(page["items"]) == 1 and page["nextCursor"]
    rest = account.key.get(
        "/v1/memories", params={"limit": 100, "connectionId": first, "cursor": page["nextCursor"]}
    )
    assert {i["id"] for i in page["items"] + data_of(rest)["items"]} == mine - {moved}
    # Another connection's filter with the first page's cursor is refused.
    wrong = account.key.get(
        "/v1/memories", params={"connectionId": second, "cursor": page["nextCursor"]}
    )
    assert error_of(wrong)["code"] == "invalid_cursor"


def test_a_connection_filter_that_is_no_uuid_is_refused(account: OwnedAccount) -> None:
    listing = account.key.get("/v1/memories", params={"connectionId": "agent-7"})
    assert listing.status_code == 400
    assert error_of(listing)["code"] == "validation_error"
    search = account.key.post("/v1/memories/search", {"query": "x", "connectionId": "agent-7"})
    assert search.status_code == 400
    assert error_of(search)["code"] == "validation_error"
    # An unknown connection is no error: it saved nothing.
    assert listed(account.key, connectionId=str(uuid.uuid4())) == set()


def activity(client: Client, **params: Any) -> list[tuple[str, int, str | None]]:
    """Every revision of the recent activity, newest first, as (note, version, saver
    connection or "owner"), read a page of 2 at a time."""
    found: list[tuple[str, int, str | None]] = []
    cursor = None
    while True:
        # requests leaves out a parameter whose value is None: the first page's cursor.
        page = data_of(client.get("/v1/activity", params={"limit": 2, **params, "cursor": cursor}))
        found += [
            (r["memoryId"], r["version"], r["savedBy"]["connectionId"] or r["savedBy"]["kind"])
            for r in page["items"]
        ]
        cursor = page["nextCursor"]
        if cursor is None:
            return found


def test_recent_activity_lists_revisions_newest_first_with_who_saved_each(
    account: OwnedAccount,
) -> None:
    first = key_connection(account)
    other = account.tenant.key("second", personal=True, all_notebooks=True)
    second = next(c["id"] for c in connections(account).values() if c["name"] == "second")
    a = account.key.save("first note")["id"]
    b = other.save("second note")["id"]
    assert (
        account.session.patch(f"/v1/memories/{a}", {"content": "first, fixed"}).status_code == 200
    )
    gone = account.key.save("soon forgotten")["id"]
    assert account.key.post("/v1/memories/forget", {"ids": [gone]}).status_code == 200
    expected = [(a, 2, "owner"), (b, 1, second), (a, 1, first)]
    assert activity(account.session) == expected
    assert activity(account.key) == expected
    assert activity(account.session, connectionId=first) == [(a, 1, first)]
    assert activity(account.session, connectionId=second) == [(b, 1, second)]
    page = data_of(account.session.get("/v1/activity", params={"limit": 1}))
    (item,) = page["items"]
    assert item["savedBy"] == OWNER and item["content"] == "first, fixed"
    # A cursor holds to its filter.
    wrong = account.session.get(
        "/v1/activity", params={"connectionId": first, "cursor": page["nextCursor"]}
    )
    assert error_of(wrong)["code"] == "invalid_cursor"
    # A key sees only the revisions saved in scopes it may read.
    notebook = account.tenant.notebook("kept apart")
    filed = account.key.save("in the notebook", projectId=notebook)["id"]
    personal_only = account.tenant.key("personal only", personal=True, all_notebooks=False)
    assert filed not in {note for note, _, _ in activity(personal_only)}
    assert filed in {note for note, _, _ in activity(account.key)}
