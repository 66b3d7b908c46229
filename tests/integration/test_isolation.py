"""Tenant isolation: no route, no key and no database session crosses an account or a grant.

Three layers are checked: the HTTP routes between two accounts, the grants of keys
within one account, and row-level security in PostgreSQL itself (as the runtime role).
Every test runs twice (``each_engine``): on the embedded server, and on the Citus
cluster, where the api's statements are refused if they fan out and the runtime role's
reads go through the coordinator to every shard, so that row-level security is checked
on every node.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from uuid import UUID, uuid4

import psycopg
import pytest
import requests

from grove_db import citus, embedded
from grove_db.pool import fan_out, set_tenant
from tests.support.clients import Client
from tests.support.tenants import Tenant, new_tenant

#: Distinctive words, so that search and recall would match a foreign note if it leaked.
WORD = "xylophone"
OTHER_WORD = "zeppelin"

TENANT_TABLES = (
    "memories",
    "memory_revisions",
    "projects",
    "operations",
    "connections",
    "connection_projects",
    "api_keys",
    "api_key_lookup",
    "jobs",
    "embeddings",
    "account_owners",
    "accounts",
)


@pytest.fixture
def make_tenant(each_engine: tuple[embedded.EmbeddedDatabase, str]) -> Callable[[], Tenant]:
    """Fresh accounts on the engine of this run of the test (``tenant`` is one of them)."""
    database, url = each_engine
    return lambda: new_tenant(database, url)


@dataclass
class World:
    """Account A (the owner) with data in every table, and account B (the intruder)."""

    owner: Tenant
    intruder: Tenant
    notebook: str
    personal: dict[str, Any]
    filed: dict[str, Any]
    handoff: dict[str, Any]
    operation_id: str

    @property
    def note_ids(self) -> set[str]:
        return {self.personal["id"], self.filed["id"], self.handoff["id"]}


@pytest.fixture
def world(make_tenant: Callable[[], Tenant]) -> World:
    owner, intruder = make_tenant(), make_tenant()
    notebook = owner.notebook(f"{WORD} secret notebook")
    operation_id = str(uuid4())
    personal = owner.client.save(
        f"{WORD} personal secret of the owner", "preference", operationId=operation_id
    )
    filed = owner.client.save(
        f"{WORD} {OTHER_WORD} notebook secret", "decision", projectId=notebook
    )
    handoff = owner.client.save(f"{WORD} owner handoff", "handoff", taskId="task-1")
    # Rows in connection_projects (a key limited to the notebook) and in jobs (the
    # test deployment has no embedding profile, so no save queues a job by itself).
    owner.key("notebook only", personal=False, all_notebooks=False, notebook_ids=[UUID(notebook)])
    with psycopg.connect(owner.database.migration_url) as conn, conn.transaction():
        set_tenant(conn, owner.account_id)
        conn.execute(
            "INSERT INTO jobs (account_id, kind, memory_id, version, profile)"
            " VALUES (%s, 'embed_revision', %s, 1, 'minilm')",
            (owner.account_id, personal["id"]),
        )
        conn.execute(
            "INSERT INTO embeddings (account_id, memory_id, version, profile, dimensions,"
            " embedding) VALUES (%s, %s, 1, 'test', 3, '[1,0,0]')",
            (owner.account_id, personal["id"]),
        )
        conn.execute(
            "INSERT INTO account_owners (account_id, issuer, subject) VALUES (%s, %s, %s)",
            (owner.account_id, "https://issuer.test", f"owner-{owner.account_id}"),
        )
    return World(owner, intruder, notebook, personal, filed, handoff, operation_id)


def assert_error(response: requests.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["success"] is False
    assert body["error"]["code"] == code, body


def assert_untouched(world: World) -> None:
    """The owner still reads every note exactly as saved, at version 1 with one revision."""
    for note in (world.personal, world.filed, world.handoff):
        response = world.owner.client.get(f"/v1/memories/{note['id']}")
        assert response.status_code == 200, response.text
        current = response.json()["data"]
        assert current["version"] == 1
        assert current["content"] == note["content"]
        assert current["projectId"] == note["projectId"]
        assert current["updatedAt"] == note["updatedAt"]
        revisions = world.owner.client.get(f"/v1/memories/{note['id']}/revisions")
        assert [r["version"] for r in revisions.json()["data"]["items"]] == [1]


def listed_ids(client: Client, query: str = "") -> set[str]:
    response = client.get("/v1/memories?limit=100" + query)
    assert response.status_code == 200, response.text
    return {item["id"] for item in response.json()["data"]["items"]}


def searched_ids(client: Client, query: str = WORD, **fields: Any) -> set[str]:
    response = client.post("/v1/memories/search", {"query": query, **fields})
    assert response.status_code == 200, response.text
    return {item["memory"]["id"] for item in response.json()["data"]["items"]}


def recalled(client: Client, **fields: Any) -> dict[str, Any]:
    response = client.post("/v1/recall", {"query": WORD, **fields})
    assert response.status_code == 200, response.text
    return response.json()["data"]  # type: ignore[no-any-return]


def recalled_ids(client: Client, **fields: Any) -> set[str]:
    return {item["memory"]["id"] for item in recalled(client, **fields)["items"]}


def exported(client: Client) -> tuple[set[str], set[str]]:
    """The note IDs of the export's memory lines and of its revision lines."""
    response = client.get("/v1/export")
    assert response.status_code == 200, response.text
    lines = [json.loads(line) for line in response.text.splitlines() if line]
    notes = [line for line in lines if line["type"] == "memory"]
    memories = {line["memory"]["id"] for line in notes}
    revisions = {r["memoryId"] for line in notes for r in line["revisions"]}
    return memories, revisions


