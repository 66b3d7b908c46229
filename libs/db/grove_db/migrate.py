"""Forward-only numbered SQL migrations, applied under an advisory lock.

Each file in ``migrations/`` named ``NNNN_name.sql`` runs once, in order, in its own
transaction, and is recorded in ``schema_migrations``. Concurrent runners serialize on
one advisory lock, so two pods starting together apply each file exactly once.

On one server a file is sent as it is, one multi-statement string. On a Citus cluster
whose tables are already placed, its statements are sent one at a time (still in one
transaction): the coordinator carries DDL on a distributed or reference table to the
nodes as the text it was given, which must then be one command (docs/scaling.md).
"""

from __future__ import annotations

import re
from importlib import resources
from importlib.resources.abc import Traversable
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


def available_migrations(folder: Traversable | None = None) -> list[tuple[int, str, str]]:
    """Return ``(version, name, sql)`` for every migration in ``folder`` (default: the
    packaged ones), in order."""
    folder = folder or resources.files("grove_db") / "migrations"
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
    folder: Traversable | None = None,
    one_at_a_time: bool | None = None,
) -> list[int]:
    """Apply pending migrations as the migration role; return the versions applied.

    When ``runtime_role`` is given, its privileges are (re)granted afterwards; likewise
    ``share_role``'s (grove-share's: only the public share functions) and
    ``console_role``'s (grove-console's: only its session functions). With ``citus``,
    ``url`` is a Citus coordinator's, and the tables are then distributed (once:
    ``grove_db.distribution``) before the grants, which Citus carries to the shards.
    ``folder`` holds the migrations (default: the packaged ones). ``one_at_a_time``
    sends each migration's statements one by one (default: only on a Citus cluster
    already placed, ``placed``).
    """
    applied: list[int] = []
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK_KEY,))
        try:
            conn.execute(CREATE_LEDGER)
            done = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
            if one_at_a_time is None:
                one_at_a_time = placed(conn)
            for version, name, text in available_migrations(folder):
                if version in done:
                    continue
                with conn.transaction():
                    if one_at_a_time:
                        _run_on_cluster(conn, text)
                    else:
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


def placed(conn: psycopg.Connection[Any]) -> bool:
    """Whether this is a Citus cluster whose tables are already placed, where a
    migration's statements must be sent one at a time."""
    row = conn.execute(
        "SELECT to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL"
        " AND to_regclass('public.memories') IS NOT NULL"
    ).fetchone()
    return bool(row and row[0]) and distribution.is_distributed(conn)


def _run_on_cluster(conn: psycopg.Connection[Any], text: str) -> None:
    """Run a migration's statements one at a time, in the caller's transaction."""
    # One connection per node for the whole migration: Citus refuses to create or
    # change a function after DDL on a distributed table went over parallel connections.
    # (On one server, an unknown setting PostgreSQL keeps as written.)
    conn.execute("SET LOCAL citus.multi_shard_modify_mode = 'sequential'")
    for statement in statements(text):
        conn.execute(statement)


#: What a migration's text is read as, to find the semicolons that end its statements:
#: a dollar quote's opening (a function's ``$$`` or ``$fn$`` body, closed by the same
#: tag; not inside a word, as PostgreSQL reads it), comments, strings (``E'…'`` with
#: backslash escapes), quoted identifiers.
LEXEME = re.compile(
    r"""(?<![A-Za-z0-9_$])(?P<dollar>\$(?:[A-Za-z_][A-Za-z_0-9]*)?\$)
      | (?P<line>--[^\n]*)
      | (?P<block>/\*)
      | (?<![A-Za-z0-9_])[Ee]'(?:[^'\\]|\\.|'')*'
      | '(?:[^']|'')*'
      | "(?:[^"]|"")*"
      | (?P<end>;)""",
    re.VERBOSE | re.DOTALL,
)


def statements(text: str) -> list[str]:
    """The statements of a migration's text, each whole and without its semicolon.

    psycopg has no splitter, and sqlparse is not a dependency; this reads the lexical
    forms that can hold a semicolon not ending a statement (``LEXEME``): strings,
    quoted identifiers, comments (``/* */`` nested), dollar-quoted bodies. A piece with
    nothing but comments and blanks is left out.
    """
    found: list[str] = []
    start = at = 0
    code = False  # whether the current piece holds more than comments and blanks
    while (match := LEXEME.search(text, at)) is not None:
        code = code or bool(text[at : match.start()].strip())
        at = match.end()
        if match["end"]:
            if code:
                found.append(text[start : match.start()].strip())
            start, code = at, False
        elif match["dollar"]:
            at = _closed(text, at, match["dollar"])
            code = True
        elif match["block"]:
            at = _comment_end(text, at)
        elif not match["line"]:
            code = True
    if code or text[at:].strip():
        found.append(text[start:].strip())
    return found


def _closed(text: str, at: int, delimiter: str) -> int:
    """Where a dollar-quoted body opened before ``at`` ends (past its closing tag)."""
    end = text.find(delimiter, at)
    if end < 0:
        raise ValueError(f"a dollar quote {delimiter} is never closed")
    return end + len(delimiter)


COMMENT_EDGE = re.compile(r"/\*|\*/")


def _comment_end(text: str, at: int) -> int:
    """Where a ``/* */`` comment opened before ``at`` ends (they nest in PostgreSQL)."""
    depth = 1
    while depth:
        match = COMMENT_EDGE.search(text, at)
        if match is None:
            raise ValueError("a /* comment is never closed")
        depth += 1 if match[0] == "/*" else -1
        at = match.end()
    return at
