"""Archive, restore, move and notebook updates, through POST /v1/tools/{tool}."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import psycopg
import pytest
import requests

from grove_db import embedded
from tests.support.clients import Client, data_of, error_of
from tests.support.tenants import Tenant


def tool(client: Client, name: str, /, **arguments: Any) -> Any:
    response = client.post(f"/v1/tools/{name}", arguments)
    assert response.status_code == 200, response.text
    return data_of(response)


def recalled(client: Client, query: str) -> list[str]:
    return [i["memory"]["id"] for i in tool(client, "recall", query=query)["items"]]


def test_archived_notes_leave_recall_and_search_and_restore_brings_them_back(
    tenant: Tenant,
) -> None:
    note = tenant.client.save("quarterly budget spreadsheet lives in finance drive")
    outcome = tool(tenant.client, "archive_memories", ids=[note["id"], str(uuid.uuid4())])
    assert [r["outcome"] for r in outcome["results"]] == ["archived", "not_found"]
    assert recalled(tenant.client, "budget spreadsheet") == []
    assert tool(tenant.client, "search_memories", query="budget")["items"] == []
    assert tool(tenant.client, "list_memories")["items"] == []
    listed = tool(tenant.client, "list_memories", archived=True)["items"]
    assert [(n["id"], n["archived"]) for n in listed] == [(note["id"], True)]
    again = tool(tenant.client, "archive_memories", ids=[note["id"]])
    assert again["results"][0]["outcome"] == "archived"
    restored = tool(tenant.client, "restore_memory", id=note["id"])
    assert restored["archived"] is False and restored["version"] == 1
    assert recalled(tenant.client, "budget spreadsheet") == [note["id"]]


def test_restoring_a_revision_saves_it_as_a_new_version(tenant: Tenant) -> None:
    note = tenant.client.save("first wording", "decision")
    tool(tenant.client, "update_memory", id=note["id"], content="second wording", kind="fact")
    restored = tool(tenant.client, "restore_memory", id=note["id"], version=1)
    assert restored["retentionDays"] is None
    assert (restored["content"], restored["kind"], restored["version"]) == (
        "first wording",
        "decision",
        3,
    )
    history = tool(tenant.client, "memory_history", id=note["id"])["items"]
    assert [r["content"] for r in history] == ["first wording", "second wording", "first wording"]
    missing = tenant.client.post("/v1/tools/restore_memory", {"id": note["id"], "version": 9})
    assert missing.status_code == 404


def test_durable_restore_turns_a_handoff_into_a_permanent_fact(tenant: Tenant) -> None:
    handoff = tenant.client.save("refunds next", "handoff", taskId="t-9")
    assert handoff["retentionDays"] == 30
    durable = tool(tenant.client, "restore_memory", id=handoff["id"], durable=True)
    assert (durable["kind"], durable["retentionDays"], durable["expiresAt"]) == ("fact", None, None)
    plain = tenant.client.save("just a fact")
    refused = tenant.client.post("/v1/tools/restore_memory", {"id": plain["id"], "durable": True})
    assert refused.status_code == 400
    assert error_of(refused)["details"][0]["field"] == "durable"


def test_move_is_all_or_nothing_and_checks_both_scopes(make_tenant: Any) -> None:
    owner, other = make_tenant(), make_tenant()
    notebook = owner.notebook("target")
    first, second = owner.client.save("one"), owner.client.save("two")
    foreign = other.client.save("not yours")
    refused = owner.client.post(
        "/v1/tools/move_memories", {"ids": [first["id"], foreign["id"]], "projectId": notebook}
    )
    assert refused.status_code == 409
    assert error_of(refused)["code"] == "move_refused"
    assert [d["field"] for d in error_of(refused)["details"]] == ["ids[1]"]
    assert {n["projectId"] for n in tool(owner.client, "list_memories")["items"]} == {None}
    moved = tool(owner.client, "move_memories", ids=[first["id"], second["id"]], projectId=notebook)
    assert [(n["projectId"], n["version"]) for n in moved["items"]] == [(notebook, 2)] * 2
    personal_only = owner.key("personal", personal=True)
    back = personal_only.post("/v1/tools/move_memories", {"ids": [first["id"]], "projectId": None})
    assert error_of(back)["code"] == "move_refused"  # the source notebook is not granted
    into = personal_only.post(
        "/v1/tools/move_memories",
        {"ids": [personal_only.save("mine")["id"]], "projectId": notebook},
    )
    assert into.status_code == 404  # nor is the destination
    home = tool(owner.client, "move_memories", ids=[first["id"]], projectId=None)
    assert home["items"][0]["projectId"] is None


def test_move_requires_an_explicit_destination(tenant: Tenant) -> None:
    note = tenant.client.save("x")
    response = tenant.client.post("/v1/tools/move_memories", {"ids": [note["id"]]})
    assert response.status_code == 400
    assert error_of(response)["details"][0]["field"] == "projectId"


def test_notebooks_are_renamed_and_moved_without_cycles(tenant: Tenant) -> None:
    top = tenant.notebook("top")
    middle = tenant.notebook("middle", parent=top)
    leaf = tenant.notebook("leaf", parent=middle)
    renamed = tool(tenant.client, "update_notebook", id=leaf, name="renamed leaf")
    assert (renamed["name"], renamed["parentId"]) == ("renamed leaf", middle)
    for moving, under in ((middle, leaf), (top, leaf), (top, middle), (top, top)):
        cycle = tenant.client.post("/v1/tools/update_notebook", {"id": moving, "parentId": under})
        assert cycle.status_code == 409, (moving, under)
        assert error_of(cycle)["code"] == "notebook_cycle"
    moved = tool(tenant.client, "update_notebook", id=leaf, parentId=top)
    assert moved["parentId"] == top
    rooted = tool(tenant.client, "update_notebook", id=leaf, parentId=None)
    assert rooted["parentId"] is None
    unknown = tenant.client.post(
        "/v1/tools/update_notebook", {"id": str(uuid.uuid4()), "name": "x"}
    )
    assert unknown.status_code == 404


@pytest.mark.parametrize("name", ["archive_memories", "move_memories"])
def test_batch_tools_take_at_most_100_ids(tenant: Tenant, name: str) -> None:
    extra = {"projectId": None} if name == "move_memories" else {}
    ids = [str(uuid.uuid4()) for _ in range(101)]
    too_many = tenant.client.post(f"/v1/tools/{name}", {"ids": ids, **extra})
    assert too_many.status_code == 400
    assert error_of(too_many)["details"][0]["field"] == "ids"
    at_limit = tenant.client.post(f"/v1/tools/{name}", {"ids": ids[:100], **extra})
    assert at_limit.status_code == (200 if name == "archive_memories" else 409)


def test_a_deep_chain_refuses_every_cycle(tenant: Tenant) -> None:
    chain = [tenant.notebook("level 0")]
    for depth in range(1, 12):
        chain.append(tenant.notebook(f"level {depth}", parent=chain[-1]))
    bottom_up = tenant.client.post(
        "/v1/tools/update_notebook", {"id": chain[0], "parentId": chain[-1]}
    )
    assert error_of(bottom_up)["code"] == "notebook_cycle"
    sideways = tool(tenant.client, "update_notebook", id=chain[5], parentId=chain[0])
    assert sideways["parentId"] == chain[0]


def test_sibling_notebook_names_are_unique_ignoring_case(tenant: Tenant) -> None:
    parent = tenant.notebook("projects")
    tenant.notebook("Billing", parent=parent)
    clash = tenant.client.post("/v1/notebooks", {"name": "  billing ", "parentId": parent})
    assert clash.status_code == 409
    assert error_of(clash)["code"] == "notebook_name_taken"
    elsewhere = tenant.client.post("/v1/notebooks", {"name": "billing"})
    assert elsewhere.status_code == 201  # a different parent: fine
    renamed = tenant.client.post(
        "/v1/tools/update_notebook", {"id": elsewhere.json()["data"]["id"], "parentId": parent}
    )
    assert error_of(renamed)["code"] == "notebook_name_taken"


def test_restoring_a_revision_renews_the_lifetime(tenant: Tenant) -> None:
    note = tenant.client.save("temporary", retentionDays=3)
    tool(tenant.client, "update_memory", id=note["id"], content="changed")
    restored = tool(tenant.client, "restore_memory", id=note["id"], version=1)
    assert restored["retentionDays"] == 3
    assert restored["expiresAt"] > note["expiresAt"]


def test_a_handoff_becomes_a_permanent_fact_with_update_memory(tenant: Tenant) -> None:
    handoff = tenant.client.save("state of work", "handoff", taskId="t-77")
    fact = tool(
        tenant.client,
        "update_memory",
        id=handoff["id"],
        kind="fact",
        taskId=None,
        retentionDays=None,
    )
    assert (fact["kind"], fact["taskId"], fact["retentionDays"], fact["expiresAt"]) == (
        "fact",
        None,
        None,
        None,
    )


def backdate_expiry(database: embedded.EmbeddedDatabase, note_id: str) -> str:
    """Set a note's expiry one day from now (as the superuser): what it would be had it
    been saved days ago; the expiry, as the API writes it."""
    with psycopg.connect(database.grove_superuser_url, autocommit=True) as conn:
        row = conn.execute(
            "UPDATE memories SET expires_at = now() + interval '1 day' WHERE id = %s"
            " RETURNING expires_at",
            (note_id,),
        ).fetchone()
    assert row is not None
    return str(row[0].isoformat())


def expiry_sweeps(database: embedded.EmbeddedDatabase, note_id: str) -> list[datetime]:
    """When the note's queued expiry sweeps run."""
    with psycopg.connect(database.grove_superuser_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT run_after FROM jobs WHERE memory_id = %s AND kind = 'expire_note'"
            " AND status = 'queued' ORDER BY run_after",
            (note_id,),
        ).fetchall()
    return [r[0] for r in rows]