def notebook_ids(client: Client) -> set[str]:
    response = client.get("/v1/notebooks")
    assert response.status_code == 200, response.text
    return {item["id"] for item in response.json()["data"]["items"]}


# --- Across accounts, route by route -------------------------------------------------


def test_other_account_cannot_read_note_by_id(world: World) -> None:
    for note_id in world.note_ids:
        assert_error(world.intruder.client.get(f"/v1/memories/{note_id}"), 404, "not_found")
    assert_untouched(world)


def test_other_account_cannot_patch_note(world: World) -> None:
    for note_id in world.note_ids:
        response = world.intruder.client.patch(f"/v1/memories/{note_id}", {"content": "hijacked"})
        assert_error(response, 404, "not_found")
        response = world.intruder.client.patch(
            f"/v1/memories/{note_id}", {"content": "hijacked", "expectedVersion": 1}
        )
        assert_error(response, 404, "not_found")
    assert_untouched(world)


def test_other_account_cannot_read_note_revisions(world: World) -> None:
    for note_id in world.note_ids:
        response = world.intruder.client.get(f"/v1/memories/{note_id}/revisions")
        assert_error(response, 404, "not_found")
    assert_untouched(world)


def test_other_account_cannot_correct_note_through_remember_with_id(world: World) -> None:
    for note_id in world.note_ids:
        for extra in ({}, {"expectedVersion": 1}):
            response = world.intruder.client.post(
                "/v1/memories", {"id": note_id, "content": "hijacked", "kind": "fact", **extra}
            )
            assert_error(response, 404, "not_found")
    assert_untouched(world)
    assert listed_ids(world.intruder.client) == set()


def test_other_account_forget_reports_not_found_and_note_survives(world: World) -> None:
    ids = sorted(world.note_ids)
    response = world.intruder.client.post("/v1/memories/forget", {"ids": ids})
    assert response.status_code == 200, response.text
    assert response.json()["data"]["results"] == [{"id": i, "outcome": "not_found"} for i in ids]
    items = [{"id": i, "expectedVersion": 1} for i in ids]
    response = world.intruder.client.post("/v1/memories/forget", {"items": items})
    assert response.status_code == 200, response.text
    assert response.json()["data"]["results"] == [{"id": i, "outcome": "not_found"} for i in ids]
    assert_untouched(world)
    assert listed_ids(world.owner.client) == world.note_ids


