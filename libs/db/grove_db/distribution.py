"""Grove's schema distributed over a Citus cluster (``grove migrate --citus``).

The migrations make one schema for both engines; run through a Citus coordinator they
create ordinary local tables there. This step then gives every table its place
(docs/scaling.md): tenant tables distributed by ``account_id`` and co-located, so one
account's rows of every table share a node and a statement naming one account is sent
whole to it; the global tables copied to every node as reference tables; the few
tables written without an account (rate limits, console sessions, the migration
ledger) left on the coordinator. It runs once: later migrations go through the
coordinator, which carries their DDL to the shards.

Citus refuses a few things the single-node schema has; each is handled here, on the
Citus side only, and listed in docs/scaling.md.
"""

from __future__ import annotations

from typing import Any, LiteralString

import psycopg
from psycopg import sql

#: Tables copied to every node: small, read on most requests or found without an
#: account (an owner signing in, by issuer and subject), and the org tables, keyed by
#: org rather than account.
REFERENCE_TABLES = (
    "accounts",
    "account_owners",
    "identity_tombstones",
    "operation_tombstones",
    "orgs",
    "org_members",
    "org_projects",
    "project_members",
    "project_keys",
    "project_memories",
    "project_memory_audit",
)
#: Tables that stay on the coordinator only: written without an account, never joined
#: with tenant rows.
LOCAL_TABLES = ("schema_migrations", "rate_limits", "console_sessions")
#: The distribution column of every tenant table.
COLUMN = "account_id"
#: Unique keys without ``account_id`` that Citus cannot keep across shards: each is a
#: credential's hash, found before its account is known. Under Citus each becomes a
#: unique key within its account; the hash stays unique across accounts through its
#: lookup table's primary key (``LOOKUP_TABLES``). Single-node keeps the global key.
GLOBAL_KEYS = {
    "api_keys": ("api_keys_key_hash_key", "key_hash"),
    "shares": ("shares_token_hash_key", "token_hash"),
}
#: What is found before its account is known, each distributed by its hash (migration
#: 0052): a presented API key or share link is one task on the node holding its hash,
#: which names the account; every statement after it is a router query for that account.
LOOKUP_TABLES = {"api_key_lookup": "key_hash", "share_lookup": "token_hash"}
#: SECURITY DEFINER functions that work on one account, named by their first argument:
#: distributed functions co-located with that account's rows, so that Citus keeps them
#: on every node and runs a call on the node holding the account.
ACCOUNT_FUNCTIONS = {"grove_add_usage(uuid, text, bigint, bigint)": "account_usage"}

#: The functions the org tables' row-level security policies call, which read other org
#: tables. A write to a reference table runs on every node, and there a policy's call
#: is "a distributed query from a query on a shard", which Citus refuses by default.
#: Their reads are of reference tables, which every node holds whole (read where the
#: call runs, in the writing transaction), so they may nest.
NESTED_FUNCTIONS = ("grove_org_role(uuid)", "grove_project_role()")

FOREIGN_KEYS: LiteralString = """
    SELECT c.conrelid::regclass::text AS table, c.conname AS name,
           pg_get_constraintdef(c.oid) AS definition
    FROM pg_constraint c
    WHERE c.contype = 'f' AND c.connamespace = 'public'::regnamespace
    ORDER BY 1, 2
"""
TENANT_TABLES: LiteralString = """
    SELECT c.relname FROM pg_class c
    WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r'
      AND EXISTS (SELECT 1 FROM pg_attribute a
                  WHERE a.attrelid = c.oid AND a.attname = 'account_id' AND NOT a.attisdropped)
      AND c.relname <> ALL(%s)
    ORDER BY 1
"""


def is_distributed(conn: psycopg.Connection[Any]) -> bool:
    """Whether this database's tables are already placed (the step ran before)."""
    row = conn.execute(
        "SELECT count(*) FROM pg_dist_partition WHERE logicalrelid = 'public.memories'::regclass"
    ).fetchone()
    return bool(row and row[0])


def distribute(conn: psycopg.Connection[Any]) -> list[str]:
    """Place every table of a migrated schema (once); return the tenant tables distributed.

    Runs as the migration role (the tables' owner) on the coordinator, in autocommit,
    and places the tables in one transaction.
    """
    # Services scope each transaction with SET LOCAL (grove_db.pool.set_locally); the
    # coordinator carries it to every node the transaction touches, so row-level
    # security on a shard sees the same account. Set on the database, for every session.
    conn.execute(
        sql.SQL("ALTER DATABASE {} SET citus.propagate_set_commands = 'local'").format(
            sql.Identifier(conn.info.dbname)
        )
    )
    with conn.transaction():  # all or nothing: a failed step leaves the tables as they were
        # One connection per node for the whole step: placing a table after another has
        # been given shards over parallel connections is refused in one transaction.
        conn.execute("SET LOCAL citus.multi_shard_modify_mode = 'sequential'")
        if is_distributed(conn):
            _place_later(conn)  # made by a migration after the first placement
            return []
        return _place(conn)


