"""The test database as its administrator sees it: superuser connections and statements
that set up what no route can, and an empty database for migrations to run on."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import sql

from grove_db import embedded


def superuser(database: embedded.EmbeddedDatabase) -> psycopg.Connection[Any]:
    """A connection as Grove's superuser (row-level security bypassed), autocommitting."""
    return psycopg.connect(database.grove_superuser_url, autocommit=True)


def superuser_sql(database: embedded.EmbeddedDatabase, statement: str, *args: Any) -> list[Any]:
    """Run one statement as Grove's superuser; the rows it returns, if any."""
    with superuser(database) as conn:
        cursor = conn.execute(statement, args)
        return cursor.fetchall() if cursor.description else []


@contextmanager
def empty_database(database: embedded.EmbeddedDatabase) -> Iterator[str]:
    """A new database on ``database``'s server, prepared as ``embedded.bootstrap`` prepares
    Grove's but never migrated; the migration role's URL while the block runs, dropped after."""
    name = f"grove_empty_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(database.superuser_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE DATABASE {} OWNER {}").format(
                sql.Identifier(name), sql.Identifier(embedded.MIGRATION_ROLE)
            )
        )
    try:
        url = database.superuser_url.replace("/postgres?", f"/{name}?", 1)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION vector")
            conn.execute(
                sql.SQL("ALTER SCHEMA public OWNER TO {}").format(
                    sql.Identifier(embedded.MIGRATION_ROLE)
                )
            )
        yield embedded.role_url(url, embedded.MIGRATION_ROLE)
    finally:
        with psycopg.connect(database.superuser_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