def test_other_account_cannot_save_into_foreign_notebook(world: World) -> None:
    response = world.intruder.client.post(
        "/v1/memories", {"content": "planted", "kind": "fact", "projectId": world.notebook}
    )
    assert_error(response, 404, "not_found")
    own = world.intruder.client.save("mine")
    response = world.intruder.client.patch(
        f"/v1/memories/{own['id']}", {"projectId": world.notebook}
    )
    assert_error(response, 404, "not_found")
    correction = {"id": own["id"], "content": "mine", "kind": "fact", "projectId": world.notebook}
    assert_error(world.intruder.client.post("/v1/memories", correction), 404, "not_found")
    assert listed_ids(world.owner.client, f"&projectId={world.notebook}") == {world.filed["id"]}
    assert listed_ids(world.intruder.client) == {own["id"]}


def test_other_account_cannot_nest_notebook_under_foreign_notebook(world: World) -> None:
    response = world.intruder.client.post(
        "/v1/notebooks", {"name": "cuckoo", "parentId": world.notebook}
    )
    assert_error(response, 404, "not_found")
    assert notebook_ids(world.intruder.client) == set()
    assert notebook_ids(world.owner.client) == {world.notebook}


def test_other_account_listings_contain_nothing_foreign(world: World) -> None:
    client = world.intruder.client
    # The intruder's own notes match the same words, so an empty result is not vacuous.
    own_notebook = world.intruder.notebook(f"{WORD} intruder notebook")
    own_personal = client.save(f"{WORD} intruder personal", "preference")["id"]
    own_filed = client.save(
        f"{WORD} {OTHER_WORD} intruder filed", "decision", projectId=own_notebook
    )["id"]
    own = {own_personal, own_filed}
    assert listed_ids(client) == own
    assert searched_ids(client) == own
    # Both words: both own notes match (any word), never another account's.
    assert searched_ids(client, f"{WORD} {OTHER_WORD}") == own
    assert searched_ids(client, OTHER_WORD) == {own_filed}
    assert not searched_ids(client, "owner") & world.note_ids
    assert not searched_ids(client, "secret") & world.note_ids
    assert recalled_ids(client) == {own_personal}
    assert recalled_ids(client, projectId=own_notebook) == own
    assert recalled(client, taskId="task-1")["handoff"] is None
    profile = client.post("/v1/recall", {})
    assert profile.status_code == 200, profile.text
    assert not {i["memory"]["id"] for i in profile.json()["data"]["items"]} & world.note_ids
    memories, revisions = exported(client)
    assert memories == own
    assert revisions == own
    assert notebook_ids(client) == {own_notebook}
    names = {n["name"] for n in client.get("/v1/notebooks").json()["data"]["items"]}
    assert names == {f"{WORD} intruder notebook"}
    assert_untouched(world)


def test_other_account_listing_by_foreign_notebook_is_empty(world: World) -> None:
    world.intruder.client.save(f"{WORD} intruder personal")
    assert listed_ids(world.intruder.client, f"&projectId={world.notebook}") == set()


def test_other_account_filtering_by_a_foreign_connection_finds_nothing(world: World) -> None:
    owners_connection = world.personal["savedBy"]["connectionId"]
    assert listed_ids(world.owner.client, f"&connectionId={owners_connection}") == world.note_ids
    world.intruder.client.save(f"{WORD} intruder personal")
    assert listed_ids(world.intruder.client, f"&connectionId={owners_connection}") == set()
    assert searched_ids(world.intruder.client, connectionId=owners_connection) == set()
    assert searched_ids(world.owner.client, connectionId=owners_connection) == world.note_ids
    for query in ("", f"?connectionId={owners_connection}"):
        response = world.intruder.client.get("/v1/activity" + query)
        assert response.status_code == 200, response.text
        revised = {r["memoryId"] for r in response.json()["data"]["items"]}
        assert not revised & world.note_ids
    own = world.owner.client.get(f"/v1/activity?connectionId={owners_connection}")
    assert {r["memoryId"] for r in own.json()["data"]["items"]} == world.note_ids


