"""The runtime connection pool and the one way to open a tenant transaction."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from uuid import UUID

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from grove_db.errors import DatabaseError

Conn = psycopg.Connection[dict[str, Any]]


def open_pool(
    url: str, *, min_size: int = 1, max_size: int = 4, timeout: float = 5.0
) -> ConnectionPool:
    """Open a pool of runtime connections that return rows as dicts."""
    pool: ConnectionPool = ConnectionPool(
        url,
        min_size=min_size,
        max_size=max_size,
        timeout=timeout,
        kwargs={"row_factory": dict_row, "autocommit": False, "options": "-c TimeZone=UTC"},
        open=True,
    )
    return pool


@contextmanager
def transaction(
    pool: ConnectionPool, account_id: UUID | None = None, *, snapshot: bool = False
) -> Iterator[Conn]:
    """Run one transaction, scoped to ``account_id`` by a transaction-local setting.

    The setting is ``SET LOCAL``, so it ends with the transaction and a pooled
    connection never carries one tenant's context into another request. With
    ``snapshot``, every statement sees one snapshot (REPEATABLE READ).
    """
    try:
        with pool.connection() as conn, conn.transaction():
            if snapshot:
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            if account_id is not None:
                set_tenant(conn, account_id)
            yield conn  # type: ignore[misc]  # the pool hands out dict_row connections
    except PoolTimeout as ex:
        raise DatabaseError("the database is busy; try again") from ex
    except psycopg.OperationalError as ex:
        raise DatabaseError("the database is unreachable") from ex


def set_tenant(conn: psycopg.Connection[Any], account_id: UUID) -> None:
    """Scope the current transaction to one account (row-level security key)."""
    conn.execute("SELECT set_config('grove.account_id', %s, true)", (str(account_id),))
