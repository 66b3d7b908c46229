"""Grove on a Citus cluster: a coordinator and two workers on loopback (``citus_database``).

``grove migrate --citus`` distributes the schema (docs/scaling.md): these tests check
where each table went, then run the real grove-api against the coordinator as the
runtime role, for two accounts, and check that each sees only its own notes, through
the API and through row-level security on the shards, and that a statement naming one
account is planned as one task on one node.
"""

from __future__ import annotations

import psycopg
import pytest

from grove_db import distribution, embedded
from grove_db.migrate import migrate
from grove_db.pool import fan_out, set_tenant
from tests.support import cluster
from tests.support.clients import data_of
from tests.support.tables import NON_TENANT_TABLES, ORG_TABLES, TENANT_TABLES
from tests.support.tenants import Tenant, new_tenant

#: Words only one account's notes hold, so a leak would be found by search and recall.
WORDS = {"a": "xylophone", "b": "zeppelin"}


@pytest.fixture(scope="module")
def tenants(citus_database: embedded.EmbeddedDatabase, citus_api: str) -> dict[str, Tenant]:
    return {name: new_tenant(citus_database, citus_api) for name in WORDS}


def placements(database: embedded.EmbeddedDatabase) -> dict[str, tuple[str, str, int]]:
    """Each Citus table of the public schema: its type, distribution column, co-location."""
    with psycopg.connect(database.grove_superuser_url) as conn:
        rows = conn.execute(
            "SELECT table_name::text, citus_table_type, distribution_column, colocation_id"
            " FROM citus_tables"
        ).fetchall()
    # Tables a test makes for a while on the shared cluster (test_citus_paths) are not Grove's.
    return {
        table: (kind, column, group)
        for table, kind, column, group in rows
        if not table.startswith(cluster.THROWAWAY)
    }


def test_every_tenant_table_is_distributed_by_account_and_co_located(
    citus_database: embedded.EmbeddedDatabase,
) -> None:
    placed = placements(citus_database)
    reference = set(distribution.REFERENCE_TABLES)
    tombstones = {"identity_tombstones", "operation_tombstones"}
    assert reference == {"accounts", "account_owners"} | tombstones | ORG_TABLES
    lookups = distribution.LOOKUP_TABLES  # found by a hash: distributed by it
    distributed = TENANT_TABLES - reference - lookups.keys()
    assert {t for t, (kind, _, _) in placed.items() if kind == "distributed"} == (
        distributed | lookups.keys()
    )
    assert {t: placed[t][1] for t in lookups} == lookups
    assert {placed[t][1] for t in distributed} == {"account_id"}
    assert len({placed[t][2] for t in distributed}) == 1  # one co-location group
    assert {t for t, (kind, _, _) in placed.items() if kind == "reference"} == reference
    local = set(distribution.LOCAL_TABLES)
    assert local == NON_TENANT_TABLES - tombstones
    assert not local & placed.keys()  # on the coordinator only


def test_migrating_again_changes_nothing(citus_database: embedded.EmbeddedDatabase) -> None:
    before = placements(citus_database)
    assert migrate(citus_database.migration_url, embedded.RUNTIME_ROLE, citus=True) == []
    assert placements(citus_database) == before