def test_unarchiving_renews_the_lifetime_as_a_fresh_save_would(
    tenant: Tenant, database: embedded.EmbeddedDatabase
) -> None:
    note = tenant.client.save("temporary", retentionDays=3)
    backdate_expiry(database, note["id"])
    tool(tenant.client, "archive_memories", ids=[note["id"]])
    restored = tool(tenant.client, "restore_memory", id=note["id"])
    assert (restored["archived"], restored["version"], restored["retentionDays"]) == (False, 1, 3)
    expires = datetime.fromisoformat(restored["expiresAt"])
    assert expires >= datetime.fromisoformat(note["expiresAt"])  # 3 days from the restore
    assert expiry_sweeps(database, note["id"])[-1] == expires  # and swept then
    # Restoring a note that is not archived changes nothing; a permanent note stays so.
    again = tool(tenant.client, "restore_memory", id=note["id"])
    assert again["expiresAt"] == restored["expiresAt"]
    permanent = tenant.client.save("permanent")
    tool(tenant.client, "archive_memories", ids=[permanent["id"]])
    assert tool(tenant.client, "restore_memory", id=permanent["id"])["expiresAt"] is None


def restore(client: Client, note_id: str, body: Any, **headers: str) -> requests.Response:
    return client.post(f"/v1/memories/{note_id}/restore", body, headers=headers)