def test_other_account_duplicates_show_only_its_own_notes(world: World) -> None:
    text = f"{WORD} the billing deploy runs every Tuesday at ten"
    owners = {world.owner.client.save(text)["id"], world.owner.client.save(text + ".")["id"]}
    own = {world.intruder.client.save(text)["id"], world.intruder.client.save(text + "!")["id"]}

    def grouped(client: Client) -> list[set[str]]:
        response = client.get("/v1/duplicates")
        assert response.status_code == 200, response.text
        return [{n["id"] for n in g["notes"]} for g in response.json()["data"]["groups"]]

    assert grouped(world.intruder.client) == [own]
    assert grouped(world.owner.client) == [owners]


def test_other_account_cannot_recall_or_search_in_foreign_notebook(world: World) -> None:
    client = world.intruder.client
    assert_error(
        client.post("/v1/recall", {"query": WORD, "projectId": world.notebook}), 404, "not_found"
    )
    assert_error(client.post("/v1/recall", {"projectId": world.notebook}), 404, "not_found")
    response = client.post("/v1/memories/search", {"query": WORD, "projectId": world.notebook})
    assert_error(response, 404, "not_found")


def test_other_account_handoff_for_same_task_does_not_touch_owner_handoff(world: World) -> None:
    response = world.intruder.client.post(
        "/v1/memories", {"content": "intruder handoff", "kind": "handoff", "taskId": "task-1"}
    )
    assert response.status_code == 201, response.text
    assert response.json()["data"]["id"] != world.handoff["id"]
    assert response.json()["data"]["version"] == 1
    assert_untouched(world)


def test_other_account_reusing_operation_id_does_not_replay_foreign_result(world: World) -> None:
    body = {
        "content": world.personal["content"],
        "kind": "preference",
        "operationId": world.operation_id,
    }
    response = world.intruder.client.post("/v1/memories", body)
    assert response.status_code == 201, response.text
    assert response.json()["data"]["id"] != world.personal["id"]
    assert_untouched(world)


# --- Within one account, by grant ----------------------------------------------------


Grants = tuple[Tenant, str, str, dict[str, Any], dict[str, Any], dict[str, Any]]


@pytest.fixture
def grants(tenant: Tenant) -> Grants:
    """One account with a personal note and a note in each of two notebooks."""
    first, second = tenant.notebook("first"), tenant.notebook("second")
    personal = tenant.client.save(f"{WORD} personal note")
    in_first = tenant.client.save(f"{WORD} first notebook note", projectId=first)
    in_second = tenant.client.save(f"{WORD} second notebook note", projectId=second)
    return tenant, first, second, personal, in_first, in_second


def test_personal_only_key_sees_personal_notes_but_not_notebook_notes(grants: Grants) -> None:
    tenant, first, _second, personal, in_first, in_second = grants
    key = tenant.key("personal only", personal=True, all_notebooks=False)
    assert key.get(f"/v1/memories/{personal['id']}").status_code == 200
    for note in (in_first, in_second):
        assert_error(key.get(f"/v1/memories/{note['id']}"), 404, "not_found")
        assert_error(key.get(f"/v1/memories/{note['id']}/revisions"), 404, "not_found")
        assert_error(key.patch(f"/v1/memories/{note['id']}", {"content": "x"}), 404, "not_found")
    assert listed_ids(key) == {personal["id"]}
    assert listed_ids(key, f"&projectId={first}") == set()
    assert searched_ids(key) == {personal["id"]}
    assert recalled_ids(key) == {personal["id"]}
    assert exported(key) == ({personal["id"]}, {personal["id"]})
    assert notebook_ids(key) == set()
    assert_error(key.post("/v1/recall", {"projectId": first}), 404, "not_found")
    saved = key.post("/v1/memories", {"content": "planted", "kind": "fact", "projectId": first})
    assert_error(saved, 404, "not_found")
    moved = key.patch(f"/v1/memories/{personal['id']}", {"projectId": first})
    assert_error(moved, 404, "not_found")
    correction = {"id": in_first["id"], "content": "pulled out", "kind": "fact"}
    assert_error(key.post("/v1/memories", correction), 404, "not_found")
    forgotten = key.post("/v1/memories/forget", {"ids": [in_first["id"]]})
    assert forgotten.json()["data"]["results"] == [{"id": in_first["id"], "outcome": "not_found"}]
    assert tenant.client.get(f"/v1/memories/{in_first['id']}").json()["data"]["version"] == 1
    assert key.save("my own personal note")["projectId"] is None


