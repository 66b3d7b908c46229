"""Migrations are numbered, recorded, forward-only, and safe to run concurrently."""

from __future__ import annotations

import threading

import psycopg

from grove_db import embedded, schema
from grove_db.migrate import available_migrations, migrate

TENANT_TABLES = {
    "accounts",
    "projects",
    "memories",
    "note_words",
    "shares",
    "memory_revisions",
    "operations",
    "connections",
    "connection_projects",
    "api_keys",
    "jobs",
    "embeddings",
    "account_owners",
    "conversations",
    "conversation_turns",
    "account_usage",
    "account_quotas",
}

#: Org tables: scoped by the entered org (and project) and, for the shared pool, by the
#: person's live membership of that project.
ORG_TABLES = {
    "orgs",
    "org_members",
    "org_projects",
    "project_members",
    "project_keys",
    "project_memories",
    "project_memory_audit",
}


#: Tables that hold no account's data: the migration ledger, and identity tombstones
#: (issuer and subject of deleted owners, nothing else).
#: Tables of no account. console_sessions is keyed by a cookie's hash and reached only
#: through grove-console's SECURITY DEFINER functions (test_console checks it is sealed).
NON_TENANT_TABLES = {"schema_migrations", "identity_tombstones", "rate_limits", "console_sessions"}


def test_migrations_are_recorded_and_rerunning_applies_nothing(
    database: embedded.EmbeddedDatabase,
) -> None:
    assert migrate(database.migration_url, embedded.RUNTIME_ROLE) == []
    with psycopg.connect(database.migration_url) as conn:
        recorded = [
            row[0] for row in conn.execute("SELECT version FROM schema_migrations ORDER BY 1")
        ]
    assert recorded == [version for version, _, _ in available_migrations()]


def test_concurrent_runners_serialize_on_the_advisory_lock(
    database: embedded.EmbeddedDatabase,
) -> None:
    results: list[list[int]] = []
    threads = [
        threading.Thread(target=lambda: results.append(migrate(database.migration_url)))
        for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [[], [], []]


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