def test_the_restore_route_brings_back_a_revision_like_the_tool(tenant: Tenant) -> None:
    note = tenant.client.save("first wording", "decision", retentionDays=3)
    tool(tenant.client, "update_memory", id=note["id"], content="second wording", kind="fact")
    tool(tenant.client, "archive_memories", ids=[note["id"]])
    key = str(uuid.uuid4())
    response = restore(tenant.client, note["id"], {"version": 1}, **{"Idempotency-Key": key})
    assert response.status_code == 200, response.text
    restored = data_of(response)
    assert (restored["content"], restored["kind"], restored["version"]) == (
        "first wording",
        "decision",
        3,
    )
    assert (restored["archived"], restored["retentionDays"]) == (False, 3)
    replayed = restore(tenant.client, note["id"], {"version": 1}, **{"Idempotency-Key": key})
    assert data_of(replayed) == restored  # a retry answers the first result
    history = tool(tenant.client, "memory_history", id=note["id"])["items"]
    assert len(history) == 3
    # The same operation ID with other arguments is a conflict, whichever way it came.
    other = tenant.client.post(
        "/v1/tools/restore_memory", {"id": note["id"], "version": 2, "operationId": key}
    )
    assert error_of(other)["code"] == "idempotency_conflict"
    missing = restore(tenant.client, note["id"], {"version": 9})
    assert missing.status_code == 404
    assert error_of(missing)["code"] == "not_found"