def test_single_notebook_key_sees_only_its_notebook(grants: Grants) -> None:
    tenant, first, second, personal, in_first, in_second = grants
    key = tenant.key("first only", personal=False, all_notebooks=False, notebook_ids=[UUID(first)])
    assert key.get(f"/v1/memories/{in_first['id']}").status_code == 200
    assert key.get(f"/v1/memories/{in_first['id']}/revisions").status_code == 200
    for note in (personal, in_second):
        assert_error(key.get(f"/v1/memories/{note['id']}"), 404, "not_found")
        assert_error(key.get(f"/v1/memories/{note['id']}/revisions"), 404, "not_found")
    assert listed_ids(key) == {in_first["id"]}
    assert listed_ids(key, f"&projectId={second}") == set()
    assert listed_ids(key, "&projectId=personal") == set()
    assert searched_ids(key) == {in_first["id"]}
    assert recalled_ids(key, projectId=first) == {in_first["id"]}
    assert exported(key) == ({in_first["id"]}, {in_first["id"]})
    assert notebook_ids(key) == {first}
    assert_error(key.post("/v1/recall", {"query": WORD, "projectId": second}), 404, "not_found")
    search = key.post("/v1/memories/search", {"query": WORD, "projectId": second})
    assert_error(search, 404, "not_found")
    for target in (second, None):
        saved = key.post(
            "/v1/memories", {"content": "planted", "kind": "fact", "projectId": target}
        )
        assert_error(saved, 404, "not_found")
        moved = key.patch(f"/v1/memories/{in_first['id']}", {"projectId": target})
        assert_error(moved, 404, "not_found")
    assert_error(key.post("/v1/notebooks", {"name": "mine"}), 403, "forbidden")
    forgotten = key.post("/v1/memories/forget", {"ids": [in_second["id"], personal["id"]]})
    outcomes = [r["outcome"] for r in forgotten.json()["data"]["results"]]
    assert outcomes == ["not_found", "not_found"]
    for note in (personal, in_first, in_second):
        current = tenant.client.get(f"/v1/memories/{note['id']}").json()["data"]
        assert (current["version"], current["projectId"]) == (1, note["projectId"])
    assert key.save("filed by the key", projectId=first)["projectId"] == first


def test_read_only_key_cannot_write_but_can_read(grants: Grants) -> None:
    tenant, first, second, personal, in_first, in_second = grants
    key = tenant.key("reader", personal=True, all_notebooks=True, read_only=True)
    assert_error(key.post("/v1/memories", {"content": "no", "kind": "fact"}), 403, "forbidden")
    correction = {"id": personal["id"], "content": "no", "kind": "fact"}
    assert_error(key.post("/v1/memories", correction), 403, "forbidden")
    assert_error(key.patch(f"/v1/memories/{personal['id']}", {"content": "no"}), 403, "forbidden")
    assert_error(key.post("/v1/memories/forget", {"ids": [personal["id"]]}), 403, "forbidden")
    assert_error(key.post("/v1/notebooks", {"name": "no"}), 403, "forbidden")
    every = {personal["id"], in_first["id"], in_second["id"]}
    assert key.get(f"/v1/memories/{personal['id']}").json()["data"]["version"] == 1
    assert key.get(f"/v1/memories/{in_first['id']}/revisions").status_code == 200
    assert listed_ids(key) == every
    assert searched_ids(key) == every
    assert recalled_ids(key) == {personal["id"]}
    assert recalled_ids(key, projectId=first) == {personal["id"], in_first["id"]}
    assert exported(key)[0] == every
    assert notebook_ids(key) == {first, second}
    assert listed_ids(tenant.client) == every
    assert (
        tenant.client.get(f"/v1/memories/{personal['id']}").json()["data"]["content"]
        == (personal["content"])
    )


