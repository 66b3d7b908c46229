"""Notes' REST paths beyond save, list, search and recall, on a Citus cluster.

The real grove-api runs against the coordinator of a coordinator and two workers
(``citus_api``), whose services' roles refuse any statement touching more than one shard
(``tests/support/cluster.py``): a per-account statement that does not name its account
as a value answers 500 there, and fails these tests. For two accounts, each seeing only
its own: idempotent saves and their replays, version races, reading a note, its
revisions and the activity, forgetting, archiving, moving and restoring notes, nested
notebooks with their moves and whole-subtree archive, restore and delete, batch saves,
and an export imported into a third account on the cluster (everything arrives, nothing
of another account). And two writes at once, each holding its live account, both commit
(holding the ``accounts`` row shared deadlocked them on the cluster).
"""

from __future__ import annotations

import json
import threading
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest
import requests

from grove_db import embedded
from grove_db.pool import hold_live_account, set_tenant
from tests.support.clients import Client, data_of, error_of, race
from tests.support.files import uploaded
from tests.support.tenants import Tenant, new_tenant, owner_session

#: Words only one account's notes hold, so a leak would be found in the other's answers.
WORDS = {"a": "quokka", "b": "narwhal"}


@pytest.fixture(scope="module")
def tenants(citus_database: embedded.EmbeddedDatabase, citus_api: str) -> dict[str, Tenant]:
    return {name: new_tenant(citus_database, citus_api) for name in WORDS}


@pytest.fixture(scope="module")
def owners(tenants: dict[str, Tenant], citus_issuer_key: Path) -> dict[str, Client]:
    return {name: owner_session(tenant, citus_issuer_key) for name, tenant in tenants.items()}


def other(name: str) -> str:
    return "b" if name == "a" else "a"


def ok(response: requests.Response, status: int = 200) -> Any:
    """The answer's data, after checking its status (a fan-out answers 500)."""
    assert response.status_code == status, response.text
    return data_of(response)


def test_saves_replay_race_and_read_back_on_one_shard(tenants: dict[str, Tenant]) -> None:
    notes: dict[str, str] = {}
    for name, tenant in tenants.items():
        client, word = tenant.client, WORDS[name]
        body = {"content": f"{word} replayed", "kind": "fact", "operationId": str(uuid.uuid4())}
        first = ok(client.post("/v1/memories", body), 201)
        assert ok(client.post("/v1/memories", body))["id"] == first["id"]  # a replay
        changed = client.post("/v1/memories", {**body, "content": f"{word} other"})
        assert error_of(changed)["code"] == "idempotency_conflict"
        notes[name] = first["id"]
        path = f"/v1/memories/{first['id']}"
        patch: dict[str, Any] = {"content": f"{word} corrected", "expectedVersion": 1}

        def correct(
            session: requests.Session, path: str = path, client: Client = client
        ) -> requests.Response:
            body = {**patch, "operationId": str(uuid.uuid4())}  # noqa: B023 (same each loop)
            return session.patch(client.base + path, json=body, headers=client.headers())

        raced = race([correct, correct])
        assert sorted(r.status_code for r in raced) == [200, 409], [r.text for r in raced]
        loser = next(r for r in raced if r.status_code == 409)
        assert error_of(loser)["code"] == "version_conflict"
        assert ok(client.get(path))["version"] == 2
        revisions = ok(client.get(f"{path}/revisions"))["items"]
        assert [(r["version"], r["content"]) for r in revisions] == [
            (1, f"{word} replayed"),
            (2, f"{word} corrected"),
        ]
        page = ok(client.get(f"{path}/revisions?limit=1"))
        assert page["nextAfterVersion"] == 1
        rest = ok(client.get(f"{path}/revisions?afterVersion=1"))["items"]
        assert [r["version"] for r in rest] == [2]
        activity = ok(client.get("/v1/activity"))["items"]
        assert {r["memoryId"] for r in activity} == {first["id"]}
        newest = ok(client.get("/v1/activity?limit=1"))
        later = ok(client.get(f"/v1/activity?limit=1&cursor={newest['nextCursor']}"))["items"]
        assert [r["version"] for r in newest["items"] + later] == [2, 1]
        saved = ok(client.post("/v1/memories/batch", {"items": batch_items(word)}))["items"]
        assert [item["status"] for item in saved] == ["created", "created", "failed"]
        again = ok(client.post("/v1/memories/batch", {"items": batch_items(word)}))["items"]
        assert [item["status"] for item in again[:2]] == ["replayed", "replayed"]
        assert [i["memory"]["id"] for i in again[:2]] == [i["memory"]["id"] for i in saved[:2]]
    for name, tenant in tenants.items():
        client, foreign = tenant.client, notes[other(name)]
        listed = ok(client.get("/v1/memories?limit=100"))["items"]
        assert {item["content"].split()[0] for item in listed} == {WORDS[name]}
        assert len(listed) == 3  # the note and the batch's two, once each
        assert client.get(f"/v1/memories/{foreign}").status_code == 404
        assert client.get(f"/v1/memories/{foreign}/revisions").status_code == 404
        gone = ok(client.post("/v1/memories/forget", {"ids": [foreign, notes[name]]}))
        assert [r["outcome"] for r in gone["results"]] == ["not_found", "deleted"]
        assert client.get(f"/v1/memories/{notes[name]}").status_code == 404
    for tenant in tenants.values():  # the other account's forget touched nothing here
        assert len(ok(tenant.client.get("/v1/memories?limit=100"))["items"]) == 2


