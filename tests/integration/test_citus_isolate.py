"""``grove accounts isolate``: a large account on shards of its own, on a real cluster.

Isolating splits shards, which would change what the other Citus tests see of the
shared cluster (``citus_database``), so this module starts a small cluster of its own
(a coordinator and one worker, ``grove_db.citus``), migrated with ``--citus``.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from uuid import UUID

import psycopg
import pytest

from grove_cli.shards import TABLE
from grove_db import citus, embedded
from grove_db.migrate import migrate
from grove_db.pool import set_tenant
from tests.support.clients import data_of
from tests.support.processes import run_script, start_api
from tests.support.tenants import Tenant, new_tenant


@pytest.fixture(scope="module")
def cluster(citus_tools: Path) -> Iterator[embedded.EmbeddedDatabase]:
    root = Path(tempfile.mkdtemp(prefix="grove-isolate-"))
    db = citus.start(citus_tools, root / "cluster", workers=1)
    try:
        migrate(db.migration_url, embedded.RUNTIME_ROLE, citus=True)
        yield db
    finally:
        db.server.cleanup()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def api(cluster: embedded.EmbeddedDatabase) -> Iterator[str]:
    running = start_api(
        {
            "GROVE_DATABASE_URL": cluster.runtime_url,
            "GROVE_API_WORKERS": "1",
            "GROVE_EMBEDDING_PROFILE": "disabled",
        }
    )
    yield running.url
    running.stop()


def isolate(
    database: embedded.EmbeddedDatabase, account: UUID | str, url: str | None = None
) -> tuple[int, str, str]:
    """``grove accounts isolate`` as an operator runs it (as a superuser unless ``url``
    says otherwise): exit code, stdout, stderr."""
    done = run_script(
        "grove",
        "accounts",
        "isolate",
        str(account),
        env={"GROVE_ADMIN_DATABASE_URL": url or database.grove_superuser_url},
        timeout=300,
    )
    return done.returncode, done.stdout.strip(), done.stderr.strip()


def accounts_on_shard(database: embedded.EmbeddedDatabase, table: str, shard: int) -> set[UUID]:
    """The accounts whose rows a shard of ``table`` holds, read on its node."""
    with psycopg.connect(database.grove_superuser_url) as conn:
        row = conn.execute(
            "SELECT nodeport FROM citus_shards WHERE shardid = %s", (shard,)
        ).fetchone()
    assert row is not None
    node = citus.Node(Path(), int(row[0])).url(embedded.DATABASE)
    with psycopg.connect(node) as conn:  # the superuser: the shard's rows, whoever's
        rows = conn.execute(f"SELECT DISTINCT account_id FROM {table}_{shard}").fetchall()
    return {r[0] for r in rows}


def shard_of(database: embedded.EmbeddedDatabase, table: str, account: UUID) -> int:
    with psycopg.connect(database.grove_superuser_url) as conn:
        row = conn.execute(
            "SELECT get_shard_id_for_distribution_column(%s, %s::uuid)", (table, account)
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_an_isolated_account_has_shards_of_its_own_and_is_still_served(
    cluster: embedded.EmbeddedDatabase, api: str
) -> None:
    big, small = new_tenant(cluster, api), new_tenant(cluster, api)
    for tenant, word in ((big, "quokka"), (small, "wombat")):
        for n in range(3):
            tenant.client.save(f"{word} note {n}")
    # Before: one shard holds both (a single worker, a few shards: they may or may not
    # share one; what matters is that afterwards the big account's holds it alone).
    code, out, err = isolate(cluster, big.account_id)
    assert code == 0, err
    assert out.startswith(f"account {big.account_id} now has shard "), out
    for table in (TABLE, "memory_revisions", "note_words", "account_usage"):
        shard = shard_of(cluster, table, big.account_id)
        # Every row moved with it (as the migration role, the copy would have seen none).
        assert accounts_on_shard(cluster, table, shard) == {big.account_id}, table
        assert shard_of(cluster, table, small.account_id) != shard, table
    # Its statements still name one account: one task, on its shard's node.
    plan = explain_one_account(cluster, big)
    assert "Task Count: 1" in plan, plan
    # And it is served as before: its notes found, the other account's not.
    found = data_of(big.client.post("/v1/memories/search", {"query": "quokka"}))["items"]
    assert len(found) == 3
    assert data_of(big.client.post("/v1/memories/search", {"query": "wombat"}))["items"] == []
    big.client.save("quokka note after the split")
    recalled = data_of(big.client.post("/v1/recall", {"query": "quokka after the split"}))
    assert recalled["items"][0]["memory"]["content"] == "quokka note after the split"
    found = data_of(small.client.post("/v1/memories/search", {"query": "wombat"}))["items"]
    assert len(found) == 3


def explain_one_account(database: embedded.EmbeddedDatabase, tenant: Tenant) -> str:
    """The coordinator's plan of a statement naming one account, as the services run it."""
    with psycopg.connect(database.runtime_url) as conn, conn.transaction():
        set_tenant(conn, tenant.account_id)
        rows = conn.execute(
            "EXPLAIN SELECT id FROM memories WHERE account_id = %s", (tenant.account_id,)
        ).fetchall()
    return "\n".join(r[0] for r in rows)