def test_a_notebook_key_reads_no_revision_saved_outside_its_grants(tenant: Tenant) -> None:
    notebook = tenant.notebook("banking")
    note = tenant.client.save("Bank PIN is 4711")  # personal then
    tenant.client.patch(f"/v1/memories/{note['id']}", {"content": "Bank PIN: ask me"})
    moved = tenant.client.patch(f"/v1/memories/{note['id']}", {"projectId": notebook})
    assert moved.json()["data"]["version"] == 3
    reader = tenant.key(
        "banking reader",
        personal=False,
        all_notebooks=False,
        notebook_ids=[UUID(notebook)],
        read_only=True,
    )
    writer = tenant.key(
        "banking writer", personal=False, all_notebooks=False, notebook_ids=[UUID(notebook)]
    )

    def versions(items: list[dict[str, Any]]) -> list[int]:
        return [r["version"] for r in items]

    revisions = reader.get(f"/v1/memories/{note['id']}/revisions").json()["data"]["items"]
    assert versions(revisions) == [3]
    history = reader.post("/v1/tools/memory_history", {"id": note["id"]}).json()["data"]
    assert versions(history["items"]) == [3]
    lines = [json.loads(line) for line in reader.get("/v1/export").text.splitlines()]
    exported_note = next(line for line in lines if line["type"] == "memory")
    assert versions(exported_note["revisions"]) == [3]
    assert "PIN is 4711" not in json.dumps(lines)  # (a bare "4711" may be in an id)
    restored = writer.post("/v1/tools/restore_memory", {"id": note["id"], "version": 1})
    assert_error(restored, 404, "not_found")
    current = tenant.client.get(f"/v1/memories/{note['id']}").json()["data"]
    assert (current["version"], current["content"]) == (3, "Bank PIN: ask me")
    # The account's own full key still sees every revision.
    full = tenant.client.get(f"/v1/memories/{note['id']}/revisions").json()["data"]["items"]
    assert versions(full) == [1, 2, 3]


# --- Row-level security in the database ----------------------------------------------


def _account_ids(conn: psycopg.Connection[Any], table: str) -> list[UUID]:
    column = "id" if table == "accounts" else "account_id"
    return [row[0] for row in conn.execute(f"SELECT {column} FROM {table}")]


def _count(conn: psycopg.Connection[Any], table: str) -> int:
    row = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
    assert row is not None
    return int(row[0])


@contextmanager
def every_shard(conn: psycopg.Connection[Any], account_id: UUID | None = None) -> Iterator[None]:
    """A transaction of the runtime role (as ``account_id``, or as no account) whose
    statements name no account: on the cluster they run on every shard (``fan_out``, so
    the guard lets them), and only row-level security on each node keeps the other
    accounts' rows out; on one server, the same statements on the one table."""
    with conn.transaction():
        if account_id is not None:
            set_tenant(conn, account_id)
        fan_out(conn)
        yield