def batch_items(word: str) -> list[dict[str, Any]]:
    """Two saves with fixed operationIds (a resent batch replays them) and a bad one."""
    seed = uuid.uuid5(uuid.NAMESPACE_URL, word)
    return [
        {
            "content": f"{word} batched {n}",
            "kind": "fact",
            "operationId": str(uuid.uuid5(seed, str(n))),
        }
        for n in range(2)
    ] + [{"content": f"{word} nowhere", "kind": "fact", "projectId": str(uuid.uuid4())}]


def test_archive_move_and_restore_notes_on_one_shard(
    tenants: dict[str, Tenant], owners: dict[str, Client]
) -> None:
    notes: dict[str, dict[str, Any]] = {}
    for name, tenant in tenants.items():
        client, word = tenant.client, WORDS[name]
        shelf = tenant.notebook(f"{word} shelf")
        note = ok(
            client.post("/v1/memories", {"content": f"{word} to archive", "kind": "fact"}), 201
        )
        notes[name] = note
        archived = ok(client.post("/v1/tools/archive_memories", {"ids": [note["id"]]}))
        assert archived["results"][0]["outcome"] == "archived"
        assert ok(client.get(f"/v1/memories/{note['id']}"))["archived"] is True
        back = ok(client.post(f"/v1/memories/{note['id']}/restore", {}))
        assert back["archived"] is False and back["version"] == 1
        moved = ok(
            client.post("/v1/tools/move_memories", {"ids": [note["id"]], "projectId": shelf})
        )
        assert moved["items"][0]["projectId"] == shelf and moved["items"][0]["version"] == 2
        old = ok(client.post(f"/v1/memories/{note['id']}/restore", {"version": 1}))
        assert (old["version"], old["content"]) == (3, f"{word} to archive")
        handoff = {"content": f"{word} handoff", "kind": "handoff", "taskId": f"{word}-task"}
        saved = ok(client.post("/v1/memories", handoff), 201)
        assert ok(client.post("/v1/memories", handoff))["id"] == saved["id"]  # same task
        durable = ok(owners[name].post(f"/v1/memories/{saved['id']}/restore", {"durable": True}))
        assert (durable["kind"], durable["retentionDays"]) == ("fact", None)
        # An expired note comes back for the owner only; an expired handoff's task
        # starts a fresh note (the old one superseded).
        lapsed = ok(client.post("/v1/memories", {**handoff, "taskId": f"{word}-2"}), 201)
        expire(tenant.database, lapsed["id"])
        refused = client.post(f"/v1/memories/{lapsed['id']}/restore", {})
        assert error_of(refused)["code"] == "owner_session_required"
        fresh = ok(client.post("/v1/memories", {**handoff, "taskId": f"{word}-2"}), 201)
        assert fresh["id"] != lapsed["id"]
        # The task has its fresh handoff: the old one comes back only as a fact.
        taken = owners[name].post(f"/v1/memories/{lapsed['id']}/restore", {})
        assert (taken.status_code, error_of(taken)["code"]) == (409, "conflict"), taken.text
        revived = ok(owners[name].post(f"/v1/memories/{lapsed['id']}/restore", {"durable": True}))
        assert (revived["kind"], revived["retentionDays"]) == ("fact", None)
    for name, tenant in tenants.items():
        foreign = notes[other(name)]["id"]
        client = tenant.client
        refused = client.post("/v1/tools/archive_memories", {"ids": [foreign]})
        assert ok(refused)["results"][0]["outcome"] == "not_found"
        assert client.post(f"/v1/memories/{foreign}/restore", {}).status_code == 404
        assert owners[name].post(f"/v1/memories/{foreign}/restore", {}).status_code == 404
        move = client.post("/v1/tools/move_memories", {"ids": [foreign], "projectId": None})
        assert error_of(move)["code"] == "move_refused", move.text


