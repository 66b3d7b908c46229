"""``grove accounts isolate``: a very large account on a Citus shard of its own.

On a cluster (``grove migrate --citus``) every tenant table is split into shards by the
hash of ``account_id``, and a shard holds many accounts: one account of millions of
notes shares its node's HNSW graph, its vacuum and its moves with its neighbours.
Citus's ``isolate_tenant_to_new_shard`` splits the account's hash value out of its
shard, in every co-located table at once (``CASCADE``), so the account gets shards of
its own (with an HNSW graph of its own) on the same node; ``citus_move_shard_placement``
can then give it a node. Its statements still name one account, so they stay one task.

Citus copies the rows into the new shards as the role that runs the split, and every
tenant table forces row-level security even on its owner: run by the migration role, the
copy would see no rows and the split would drop them. So this runs as a role that
bypasses row-level security (``GROVE_ADMIN_DATABASE_URL``: a superuser of the
coordinator), refuses any other, and counts the account's rows in every distributed
table before and after.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, LiteralString
from uuid import UUID

import psycopg
from psycopg import sql

from grove_db import distribution

#: The table named to Citus: any table of the co-location group splits them all.
TABLE = "memories"
#: Splitting without blocking writes (logical replication) where the tables allow it,
#: else blocking the account's writes while its rows are copied.
TRANSFER_MODE = "auto"

SHARD_OF: LiteralString = """
    SELECT s.shardid, s.shardminvalue::int = s.shardmaxvalue::int AS alone,
           n.nodename, n.nodeport
    FROM pg_dist_shard s
    JOIN pg_dist_placement p USING (shardid)
    JOIN pg_dist_node n USING (groupid)
    WHERE s.shardid = get_shard_id_for_distribution_column(%(table)s, %(account)s::uuid)
"""
CO_LOCATED: LiteralString = """
    SELECT logicalrelid::regclass::text FROM pg_dist_partition
    WHERE colocationid = (SELECT colocationid FROM pg_dist_partition
                          WHERE logicalrelid = %s::regclass)
    ORDER BY 1
"""
BYPASSES_RLS: LiteralString = """
    SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user
"""


class NeedsCitus(Exception):
    """this database is not distributed: isolating an account needs a Citus cluster
    migrated with grove migrate --citus (docs/scaling.md)"""

    def __init__(self) -> None:
        super().__init__(" ".join((self.__doc__ or "").split()))


class NeedsBypass(Exception):
    """isolating an account needs a role that bypasses row-level security (a superuser
    of the coordinator, GROVE_ADMIN_DATABASE_URL): Citus copies the rows as the role that
    runs it, and row-level security would hide them from any other"""

    def __init__(self) -> None:
        super().__init__(" ".join((self.__doc__ or "").split()))


class IsolationFailed(Exception):
    """Citus refused or failed the split (its reason is the message)."""


@dataclass(frozen=True)
class Shard:
    """Where an account's rows live: the shard of ``memories`` (its co-located shards
    have the same range), whether it holds this account's hash value only, and the node
    holding it."""

    shard_id: int
    alone: bool
    node: str


def isolate(admin_url: str, account_id: UUID) -> tuple[Shard, bool]:
    """Give the account shards of its own; the shard and whether this call split it
    (False: it was alone already). ``LookupError`` if there is no such account,
    ``NeedsCitus`` on a database that is not distributed, ``NeedsBypass`` for a role
    subject to row-level security, ``IsolationFailed`` with Citus's reason (a node
    without ``wal_level = logical``, say) or if a row count changed.
    """
    with psycopg.connect(admin_url, autocommit=True) as conn:
        if not _distributed(conn):
            raise NeedsCitus
        if not _bypasses_rls(conn):
            raise NeedsBypass
        if conn.execute("SELECT 1 FROM accounts WHERE id = %s", (account_id,)).fetchone() is None:
            raise LookupError(f"no account {account_id}")
        before = shard_of(conn, account_id)
        if before.alone:
            return before, False
        counted = row_counts(conn, account_id)
        try:  # not in a transaction block: the split commits in steps of its own
            conn.execute(
                "SELECT isolate_tenant_to_new_shard(%s, %s::uuid, 'CASCADE', %s)",
                (TABLE, account_id, TRANSFER_MODE),
            )
        except psycopg.Error as ex:
            raise IsolationFailed(ex.diag.message_primary or str(ex)) from ex
        if row_counts(conn, account_id) != counted:
            raise IsolationFailed(f"the account's row counts changed: before {counted}")
        return shard_of(conn, account_id), True


def shard_of(conn: psycopg.Connection[Any], account_id: UUID) -> Shard:
    """The account's shard of ``memories`` and its node."""
    row = conn.execute(SHARD_OF, {"table": TABLE, "account": account_id}).fetchone()
    assert row is not None  # every hash value has a shard
    shard_id, alone, host, port = row
    return Shard(int(shard_id), bool(alone), f"{host}:{port}")


def row_counts(conn: psycopg.Connection[Any], account_id: UUID) -> dict[str, int]:
    """The account's rows in each table split with ``memories`` (one task each)."""
    counts = {}
    for (table,) in conn.execute(CO_LOCATED, (TABLE,)).fetchall():
        statement = sql.SQL("SELECT count(*) FROM {} WHERE account_id = %s").format(
            sql.Identifier(table)
        )
        row = conn.execute(statement, (account_id,)).fetchone()
        counts[table] = int(row[0]) if row else 0
    return counts


def _distributed(conn: psycopg.Connection[Any]) -> bool:
    """Whether Citus is installed here and the schema was distributed."""
    installed = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'citus'").fetchone()
    return installed is not None and distribution.is_distributed(conn)


def _bypasses_rls(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute(BYPASSES_RLS).fetchone()
    return bool(row and row[0])