def test_runtime_role_sees_no_foreign_rows_in_any_tenant_table(world: World) -> None:
    a, b = world.owner.account_id, world.intruder.account_id
    with psycopg.connect(world.owner.database.runtime_url, autocommit=True) as conn:
        # As the owner, every table holds at least one row: the checks below are not vacuous.
        with every_shard(conn, a):
            for table in TENANT_TABLES:
                assert _count(conn, table) > 0, table
                assert set(_account_ids(conn, table)) == {a}, table
        with every_shard(conn, b):
            for table in TENANT_TABLES:
                ids = _account_ids(conn, table)
                assert _count(conn, table) == len(ids), table
                assert a not in ids, table
                assert set(ids) <= {b}, table
            assert _account_ids(conn, "accounts") == [b]
            memory_ids = {str(r[0]) for r in conn.execute("SELECT id FROM memories")}
            revision_ids = {
                str(r[0]) for r in conn.execute("SELECT memory_id FROM memory_revisions")
            }
            notebook_ids = {str(r[0]) for r in conn.execute("SELECT id FROM projects")}
            linked = {str(r[0]) for r in conn.execute("SELECT project_id FROM connection_projects")}
            jobs = {str(r[0]) for r in conn.execute("SELECT memory_id FROM jobs")}
            operations = {str(r[0]) for r in conn.execute("SELECT id FROM operations")}
            keys = {r[0] for r in conn.execute("SELECT id FROM api_keys")}
            assert not (memory_ids | revision_ids | jobs) & world.note_ids
            assert world.notebook not in notebook_ids | linked
            assert world.operation_id not in operations
            assert world.owner.key_id not in keys
            assert world.intruder.key_id in keys


def test_runtime_role_without_tenant_context_sees_no_rows(world: World) -> None:
    with psycopg.connect(world.owner.database.runtime_url, autocommit=True) as conn:
        with every_shard(conn):
            for table in TENANT_TABLES:
                assert _count(conn, table) == 0, table
        # A transaction-local context ends with its transaction.
        with every_shard(conn, world.owner.account_id):
            assert _count(conn, "memories") == len(world.note_ids)
        with every_shard(conn):
            assert _count(conn, "memories") == 0
            assert conn.execute("SELECT id FROM memories").fetchall() == []


def test_runtime_role_cannot_write_rows_for_another_account(world: World) -> None:
    a, b = world.owner.account_id, world.intruder.account_id
    own = world.intruder.client.save("intruder note")
    with psycopg.connect(world.owner.database.runtime_url, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            with every_shard(conn, b):
                conn.execute(
                    "INSERT INTO memories (account_id, id, kind, content, indexing)"
                    " VALUES (%s, %s, 'fact', 'planted', 'disabled')",
                    (a, uuid4()),
                )
        # One server refuses the move by the policy's check; Citus refuses to change a
        # row's distribution column at all, before any node runs the statement.
        error, reason = (
            (psycopg.errors.FeatureNotSupported, "modifying the partition value")
            if isinstance(world.owner.database.server, citus.Cluster)
            else (psycopg.errors.InsufficientPrivilege, "row-level security")
        )
        with pytest.raises(error, match=reason):
            with every_shard(conn, b):
                conn.execute("UPDATE memories SET account_id = %s WHERE id = %s", (a, own["id"]))
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            with every_shard(conn, b):
                conn.execute(
                    "INSERT INTO projects (account_id, id, name) VALUES (%s, %s, 'planted')",
                    (a, uuid4()),
                )
        with every_shard(conn, b):
            updated = conn.execute(
                "UPDATE memories SET content = 'hijacked' WHERE id = ANY(%s::uuid[])",
                (sorted(world.note_ids),),
            )
            assert updated.rowcount == 0
    assert_untouched(world)
    assert world.owner.client.get(f"/v1/memories/{own['id']}").status_code == 404


def test_runtime_role_cannot_delete_notes_or_rewrite_revisions(world: World) -> None:
    a = world.owner.account_id
    statements = [
        "DELETE FROM memories",
        "DELETE FROM memory_revisions",
        "UPDATE memory_revisions SET content = 'rewritten'",
        "UPDATE accounts SET name = 'renamed'",
        "DELETE FROM projects",
    ]
    with psycopg.connect(world.owner.database.runtime_url, autocommit=True) as conn:
        for statement in statements:
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied"):
                with every_shard(conn, a):  # even within the account's own context
                    conn.execute(statement)
    assert_untouched(world)
