"""Migrations are numbered, recorded, forward-only, and safe to run concurrently."""

from __future__ import annotations

import threading

import psycopg

from grove_db import embedded, schema
from grove_db.migrate import MIGRATION_LOCK_KEY, available_migrations, migrate
from tests.support.databases import empty_database
from tests.support.tables import NON_TENANT_TABLES, ORG_TABLES, TENANT_TABLES
from tests.support.waiting import wait_until


def test_migrations_are_recorded_and_rerunning_applies_nothing(
    database: embedded.EmbeddedDatabase,
) -> None:
    assert migrate(database.migration_url, embedded.RUNTIME_ROLE) == []
    with psycopg.connect(database.migration_url) as conn:
        recorded = [
            row[0] for row in conn.execute("SELECT version FROM schema_migrations ORDER BY 1")
        ]
    assert recorded == [version for version, _, _ in available_migrations()]


def waiting_for_the_migration_lock(url: str) -> int:
    """How many sessions of ``url``'s database wait for the migration advisory lock."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            " AND ((classid::bigint << 32) | objid::bigint) = %s",
            (MIGRATION_LOCK_KEY,),
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_concurrent_runners_serialize_on_the_advisory_lock(
    database: embedded.EmbeddedDatabase,
) -> None:
    # On a database no runner has migrated yet, three runners queue on the lock (held
    # here until all three wait for it); released, exactly one applies every migration
    # and the others find nothing left to do.
    everything = [version for version, _, _ in available_migrations()]
    with empty_database(database) as url:
        results: list[list[int] | BaseException] = []

        def run() -> None:
            try:
                results.append(migrate(url))
            except BaseException as ex:  # reported by the assertion below
                results.append(ex)

        threads = [threading.Thread(target=run) for _ in range(3)]
        with psycopg.connect(url, autocommit=True) as holder:
            holder.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK_KEY,))
            for thread in threads:
                thread.start()
            wait_until(lambda: waiting_for_the_migration_lock(url) == 3)
            holder.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK_KEY,))
        for thread in threads:
            thread.join(timeout=120)
        assert len(results) == 3 and results.count([]) == 2 and everything in results, results
        with psycopg.connect(url) as conn:
            recorded = [
                row[0] for row in conn.execute("SELECT version FROM schema_migrations ORDER BY 1")
            ]
        assert recorded == everything


def test_every_tenant_table_forces_row_level_security(database: embedded.EmbeddedDatabase) -> None:
    with psycopg.connect(database.migration_url) as conn:
        rows = conn.execute(
            "SELECT relname, relrowsecurity, relforcerowsecurity, pg_get_userbyid(relowner)"
            " FROM pg_class WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace"
            " AND relname <> ALL(%s)",
            (sorted(NON_TENANT_TABLES),),
        ).fetchall()
    assert {r[0] for r in rows} == TENANT_TABLES | ORG_TABLES
    for name, enabled, forced, owner in rows:
        # org_members binds the runtime role only: grove_org_role() reads it as its owner
        # (a policy on org_members cannot ask org_members about the caller without
        # recursing into itself).
        assert enabled and forced == (name != "org_members"), name
        assert owner == embedded.MIGRATION_ROLE, name


def test_runtime_role_owns_nothing_and_cannot_bypass_rls(
    database: embedded.EmbeddedDatabase,
) -> None:
    with psycopg.connect(database.runtime_url) as conn:
        role = conn.execute(
            "SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
        owned = conn.execute(
            "SELECT count(*) FROM pg_class WHERE relowner = (SELECT oid FROM pg_roles"
            " WHERE rolname = current_user)"
        ).fetchone()
    assert role == (False, False)
    assert owned == (0,)


def test_every_tenant_table_has_account_id(database: embedded.EmbeddedDatabase) -> None:
    with psycopg.connect(database.migration_url) as conn:
        tables = {
            row[0]
            for row in conn.execute(
                "SELECT table_name FROM information_schema.columns"
                " WHERE table_schema = 'public' AND column_name = 'account_id'"
            )
        }
    # Membership rows name a person too.
    assert tables == TENANT_TABLES - {"accounts"} | {"org_members", "project_members"}


def test_every_org_table_has_org_id(database: embedded.EmbeddedDatabase) -> None:
    with psycopg.connect(database.migration_url) as conn:
        tables = {
            row[0]
            for row in conn.execute(
                "SELECT table_name FROM information_schema.columns"
                " WHERE table_schema = 'public' AND column_name = 'org_id'"
            )
        }
    assert tables == ORG_TABLES - {"orgs"}


def test_the_migrations_produce_exactly_the_reference_schema(
    database: embedded.EmbeddedDatabase,
) -> None:
    # libs/db/grove_db/schema.sql is the schema in one file; after changing a migration,
    # regenerate it: python -m grove_db.schema
    assert schema.fresh_dump(database) == schema.REFERENCE.read_text(), (
        "the migrations no longer produce schema.sql: run python -m grove_db.schema"
    )


def test_every_migration_sent_one_statement_at_a_time_makes_the_reference_schema(
    database: embedded.EmbeddedDatabase,
) -> None:
    # On a Citus cluster already placed, grove migrate sends each migration's statements
    # one at a time (migrate.statements cuts them): cut so, every migration still makes
    # exactly schema.sql.
    with schema.fresh_database(database, one_at_a_time=True) as url:
        assert schema.dump(url) == schema.REFERENCE.read_text()


#: Unique keys of tenant tables without account_id: each is looked up before the account
#: is known (a presented API key, a public share link), and docs/scaling.md says where
#: each goes when tables are distributed by account_id.
GLOBAL_LOOKUPS = {("api_keys", "api_keys_key_hash_key"), ("shares", "shares_token_hash_key")}

#: Tenant tables found by a credential's hash before the account is known, distributed by
#: that hash (migration 0052, docs/scaling.md): their primary key is the hash alone.
LOOKUP_TABLES = {"api_key_lookup", "share_lookup"}

#: Tenant tables without a primary key (docs/scaling.md): note_bands' rows are derived
#: from notes and found by their band or their note, and a replica finds them by every
#: column.
UNKEYED = {"note_bands"}

#: Tenant tables that are not distributed by account_id (docs/scaling.md): accounts is
#: keyed by its id, and account_owners is found by (issuer, subject) at sign-in.
REFERENCE_TABLES = {"accounts", "account_owners"}

# Every unique index of a public table (primary keys and unique constraints are backed by
# one): its table, name and columns (expressions count as their columns).
UNIQUE_INDEXES = """
    SELECT t.relname AS table, i.relname AS name, ARRAY(
        SELECT a.attname FROM pg_attribute a
        WHERE a.attrelid = t.oid AND a.attnum = ANY(x.indkey)
           OR a.attrelid = t.oid AND pg_get_expr(x.indexprs, t.oid) ~ ('\\m' || a.attname || '\\M')
    )::text[] AS columns
    FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
    WHERE x.indisunique AND t.relnamespace = 'public'::regnamespace