def test_two_accounts_save_correct_list_search_and_recall_only_their_own(
    citus_database: embedded.EmbeddedDatabase, tenants: dict[str, Tenant]
) -> None:
    notes, notebooks = {}, {}
    for name, tenant in tenants.items():
        word = WORDS[name]
        notebooks[name] = tenant.notebook(f"{word} notebook")
        tenant.client.save(f"{word} filed in a notebook", "decision", projectId=notebooks[name])
        notes[name] = tenant.client.save(f"{word} first draft")["id"]
        corrected = tenant.client.patch(
            f"/v1/memories/{notes[name]}", {"content": f"{word} corrected"}
        )
        assert corrected.status_code == 200, corrected.text
        assert data_of(corrected)["version"] == 2
    for name, tenant in tenants.items():
        word, other = WORDS[name], WORDS["b" if name == "a" else "a"]
        listed = data_of(tenant.client.get("/v1/memories?limit=100"))["items"]
        assert sorted(item["content"] for item in listed) == [
            f"{word} corrected",
            f"{word} filed in a notebook",
        ]
        found = data_of(tenant.client.post("/v1/memories/search", {"query": word}))["items"]
        assert len(found) == 2
        recalled = data_of(tenant.client.post("/v1/recall", {"query": f"{word} corrected"}))
        assert recalled["items"][0]["memory"]["id"] == notes[name]
        for path in ("/v1/memories/search", "/v1/recall"):
            assert data_of(tenant.client.post(path, {"query": other}))["items"] == [], path
        shelves = data_of(tenant.client.get("/v1/notebooks"))["items"]
        assert [item["id"] for item in shelves] == [notebooks[name]]
        # The other account's note and notebook by their ids: unknown here.
        foreign = "b" if name == "a" else "a"
        assert tenant.client.get(f"/v1/memories/{notes[foreign]}").status_code == 404
        assert (
            tenant.client.patch(f"/v1/memories/{notes[foreign]}", {"content": "x"}).status_code
            == 404
        )
        assert tenant.client.get(f"/v1/notebooks/{notebooks[foreign]}").status_code == 404
    with psycopg.connect(citus_database.runtime_url) as conn, conn.transaction():
        # The notes' triggers ran on the shards: postings, revisions and the usage counter.
        a = tenants["a"].account_id
        set_tenant(conn, a)
        counts = conn.execute(
            "SELECT (SELECT count(*) FROM note_words WHERE account_id = %(a)s),"
            " (SELECT count(*) FROM memory_revisions WHERE account_id = %(a)s),"
            " (SELECT items FROM account_usage WHERE account_id = %(a)s AND kind = 'notes')",
            {"a": a},
        ).fetchone()
    assert counts is not None and counts[0] >= 4 and counts[1:] == (3, 2)


def test_row_level_security_holds_on_the_shards(
    citus_database: embedded.EmbeddedDatabase, tenants: dict[str, Tenant]
) -> None:
    for tenant in tenants.values():
        tenant.client.save(f"{WORDS['a']} rls probe")
    a, b = tenants["a"], tenants["b"]
    with psycopg.connect(citus_database.runtime_url) as conn:
        # No account set: no tenant row on any shard (both reads ask every shard).
        with conn.transaction():
            fan_out(conn)
            assert conn.execute("SELECT count(*) FROM memories").fetchone() == (0,)
        with conn.transaction():
            set_tenant(conn, a.account_id)
            fan_out(conn)
            accounts = conn.execute("SELECT DISTINCT account_id FROM memories").fetchall()
            assert accounts == [(a.account_id,)]
            # Naming the other account finds nothing: the policy holds on its shard too.
            row = conn.execute(
                "SELECT count(*) FROM memories WHERE account_id = %s", (b.account_id,)
            ).fetchone()
            assert row == (0,)
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(
                    "INSERT INTO projects (account_id, name) VALUES (%s, 'planted')",
                    (b.account_id,),
                )


def test_a_statement_naming_one_account_is_one_task_on_one_node(
    citus_database: embedded.EmbeddedDatabase, tenants: dict[str, Tenant]
) -> None:
    a = tenants["a"]
    with psycopg.connect(citus_database.runtime_url) as conn, conn.transaction():
        set_tenant(conn, a.account_id)
        plan = "\n".join(
            row[0]
            for row in conn.execute(
                "EXPLAIN SELECT id, content FROM memories WHERE account_id = %s"
                " AND deleted_at IS NULL ORDER BY created_at DESC LIMIT 10",
                (a.account_id,),
            )
        )
    assert "Task Count: 1" in plan, plan


def test_a_per_account_statement_that_fans_out_fails(
    citus_database: embedded.EmbeddedDatabase, tenants: dict[str, Tenant]
) -> None:
    """The guard every test on the cluster runs under (``tests/support/cluster.py``): a
    statement the services run that does not name its account is refused, unless its
    transaction says it spans accounts by design (``pool.fan_out``)."""
    a = tenants["a"]
    with psycopg.connect(citus_database.runtime_url) as conn:
        with conn.transaction():
            set_tenant(conn, a.account_id)
            with pytest.raises(psycopg.errors.InternalError_, match="multi-task"):
                conn.execute("SELECT count(*) FROM memories").fetchone()
        with conn.transaction():
            set_tenant(conn, a.account_id)
            fan_out(conn)
            assert conn.execute("SELECT count(*) FROM memories").fetchone() is not None
