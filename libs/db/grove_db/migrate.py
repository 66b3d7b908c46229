"""Forward-only numbered SQL migrations, applied under an advisory lock.

Each file in ``migrations/`` named ``NNNN_name.sql`` runs once, in order, in its own
transaction, and is recorded in ``schema_migrations``. Concurrent runners serialize on
one advisory lock, so two pods starting together apply each file exactly once.
"""

from __future__ import annotations

from importlib import resources
from typing import Any, LiteralString

import psycopg
from psycopg import sql

from grove_db import distribution

MIGRATION_LOCK_KEY = 0x67726F7665  # "grove"
CREATE_LEDGER: LiteralString = """
    CREATE TABLE IF NOT EXISTS schema_migrations (
        version    integer PRIMARY KEY,
        name       text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
    )
"""


def available_migrations() -> list[tuple[int, str, str]]:
    """Return ``(version, name, sql)`` for every packaged migration, in order."""
    folder = resources.files("grove_db") / "migrations"
    found = []
    for entry in folder.iterdir():
        if entry.name.endswith(".sql"):
            number, _, rest = entry.name.partition("_")
            found.append((int(number), rest.removesuffix(".sql"), entry.read_text()))
    return sorted(found)


def migrate(
    url: str,
    runtime_role: str | None = None,
    share_role: str | None = None,
    console_role: str | None = None,
    *,
    citus: bool = False,
) -> list[int]:
    """Apply pending migrations as the migration role; return the versions applied.

    When ``runtime_role`` is given, its privileges are (re)granted afterwards; likewise
    ``share_role``'s (grove-share's: only the public share functions) and
    ``console_role``'s (grove-console's: only its session functions). With ``citus``,
    ``url`` is a Citus coordinator's, and the tables are then distributed (once:
    ``grove_db.distribution``) before the grants, which Citus carries to the shards.
    """
    applied: list[int] = []
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK_KEY,))
        try:
            conn.execute(CREATE_LEDGER)
            done = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
            for version, name, text in available_migrations():
                if version in done:
                    continue
                with conn.transaction():
                    conn.execute(text)
                    conn.execute(
                        "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)",
                        (version, name),
                    )
                applied.append(version)
            if citus:
                distribution.distribute(conn)
            if runtime_role:
                grant(conn, "grants.sql", runtime_role)
            if share_role:
                grant(conn, "share_grants.sql", share_role)
            if console_role:
                grant(conn, "console_grants.sql", console_role)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK_KEY,))
    return applied


def grant(conn: psycopg.Connection[Any], grants_file: str, role: str) -> None:
    """Grant ``role`` the privileges in one of the packaged grants files."""
    template = (resources.files("grove_db") / grants_file).read_text()
    statement = sql.SQL(template).format(role=sql.Identifier(role))
    conn.execute(statement)