"""

# Foreign keys between public tables: columns on both sides, in key order.
FOREIGN_KEYS = """
    SELECT c.conname AS name, t.relname AS table, r.relname AS referenced,
           ARRAY(SELECT a.attname FROM unnest(c.conkey) WITH ORDINALITY k (n, o)
                 JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n
                 ORDER BY k.o)::text[] AS columns,
           ARRAY(SELECT a.attname FROM unnest(c.confkey) WITH ORDINALITY k (n, o)
                 JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n
                 ORDER BY k.o)::text[] AS referenced_columns
    FROM pg_constraint c
    JOIN pg_class t ON t.oid = c.conrelid JOIN pg_class r ON r.oid = c.confrelid
    WHERE c.contype = 'f' AND t.relnamespace = 'public'::regnamespace
"""


def test_the_schema_can_be_distributed_by_account(database: embedded.EmbeddedDatabase) -> None:
    # Distributed tables (Citus) need the distribution column in every primary key and
    # unique constraint, and co-located foreign keys need it on both sides, in the same
    # place: docs/scaling.md.
    distributed = TENANT_TABLES - REFERENCE_TABLES - LOOKUP_TABLES
    with psycopg.connect(database.migration_url) as conn:
        uniques = conn.execute(UNIQUE_INDEXES).fetchall()
        identified = conn.execute(
            "SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace"
            " AND relkind = 'r' AND relreplident = 'f'"
        ).fetchall()
        keys = conn.execute(FOREIGN_KEYS).fetchall()
    unkeyed = {
        (table, name)
        for table, name, columns in uniques
        if table in distributed and "account_id" not in columns
    }
    assert unkeyed == GLOBAL_LOOKUPS
    primary = {table for table, name, columns in uniques if name.endswith("_pkey")}
    assert distributed - primary == UNKEYED
    assert {table for (table,) in identified} == UNKEYED  # shard moves replicate deletes
    between = [k for k in keys if k[1] in distributed and k[2] in distributed]
    assert len(between) >= 11  # notes, notebooks, connections, shares, revisions, ...
    for name, _, _, columns, referenced_columns in between:
        assert "account_id" in columns, name
        assert columns.index("account_id") == referenced_columns.index("account_id"), name
    # A tenant table's key to a reference table names the account itself.
    for name, table, referenced, columns, referenced_columns in keys:
        if table in distributed and referenced == "accounts":
            assert (columns, referenced_columns) == (["account_id"], ["id"]), name