def test_isolating_an_account_again_says_it_is_alone_already(
    cluster: embedded.EmbeddedDatabase, api: str
) -> None:
    tenant = new_tenant(cluster, api)
    tenant.client.save("a note")
    assert isolate(cluster, tenant.account_id)[0] == 0
    shard = shard_of(cluster, TABLE, tenant.account_id)
    code, out, err = isolate(cluster, tenant.account_id)
    assert code == 0, err
    assert out == (
        f"account {tenant.account_id} is already alone on shard {shard}"
        f" on 127.0.0.1:{port_of(cluster, shard)}"
    )
    assert shard_of(cluster, TABLE, tenant.account_id) == shard


def port_of(database: embedded.EmbeddedDatabase, shard: int) -> int:
    with psycopg.connect(database.grove_superuser_url) as conn:
        row = conn.execute(
            "SELECT nodeport FROM citus_shards WHERE shardid = %s", (shard,)
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_isolating_as_a_role_under_row_level_security_is_refused_and_keeps_every_row(
    cluster: embedded.EmbeddedDatabase, api: str
) -> None:
    """The migration role owns the tables but row-level security binds it: Citus would
    copy none of the account's rows into the new shards (and drop the old ones)."""
    tenant = new_tenant(cluster, api)
    tenant.client.save("kept where it is")
    shard = shard_of(cluster, TABLE, tenant.account_id)
    code, out, err = isolate(cluster, tenant.account_id, cluster.migration_url)
    assert (code, out) == (1, "")
    assert err.startswith("grove: isolating an account needs a role that bypasses row-level")
    assert shard_of(cluster, TABLE, tenant.account_id) == shard
    listed = data_of(tenant.client.get("/v1/memories"))["items"]
    assert [item["content"] for item in listed] == ["kept where it is"]


def test_isolating_an_unknown_account_is_refused(cluster: embedded.EmbeddedDatabase) -> None:
    unknown = "00000000-0000-4000-8000-000000000000"
    assert isolate(cluster, unknown) == (1, "", f"grove: no account {unknown}")


def test_isolating_on_one_postgresql_needs_a_citus_cluster(
    database: embedded.EmbeddedDatabase,
) -> None:
    unknown = "00000000-0000-4000-8000-000000000000"
    code, out, err = isolate(database, unknown, database.grove_superuser_url)
    assert (code, out) == (1, "")
    assert err.startswith("grove: this database is not distributed: isolating an account")
    assert "needs a Citus cluster" in err and "Traceback" not in err


def test_isolating_needs_an_account_id_and_the_admin_url() -> None:
    bad = run_script("grove", "accounts", "isolate", "not-an-id", env={})
    assert bad.returncode == 2 and "invalid UUID value: 'not-an-id'" in bad.stderr
    unset = run_script(
        "grove",
        "accounts",
        "isolate",
        "00000000-0000-4000-8000-000000000000",
        env={"GROVE_ADMIN_DATABASE_URL": ""},
    )
    assert (unset.returncode, unset.stderr.strip()) == (1, "grove: set GROVE_ADMIN_DATABASE_URL")