def _place(conn: psycopg.Connection[Any]) -> list[str]:
    """``distribute``'s work, inside its transaction."""
    # Foreign keys are dropped and made again once every table has its place: Citus
    # requires a key's referenced table to be placed first, and placing a reference
    # table would otherwise turn every local table pointing at it into a Citus local table.
    keys = conn.execute(FOREIGN_KEYS).fetchall()
    tenants = [r[0] for r in conn.execute(TENANT_TABLES, ([*REFERENCE_TABLES, *LOOKUP_TABLES],))]
    # Triggers on distributed tables run on the shards (each node runs them for its own
    # rows); Citus asks for this setting to allow them.
    conn.execute("SET LOCAL citus.enable_unsafe_triggers = on")
    conn.execute("SET LOCAL search_path = public")  # deparsed policies name functions bare
    for table, name, _ in keys:
        conn.execute(
            sql.SQL("ALTER TABLE {} DROP CONSTRAINT {}").format(
                sql.Identifier(table), sql.Identifier(name)
            )
        )
    for table, (key, column) in GLOBAL_KEYS.items():
        _scope_key(conn, table, key, column)
    for table in REFERENCE_TABLES:
        _unwrap_policies(conn, table)
        conn.execute("SELECT create_reference_table(%s)", (table,))
    for function in NESTED_FUNCTIONS:
        conn.execute(
            sql.SQL("ALTER FUNCTION {} SET citus.allow_nested_distributed_execution = on").format(
                sql.SQL(function)
            )
        )
    first = tenants[0]
    for table in tenants:
        conn.execute(
            "SELECT create_distributed_table(%s, %s, colocate_with => %s)",
            (table, COLUMN, "default" if table == first else first),
        )
    _place_later(conn)
    for table, name, definition in keys:
        conn.execute(
            sql.SQL("ALTER TABLE {} ADD CONSTRAINT {} ").format(
                sql.Identifier(table), sql.Identifier(name)
            )
            + sql.SQL(definition)
        )
    return tenants


#: Tenant tables not distributed by account yet: made by a migration after the first
#: placement (Citus keeps such a table on the coordinator, as a local table, or one it
#: added to its metadata when the table's foreign key points at a reference table).
UNPLACED_TENANT_TABLES: LiteralString = f"""
    SELECT t.relname FROM ({TENANT_TABLES}) AS t (relname)
    WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition p
                      WHERE p.logicalrelid = ('public.' || quote_ident(t.relname))::regclass
                        AND p.partmethod = 'h')
"""


def _place_later(conn: psycopg.Connection[Any]) -> None:
    """Distribute each tenant table and lookup table not placed yet (by account, with
    the others, or by its hash: ``LOOKUP_TABLES``), and make the per-account functions
    distributed ones (``ACCOUNT_FUNCTIONS``; again is harmless): on the first placement,
    and after a migration that made them."""
    excluded = [*REFERENCE_TABLES, *LOOKUP_TABLES]
    unplaced = conn.execute(UNPLACED_TENANT_TABLES, (excluded,)).fetchall()
    if unplaced:  # as in _place: triggers run on the shards; policies are deparsed bare
        conn.execute("SET LOCAL citus.enable_unsafe_triggers = on")
        conn.execute("SET LOCAL search_path = public")
    for (table,) in unplaced:
        conn.execute(
            "SELECT create_distributed_table(%s, %s, colocate_with => 'memories')",
            (table, COLUMN),
        )
    placed = {
        r[0]
        for r in conn.execute(
            "SELECT logicalrelid::regclass::text FROM pg_dist_partition"
            " WHERE partmethod = 'h' AND logicalrelid::regclass::text = ANY(%s)",
            (list(LOOKUP_TABLES),),
        )
    }
    for table, column in LOOKUP_TABLES.items():
        if table not in placed:
            conn.execute("SELECT create_distributed_table(%s, %s)", (table, column))
    for function, colocated in ACCOUNT_FUNCTIONS.items():
        conn.execute(
            "SELECT create_distributed_function(%s, '$1', colocate_with => %s)",
            (function, colocated),
        )


def _scope_key(conn: psycopg.Connection[Any], table: str, key: str, column: str) -> None:
    """Make a global unique key unique within each account (``GLOBAL_KEYS``)."""
    conn.execute(
        sql.SQL(
            "ALTER TABLE {table} DROP CONSTRAINT {key},"
            " ADD CONSTRAINT {key} UNIQUE ({account}, {column})"
        ).format(
            table=sql.Identifier(table),
            key=sql.Identifier(key),
            account=sql.Identifier(COLUMN),
            column=sql.Identifier(column),
        )
    )


#: The org policies ask for the caller's project role once per statement, through a
#: scalar subquery (an init plan) around the function; Citus refuses any subquery in a
#: policy, so under Citus the policy calls the function itself (once per row: the org
#: pools are small, and the tables are copies on every node).
WRAPPED = "( SELECT grove_project_role() AS grove_project_role)"
POLICIES: LiteralString = """
    SELECT policyname, permissive, roles::text[], cmd, qual, with_check
    FROM pg_policies WHERE schemaname = 'public' AND tablename = %s
"""


def _unwrap_policies(conn: psycopg.Connection[Any], table: str) -> None:
    """Make again, without the subquery, each of ``table``'s policies that wraps its
    call of ``grove_project_role()`` in one (``WRAPPED``)."""
    for name, permissive, roles, command, using, check in conn.execute(
        POLICIES, (table,)
    ).fetchall():
        if WRAPPED not in (using or "") + (check or ""):
            continue
        statement = sql.SQL("CREATE POLICY {} ON {} AS {} FOR {} TO {}").format(
            sql.Identifier(name),
            sql.Identifier(table),
            sql.SQL(permissive),
            sql.SQL(command),
            sql.SQL(", ").join(
                sql.Identifier(r) if r != "public" else sql.SQL("PUBLIC") for r in roles
            ),
        )
        if using:
            statement += sql.SQL(" USING ({})").format(
                sql.SQL(using.replace(WRAPPED, "grove_project_role()"))
            )
        if check:
            statement += sql.SQL(" WITH CHECK ({})").format(
                sql.SQL(check.replace(WRAPPED, "grove_project_role()"))
            )
        conn.execute(
            sql.SQL("DROP POLICY {} ON {}").format(sql.Identifier(name), sql.Identifier(table))
        )
        conn.execute(statement)