def test_the_restore_route_makes_a_handoff_durable(tenant: Tenant) -> None:
    handoff = tenant.client.save("refunds next", "handoff", taskId="t-10")
    durable = data_of(restore(tenant.client, handoff["id"], {"durable": True}))
    assert (durable["kind"], durable["retentionDays"], durable["expiresAt"]) == ("fact", None, None)
    plain = tenant.client.save("just a fact")
    refused = restore(tenant.client, plain["id"], {"durable": True})
    assert refused.status_code == 400
    assert error_of(refused)["details"][0]["field"] == "durable"
    assert tenant.client.get(f"/v1/memories/{plain['id']}").json()["data"]["version"] == 1


@pytest.mark.parametrize(
    "body", [{"version": 0}, {"durable": "yes"}, {"id": str(uuid.uuid4())}, {"kind": "fact"}]
)
def test_the_restore_route_refuses_bad_bodies(tenant: Tenant, body: dict[str, Any]) -> None:
    note = tenant.client.save("kept as it is")
    tool(tenant.client, "archive_memories", ids=[note["id"]])
    refused = restore(tenant.client, note["id"], body)
    assert refused.status_code == 400, refused.text
    assert error_of(refused)["code"] == "validation_error"
    listed = tool(tenant.client, "list_memories", archived=True)["items"]
    assert [(n["id"], n["version"]) for n in listed] == [(note["id"], 1)]


def test_the_restore_route_needs_write_and_the_notes_scope(make_tenant: Any) -> None:
    owner = make_tenant()
    note = owner.client.save("archived elsewhere")
    tool(owner.client, "archive_memories", ids=[note["id"]])
    stranger = make_tenant()
    assert restore(stranger.client, note["id"], {}).status_code == 404
    reader = owner.key("reader", read_only=True)
    refused = restore(reader, note["id"], {})
    assert refused.status_code == 403, refused.text
    listed = tool(owner.client, "list_memories", archived=True)["items"]
    assert [n["id"] for n in listed] == [note["id"]]


def parent_of(tenant: Tenant, notebook: str) -> str | None:
    """The notebook's parent, as the account's full-access key sees it."""
    listed = tool(tenant.client, "list_notebooks", root=False)["items"]
    parent: str | None = next(b["parentId"] for b in listed if b["id"] == notebook)
    return parent


def test_a_notebook_move_needs_grants_on_its_source_and_its_destination(tenant: Tenant) -> None:
    top, other = tenant.notebook("top"), tenant.notebook("other")
    granted_a = tenant.notebook("granted a", parent=top)
    granted_b = tenant.notebook("granted b", parent=other)
    hidden = tenant.notebook("hidden", parent=other)
    moving = tenant.notebook("moving", parent=granted_a)
    under_hidden = tenant.notebook("under hidden", parent=hidden)
    limited = tenant.key(
        "limited",
        personal=False,
        notebook_ids=[uuid.UUID(n) for n in (granted_a, granted_b, moving, under_hidden)],
    )

    def move(notebook: str, parent: str | None) -> requests.Response:
        return limited.post("/v1/tools/update_notebook", {"id": notebook, "parentId": parent})

    # The destination: an ungranted notebook is not found, the top level needs all notebooks.
    assert error_of(move(moving, hidden))["code"] == "not_found"
    to_root = move(moving, None)
    assert (to_root.status_code, error_of(to_root)["code"]) == (403, "forbidden")
    # The source: a notebook under an ungranted one, or at the top level, stays where it is.
    out_of_hidden = move(under_hidden, granted_b)
    assert (out_of_hidden.status_code, error_of(out_of_hidden)["code"]) == (403, "forbidden")
    from_root = move(granted_a, granted_b)
    assert (from_root.status_code, error_of(from_root)["code"]) == (403, "forbidden")
    assert "top level" in error_of(from_root)["message"]
    assert (parent_of(tenant, moving), parent_of(tenant, under_hidden)) == (granted_a, hidden)
    assert parent_of(tenant, granted_a) == top
    # Both granted: it moves; staying where it is needs no grant on the place.
    assert data_of(move(moving, granted_b))["parentId"] == granted_b
    assert parent_of(tenant, moving) == granted_b
    renamed = limited.post("/v1/tools/update_notebook", {"id": granted_a, "name": "renamed"})
    assert renamed.status_code == 200, renamed.text
    # A credential granted all notebooks moves to and from the top level.
    assert tool(tenant.client, "update_notebook", id=moving, parentId=None)["parentId"] is None
    assert tool(tenant.client, "update_notebook", id=moving, parentId=top)["parentId"] == top
