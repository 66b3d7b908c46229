"""Ask, conversations, proposals, MCP and project memory on a Citus cluster.

A real grove-api (answering through a real, extractive grove-ask, owner sessions from a
stand-in identity provider) and a real grove-mcp (``citus_mcp``) run against the
coordinator of ``citus_database``, whose services' roles refuse any statement touching
more than one shard (``tests/support/cluster.py``). So each request below proves two
things: that every statement it ran named its account as a value (a router query; one
that fans out fails the request with a 500 or an MCP error), and that each account sees
only its own notes, conversations, proposals and project records.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import pytest

from grove_cli.launch import Running
from grove_contracts.proposals import ProposalDraft
from grove_db import embedded
from grove_db.pool import open_pool, transaction
from grove_memory.ask import proposals, proposer
from grove_memory.ask.conversations import conversation_row
from grove_memory.search import recall
from grove_memory.store import Store
from tests.support.clients import Client, data_of, error_of
from tests.support.mcp import connect, ok
from tests.support.mcp import error_of as tool_error
from tests.support.owners import OwnedAccount, Provider, owned_tenant
from tests.support.processes import start_api, start_ask
from tests.support.tenants import new_tenant, owner_of

#: Words only one account's notes hold, so a leak would be found by search, recall or Ask.
WORDS = {"a": "xylophone", "b": "zeppelin"}
DEPLOY = "We deploy the {w} billing service with Argo CD every Tuesday morning."
DEPLOY_AGAIN = "Every Tuesday morning we deploy the {w} billing service with Argo CD. Ask Priya."


@dataclass
class Stack:
    provider: Provider
    api: Running
    database: embedded.EmbeddedDatabase


@pytest.fixture(scope="module")
def stack(citus_database: embedded.EmbeddedDatabase) -> Iterator[Stack]:
    """grove-api on the coordinator, answering through an extractive grove-ask and taking
    owner sessions (conversations and proposals are the owner's)."""
    provider = Provider()
    ask = start_ask({"GROVE_EMBEDDING_PROFILE": "disabled"})
    api = start_api(
        {
            "GROVE_DATABASE_URL": citus_database.runtime_url,
            "GROVE_EMBEDDING_PROFILE": "disabled",
            "GROVE_ASK_ADDRESS": ask.url,
            "GROVE_API_WORKERS": "1",
            **provider.env(),
        }
    )
    yield Stack(provider, api, citus_database)
    api.stop()
    ask.stop()
    provider.close()


@pytest.fixture(scope="module")
def owners(stack: Stack) -> dict[str, OwnedAccount]:
    return {
        name: OwnedAccount(stack, *owned_tenant(stack.database, stack.api.url)) for name in WORDS
    }


def created(response: Any, status: int = 201) -> Any:
    assert response.status_code == status, response.text
    return data_of(response)


def sources(asked: dict[str, Any]) -> set[str]:
    return {s["noteId"] for s in asked["sources"]}


def cited(answer: dict[str, Any]) -> set[str]:
    return {c["noteId"] for c in answer["citations"]}


def test_ask_conversations_similar_notes_and_proposals_stay_on_one_account(
    owners: dict[str, OwnedAccount],
) -> None:
    saved: dict[str, dict[str, Any]] = {}
    for name, owner in owners.items():
        word = WORDS[name]
        shelf = owner.tenant.notebook(f"{word} deploys")
        first = owner.key.save(DEPLOY.format(w=word), projectId=shelf)
        again = created(
            owner.key.post(
                "/v1/memories",
                {"content": DEPLOY_AGAIN.format(w=word), "kind": "fact", "projectId": shelf},
            )
        )
        # The save's near-duplicate lookup found the first note, and only it.
        assert [s["id"] for s in again["similar"]] == [first["id"]]
        saved[name] = {"first": first["id"], "again": again["id"], "shelf": shelf}

    for name, owner in owners.items():
        word, other = WORDS[name], WORDS["b" if name == "a" else "a"]
        mine = {saved[name]["first"], saved[name]["again"]}
        asked = created(owner.key.post("/v1/ask", {"query": f"When do we deploy {word}?"}), 200)
        assert asked["status"] == "answered" and asked["answer"]["generator"] == "extractive"
        assert cited(asked["answer"]) and cited(asked["answer"]) <= mine
        assert sources(asked) <= mine
        foreign = created(owner.key.post("/v1/ask", {"query": f"{other} billing"}), 200)
        assert foreign["status"] == "no_evidence" or not sources(foreign) - mine
        scoped = {"query": "and who asks?", "projectId": saved[name]["shelf"]}
        scoped["previousQuestions"] = [f"When do we deploy {word}?"]
        assert sources(created(owner.key.post("/v1/ask", scoped), 200)) <= mine
        # A conversation: its turn answers with citations and offers to merge the two.
        conversation = created(owner.session.post("/v1/conversations", {"id": str(uuid.uuid4())}))
        path = f"/v1/conversations/{conversation['id']}"
        query = f"When do we deploy the {word} billing service?"
        turn_body = {"id": str(uuid.uuid4()), "query": query, "expectedVersion": 1}
        turn = created(owner.session.post(path + "/turns", turn_body))["turn"]
        assert turn["status"] == "completed" and cited(turn["answer"]) <= mine
        assert created(owner.session.post(path + "/turns", turn_body), 200)["turn"] == turn
        (merge,) = [p for p in turn["proposals"] if p["change"]["action"] == "merge"]
        assert set(merge["change"]["noteIds"]) == mine
        listed = created(owner.session.get("/v1/conversations"), 200)["items"]
        assert [c["id"] for c in listed] == [conversation["id"]]
        found = created(owner.session.post("/v1/conversations/search", {"query": word}), 200)
        assert [c["id"] for c in found["items"]] == [conversation["id"]]
        stored = created(owner.session.get(path), 200)
        assert [t["id"] for t in stored["turns"]] == [turn["id"]]

        proposal = f"{path}/proposals/{merge['id']}"
        applied = created(owner.session.post(proposal + "/apply", {}), 200)
        assert applied["proposal"]["state"] == "applied"
        archived = data_of(owner.key.get(f"/v1/memories/{saved[name]['first']}"))
        assert archived["archived"] is True
        undone = created(owner.session.post(proposal + "/undo", {}), 200)
        assert undone["proposal"]["state"] == "undone"
        assert data_of(owner.key.get(f"/v1/memories/{saved[name]['first']}"))["archived"] is False
        # A turn on a selected note and notebook (the context's own statements).
        context = {"notes": [saved[name]["first"]], "notebooks": [saved[name]["shelf"]]}
        turn_body = {**turn_body, "id": str(uuid.uuid4()), "expectedVersion": 2}
        second = created(owner.session.post(path + "/turns", {**turn_body, "context": context}))
        assert cited(second["turn"]["answer"]) <= mine
        assert second["turn"]["contextCoverage"] == {"considered": 2, "available": 2}
        saved[name]["conversation"] = path
        saved[name]["proposal"] = proposal

    # Neither owner reaches the other's conversation or proposal.
    for name, owner in owners.items():
        theirs = saved["b" if name == "a" else "a"]
        assert owner.session.get(theirs["conversation"]).status_code == 404
        turn_body = {"id": str(uuid.uuid4()), "query": "anything", "expectedVersion": 2}
        assert owner.session.post(theirs["conversation"] + "/turns", turn_body).status_code == 404
        for action in ("apply", "undo"):
            refused = owner.session.post(f"{theirs['proposal']}/{action}", {})
            assert refused.status_code == 404, refused.text
        assert owner.session.delete(theirs["conversation"]).status_code == 404
    # Each owner hides their own conversation: gone from the list and from its address.
    for name, owner in owners.items():
        assert owner.session.delete(saved[name]["conversation"]).status_code == 200
        assert created(owner.session.get("/v1/conversations"), 200)["items"] == []
        assert owner.session.get(saved[name]["conversation"]).status_code == 404


def test_a_notebook_subtree_is_archived_and_restored_by_its_owner_and_by_a_proposal(
    stack: Stack, owners: dict[str, OwnedAccount]
) -> None:
    """Whole-notebook operations (recursive statements over the notebook tree), over REST
    and as an applied and undone proposal (offered in process, as a completing turn
    offers a model's)."""
    owner, other = owners["a"], owners["b"]
    ops = owner.tenant.notebook("ops")
    child = owner.tenant.notebook("ops child", parent=ops)
    inside = owner.key.save("The pager rota lives in the wiki.", projectId=child)["id"]
    subtree = f"/v1/notebooks/{ops}/subtree"
    preview = created(owner.session.get(subtree), 200)
    assert (preview["notebooks"], preview["notes"]) == (2, 1)
    assert other.session.get(subtree).status_code == 404
    archive = {"fingerprint": preview["fingerprint"]}
    assert other.session.post(f"/v1/notebooks/{ops}/archive", archive).status_code == 404
    created(owner.session.post(f"/v1/notebooks/{ops}/archive", archive), 200)
    archived = created(owner.session.get("/v1/notebooks/archived"), 200)["items"]
    assert {n["id"] for n in archived} == {ops, child}
    assert data_of(owner.key.get(f"/v1/memories/{inside}"))["archived"] is True
    again = {"fingerprint": created(owner.session.get(subtree), 200)["fingerprint"]}
    created(owner.session.post(f"/v1/notebooks/{ops}/restore", again), 200)
    assert data_of(owner.key.get(f"/v1/memories/{inside}"))["archived"] is False

    conversation = created(owner.session.post("/v1/conversations", {"id": str(uuid.uuid4())}))
    path = f"/v1/conversations/{conversation['id']}"
    body = {"id": str(uuid.uuid4()), "query": "Where is the pager rota?", "expectedVersion": 1}
    turn = created(owner.session.post(path + "/turns", body))["turn"]
    change = {"action": "archive", "noteIds": [], "notebookIds": [ops]}
    draft = ProposalDraft.model_validate({"summary": "Set ops aside", "change": change})
    principal = owner_of(owner.tenant.account_id)
    pool = open_pool(stack.database.runtime_url)
    try:
        with transaction(pool, principal.account_id) as conn:
            row = conversation_row(conn, principal.account_id, uuid.UUID(conversation["id"]))
            assert row is not None
            given = [uuid.UUID(s["noteId"]) for s in turn["sources"]]
            scope = proposals.scope_of(row, turn["context"], given)
            prepared = proposals.prepare(conn, principal, scope, [("model", draft)])
            turn_id = uuid.UUID(turn["id"])
            proposals.store_proposals(conn, principal, row["id"], turn_id, prepared)
    finally:
        pool.close()
    (stored,) = created(owner.session.get(path), 200)["turns"][0]["proposals"]
    (tree,) = stored["preview"]["notebooks"]
    assert (tree["notebooks"], tree["notes"]) == (2, 1)
    proposal = f"{path}/proposals/{stored['id']}"
    created(owner.session.post(proposal + "/apply", {}), 200)
    assert data_of(owner.key.get(f"/v1/memories/{inside}"))["archived"] is True
    created(owner.session.post(proposal + "/undo", {}), 200)
    assert data_of(owner.key.get(f"/v1/memories/{inside}"))["archived"] is False
    assert created(owner.session.get("/v1/notebooks/archived"), 200)["items"] == []


def test_the_statements_over_vectors_run_on_the_accounts_node(
    citus_database: embedded.EmbeddedDatabase, citus_api: str
) -> None:
    """Recall's and search's nearest vectors and their neighbours, and the proposer's
    cosines of two notes: the cluster's api has no model, so they run here, in process,
    as the runtime role under the fan-out guard (no vectors are stored: no rows, and the
    proposer merges the two notes by their words)."""
    tenant = new_tenant(citus_database, citus_api)
    notes = [UUID(tenant.client.save(f"xylophone tuning, take {n}")["id"]) for n in (1, 2)]
    principal = owner_of(tenant.account_id)
    vector = [0.1] * 384
    pool = open_pool(citus_database.runtime_url)
    store = Store(pool=pool, cursor_secret=b"test-cursor-secret", profile="minilm")
    sourced = [{"id": note, "source_agent": "tests"} for note in notes]
    values = {"limit": 40}
    try:
        with transaction(pool, principal.account_id) as conn:
            assert recall.semantic_rows(conn, store, principal, vector, "true", values) == []
            assert (
                recall.neighbour_rows(conn, store, principal, vector, "true", values, sourced) == []
            )
            (merge,) = proposer.suggest(conn, store, principal, notes)  # by their words
            assert set(merge.change.noteIds) == set(notes)  # type: ignore[union-attr]
    finally:
        pool.close()


async def tool_call(url: str, key: str, tool: str, arguments: dict[str, Any]) -> Any:
    """One MCP tool call with ``key``, its result unchecked."""
    async with connect(url, key) as client:
        return await client.call_tool(tool, arguments)


async def tour(url: str, key: str, word: str) -> dict[str, str]:
    """Every one of grove-mcp's 14 tools once, on the caller's own notes and notebook."""
    async with connect(url, key) as client:

        async def use(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
            return ok(await client.call_tool(tool, arguments), tool)

        shelf = (await use("create_notebook", {"name": f"{word} shelf"}))["id"]
        renamed = await use("update_notebook", {"id": shelf, "name": f"{word} renamed"})
        assert renamed["name"] == f"{word} renamed"
        shelves = await use("list_notebooks", {})
        assert [n["id"] for n in shelves["items"]] == [shelf]
        note = (await use("remember", {"content": f"{word} over mcp", "kind": "fact"}))["id"]
        scratch = (await use("remember", {"content": f"{word} scratch", "kind": "fact"}))["id"]
        fixed = await use("update_memory", {"id": note, "content": f"{word} over mcp, fixed"})
        assert fixed["version"] == 2
        assert (await use("get_memory", {"id": note}))["version"] == 2
        history = await use("memory_history", {"id": note})
        assert [r["version"] for r in history["items"]] == [1, 2]
        listed = await use("list_memories", {})
        assert {m["id"] for m in listed["items"]} == {note, scratch}
        found = await use("search_memories", {"query": word})
        assert {m["memory"]["id"] for m in found["items"]} == {note, scratch}
        recalled = await use("recall", {"query": f"{word} fixed"})
        assert recalled["items"][0]["memory"]["id"] == note
        moved = await use("move_memories", {"ids": [note], "projectId": shelf})
        assert [m["projectId"] for m in moved["items"]] == [shelf]
        archived = await use("archive_memories", {"ids": [note]})
        assert archived["results"] == [{"id": note, "outcome": "archived"}]
        assert (await use("restore_memory", {"id": note}))["archived"] is False
        forgotten = await use("forget", {"ids": [scratch]})
        assert forgotten["results"] == [{"id": scratch, "outcome": "deleted"}]
    return {"note": note, "shelf": shelf}


async def trespass(url: str, key: str, other: str, theirs: dict[str, str]) -> None:
    """The other account's note and notebook, by their IDs, through every tool that
    takes one: unknown here; its words are found by none."""
    async with connect(url, key) as client:
        note, shelf = theirs["note"], theirs["shelf"]
        for tool, arguments in [
            ("get_memory", {"id": note}),
            ("update_memory", {"id": note, "content": "overwritten"}),
            ("memory_history", {"id": note}),
            ("restore_memory", {"id": note}),
            ("update_notebook", {"id": shelf, "name": "taken"}),
        ]:
            error = tool_error(await client.call_tool(tool, arguments))
            assert error["code"] == "not_found", (tool, error)
        moving = {"ids": [note], "projectId": None}
        refused = tool_error(await client.call_tool("move_memories", moving))
        assert refused["code"] == "move_refused"
        assert refused["details"] == [{"field": "ids[0]", "message": f"{note}: note not found"}]
        outcomes = {
            "archive_memories": "not_found",
            "forget": "not_found",
        }
        for tool, outcome in outcomes.items():
            result = ok(await client.call_tool(tool, {"ids": [note]}), tool)
            assert result["results"] == [{"id": note, "outcome": outcome}], tool
        for tool in ("search_memories", "recall"):
            result = ok(await client.call_tool(tool, {"query": other}), tool)
            assert result["items"] == [], tool
        listed = ok(await client.call_tool("list_memories", {"projectId": shelf}), "list_memories")
        assert listed["items"] == []


def test_every_mcp_tool_serves_two_accounts_each_only_its_own(
    citus_database: embedded.EmbeddedDatabase, citus_api: str, citus_mcp: str
) -> None:
    tenants = {name: new_tenant(citus_database, citus_api) for name in WORDS}
    keys = {name: tenant.client.key or "" for name, tenant in tenants.items()}
    made = {name: asyncio.run(tour(citus_mcp, keys[name], WORDS[name])) for name in WORDS}
    for name in WORDS:
        other = "b" if name == "a" else "a"
        asyncio.run(trespass(citus_mcp, keys[name], WORDS[other], made[other]))
    for name, tenant in tenants.items():
        mine = data_of(tenant.client.get(f"/v1/memories/{made[name]['note']}"))
        assert (mine["version"], mine["projectId"]) == (3, made[name]["shelf"])  # fixed, then moved


def record(key: str, body: str) -> dict[str, Any]:
    return {
        "key": key,
        "title": "Deploy day",
        "body": body,
        "kind": "fact",
        "provenance": {
            "source": "slack",
            "ref": "https://chat.example/c/123",
            "verification": "unverified",
            "observedAt": "2026-11-30T10:00:00+00:00",
        },
    }


def test_project_memory_is_saved_and_recalled_by_a_member_and_refused_to_a_non_member(
    stack: Stack, owners: dict[str, OwnedAccount], citus_mcp: str
) -> None:
    alice, stranger = owners["a"], owners["b"]
    bob = OwnedAccount(stack, *owned_tenant(stack.database, stack.api.url))
    org = created(alice.session.post("/v1/orgs", {"name": "Acme"}))["id"]
    project = created(alice.session.post(f"/v1/orgs/{org}/projects", {"name": "Rocket"}))["id"]
    base = f"/v1/orgs/{org}/projects/{project}"
    member = {"accountId": str(bob.tenant.account_id), "role": "contributor"}
    created(alice.session.post(base + "/members", member))
    body = "We deploy on Tuesdays after the standup."
    written = created(bob.session.put(base + "/memory/entry", record("deploy.day", body)), 200)
    assert written["record"]["version"] == 1
    key = created(
        alice.session.post(base + "/keys", {"name": "agent", "scopes": ["project_memory:read"]})
    )["key"]
    for reader in (alice.session, bob.session, Client(stack.api.url, key)):
        found = created(reader.post(base + "/memory/retrieve", {"query": "deploy"}), 200)
        assert [r["key"] for r in found["records"]] == ["deploy.day"]
        got = created(reader.get(base + "/memory/entry", params={"key": "deploy.day"}), 200)
        assert got["record"]["body"] == body
    # The same retrieval as grove-mcp's project tool, with the project key.
    scope = {"orgId": org, "projectId": project, "query": "deploy"}
    found_by_tool = asyncio.run(tool_call(citus_mcp, key, "project_memory_retrieve", scope))
    assert not found_by_tool.is_error, found_by_tool
    assert isinstance(found_by_tool.structured_content, dict)
    assert [r["key"] for r in found_by_tool.structured_content["records"]] == ["deploy.day"]
    for path, call in [
        ("/memory/status", stranger.session.get),
        ("/memory", stranger.session.get),
    ]:
        assert call(base + path).status_code == 404, path
    refused = stranger.session.put(base + "/memory/entry", record("planted", "x"))
    assert refused.status_code == 404 and error_of(refused)["code"] == "not_found"
    refused = stranger.session.post(base + "/memory/retrieve", {"query": "deploy"})
    assert refused.status_code == 404
    # The stranger's own key, as a personal credential, is refused as well.
    assert stranger.key.get(base + "/memory/status").status_code in (401, 403, 404)
    assert created(alice.session.get(base + "/memory"), 200)["records"][0]["version"] == 1
    # A role change, a record's replacement and removal, a member's removal, a key revoked.
    viewer = created(
        alice.session.put(f"{base}/members/{bob.tenant.account_id}", {"role": "viewer"}), 200
    )
    assert viewer["role"] == "viewer"
    replaced = record("deploy.day", "We deploy on Thursdays.")
    assert (
        created(alice.session.put(base + "/memory/entry", replaced), 200)["record"]["version"] == 2
    )
    deleted = alice.session.delete(base + "/memory/entry", params={"key": "deploy.day"})
    assert deleted.status_code == 200, deleted.text
    assert created(alice.session.get(base + "/memory"), 200)["records"] == []
    removed = alice.session.delete(f"{base}/members/{bob.tenant.account_id}")
    assert removed.status_code == 200, removed.text
    assert bob.session.get(base + "/memory/status").status_code == 404
    keys = created(alice.session.get(base + "/keys"), 200)["keys"]
    for _ in range(2):  # revoking twice is the same
        revoked = alice.session.delete(f"{base}/keys/{keys[0]['id']}")
        assert revoked.status_code == 200, revoked.text
    assert Client(stack.api.url, key).get(base + "/memory/status").status_code == 401