def expire(database: embedded.EmbeddedDatabase, note_id: str) -> None:
    """Move a note's expiry into the past, as the superuser (no row-level security)."""
    with psycopg.connect(database.grove_superuser_url, autocommit=True) as conn:
        updated = conn.execute(
            "UPDATE memories SET expires_at = now() - interval '1 second' WHERE id = %s",
            (note_id,),
        ).rowcount
    assert updated == 1


def test_notebook_trees_move_and_their_subtrees_archive_restore_and_delete(
    tenants: dict[str, Tenant], owners: dict[str, Client]
) -> None:
    roots: dict[str, str] = {}
    for name, tenant in tenants.items():
        client, owner, word = tenant.client, owners[name], WORDS[name]
        root = roots[name] = tenant.notebook(f"{word} root")
        middle = tenant.notebook("middle", root)
        leaf = tenant.notebook("leaf", middle)
        ok(
            client.post(
                "/v1/memories",
                {"content": f"{word} in the leaf", "kind": "fact", "projectId": leaf},
            ),
            201,
        )
        children = ok(client.get(f"/v1/notebooks?parentId={root}"))["items"]
        assert [c["id"] for c in children] == [middle]
        cycle = client.post("/v1/tools/update_notebook", {"id": root, "parentId": leaf})
        assert error_of(cycle)["code"] == "notebook_cycle"
        renamed = ok(client.post("/v1/tools/update_notebook", {"id": leaf, "name": "renamed"}))
        assert renamed["name"] == "renamed"
        moved = ok(client.post("/v1/tools/update_notebook", {"id": leaf, "parentId": root}))
        assert moved["parentId"] == root
        preview = ok(owner.get(f"/v1/notebooks/{root}/subtree"))
        assert (preview["notebooks"], preview["notes"]) == (3, 1)
        fingerprint = {"fingerprint": preview["fingerprint"]}
        archived = ok(owner.post(f"/v1/notebooks/{root}/archive", fingerprint))
        assert (archived["notebooks"], archived["notes"]) == (3, 1)
        shelved = ok(owner.get("/v1/notebooks/archived"))["items"]
        assert {n["id"] for n in shelved} == {root, middle, leaf}
        stale = owner.post(f"/v1/notebooks/{root}/restore", fingerprint)
        assert error_of(stale)["code"] == "subtree_changed"
        again = ok(owner.get(f"/v1/notebooks/{root}/subtree"))["fingerprint"]
        ok(owner.post(f"/v1/notebooks/{root}/restore", {"fingerprint": again}))
        assert ok(client.get("/v1/memories?limit=100&projectId=" + leaf))["items"]
    for name, tenant in tenants.items():
        owner, foreign = owners[name], roots[other(name)]
        assert owner.get(f"/v1/notebooks/{foreign}/subtree").status_code == 404
        mine = ok(owner.get(f"/v1/notebooks/{roots[name]}/subtree"))
        assert mine["notebooks"] == 3  # the other account's archive and restore left it
        fingerprint = {"fingerprint": mine["fingerprint"]}
        gone = ok(owner.post(f"/v1/notebooks/{roots[name]}/delete", fingerprint))
        assert (gone["notebooks"], gone["notes"]) == (3, 1)
        move = tenant.client.post("/v1/tools/update_notebook", {"id": foreign, "name": "x"})
        assert move.status_code == 404


def test_an_export_imports_into_another_account_on_the_cluster(
    citus_database: embedded.EmbeddedDatabase,
    citus_api: str,
    citus_issuer_key: Path,
    tenants: dict[str, Tenant],
    owners: dict[str, Client],
) -> None:
    # A fresh source (its notes beside the other accounts' on the cluster), its export
    # exactly what it saved here.
    source, word = new_tenant(citus_database, citus_api), WORDS["a"]
    top = source.notebook(f"{word} exported")
    inner = source.notebook("inner", top)
    note = source.client.save(f"{word} exported note", projectId=inner)
    ok(source.client.patch(f"/v1/memories/{note['id']}", {"content": f"{word} exported, v2"}))
    uploaded(source.client, f"{word} runbook".encode(), projectId=top)
    # An API key's export (an owner session's adds the connections and conversations).
    exported = source.client.get("/v1/export")
    assert exported.status_code == 200, exported.text
    lines = [json.loads(line) for line in exported.text.splitlines()]
    assert WORDS["b"] not in exported.text
    target = new_tenant(citus_database, citus_api)
    owner = owner_session(target, citus_issuer_key)
    import_id = str(uuid.uuid4())
    sent = owner.session.post(
        owner.base + "/v1/import",
        params={"id": import_id},
        data=exported.content,
        headers=owner.headers({"Content-Type": "application/x-ndjson"}),
        timeout=60,
    )
    counts = ok(sent)["counts"]
    exported_notes = [line for line in lines if line["type"] == "memory"]
    assert len(exported_notes) == 1 and len(exported_notes[0]["revisions"]) == 2
    assert (counts["notebooks"], counts["notes"], counts["revisions"], counts["files"]) == (
        2,
        1,
        2,
        1,
    )
    assert ok(owner.get(f"/v1/import/{import_id}"))["state"] == "done"
    resent = owner.session.post(
        owner.base + "/v1/import",
        params={"id": import_id},
        data=exported.content,
        headers=owner.headers({"Content-Type": "application/x-ndjson"}),
        timeout=60,
    )
    assert ok(resent)["counts"]["skippedNotes"] == len(exported_notes)  # nothing twice
    contents = sorted(
        n["content"] for n in ok(target.client.get("/v1/memories?limit=100"))["items"]
    )
    assert contents == [f"{word} exported, v2"]
    files = ok(target.client.get("/v1/files"))["items"]
    assert [f["name"] for f in files] == ["runbook.txt"]
    again = target.client.get("/v1/export")
    assert again.status_code == 200 and WORDS["b"] not in again.text
    # Another account's owner does not see this import.
    assert owners["a"].get(f"/v1/import/{import_id}").status_code == 404


def test_concurrent_writes_holding_their_accounts_never_deadlock(
    citus_database: embedded.EmbeddedDatabase, tenants: dict[str, Tenant]
) -> None:
    """Every write holds its live account first (``pool.hold_live_account``), then
    writes tables whose foreign keys point at ``accounts``, a reference table on the
    cluster. Two such writes at once, of two accounts, both commit: holding the row
    ``FOR SHARE`` deadlocked them on the reference table's shard lock."""
    conns = [psycopg.connect(citus_database.runtime_url) for _ in tenants]
    try:
        for conn, tenant in zip(conns, tenants.values(), strict=True):
            conn.execute("BEGIN")
            # A wait ends as an error rather than hanging the test (the cluster's deadlock
            # detection did not always end it).
            conn.execute("SET LOCAL lock_timeout = '5s'")
            set_tenant(conn, tenant.account_id)
            assert hold_live_account(conn, tenant.account_id)
        errors: list[BaseException] = []

        def write(conn: psycopg.Connection[Any], tenant: Tenant) -> None:
            try:
                conn.execute(
                    "INSERT INTO memories (account_id, id, kind, content, indexing)"
                    " VALUES (%s, %s, 'fact', 'held and written', 'disabled')",
                    (tenant.account_id, uuid.uuid4()),
                )
                conn.execute("COMMIT")
            except BaseException as ex:  # re-raised in the test's thread
                errors.append(ex)

        threads = [
            threading.Thread(target=write, args=pair)
            for pair in zip(conns, tenants.values(), strict=True)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert errors == []
    finally:
        for conn in conns:
            conn.close()
