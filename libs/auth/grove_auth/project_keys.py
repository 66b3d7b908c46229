"""Project keys: agent credentials for one org project's shared memory pool.

A project key is ``grvp_`` followed by 43 URL-safe characters; like API keys, only
HMAC-SHA-256(server secret, key) is stored. It holds the ``project_memory`` family
(``read``, optionally ``write``) and nothing else: no personal notes, no notebooks. It
acts for the account that created it, so that person's live project role caps it (the
memory functions check the role on every call; revocation is checked here on every
request).
"""

from __future__ import annotations

import secrets
from typing import Any
from uuid import UUID, uuid4

from psycopg_pool import ConnectionPool

from grove_auth.errors import Unauthorized
from grove_auth.keys import KEY_BYTES, VISIBLE_PREFIX_CHARS, allow_key_lookup, hash_key
from grove_auth.principal import Principal, ProjectKeyGrant
from grove_db.pool import Conn, transaction

PROJECT_KEY_PREFIX = "grvp_"

FIND_PROJECT_KEY = """
    SELECT id, org_id, project_id, created_by, can_read, can_write FROM project_keys
    WHERE key_hash = %s AND revoked_at IS NULL
"""


def new_project_key() -> str:
    """A fresh random project key."""
    return PROJECT_KEY_PREFIX + secrets.token_urlsafe(KEY_BYTES)


def authenticate_project_key(pool: ConnectionPool, secret: bytes, token: str) -> Principal:
    """Resolve a bearer project key to its principal, or raise ``Unauthorized``."""
    if not token.startswith(PROJECT_KEY_PREFIX) or len(token) > 200:
        raise Unauthorized("invalid project key")
    digest = hash_key(secret, token)
    with transaction(pool) as conn:
        allow_key_lookup(conn, digest)
        row = conn.execute(FIND_PROJECT_KEY, (digest,)).fetchone()
    if row is None:
        raise Unauthorized("invalid or revoked project key")
    return Principal(
        account_id=row["created_by"],
        connection_id=row["id"],
        personal=False,
        all_notebooks=False,
        can_read=False,
        kind="project_key",
        project_key=ProjectKeyGrant(
            key_id=row["id"],
            org_id=row["org_id"],
            project_id=row["project_id"],
            can_read=row["can_read"],
            can_write=row["can_write"],
        ),
    )


PROJECT_KEY_COLUMNS = "id, name, prefix, can_write, created_by, created_at, revoked_at"


def issue_project_key(
    conn: Conn,
    secret: bytes,
    *,
    org_id: UUID,
    project_id: UUID,
    created_by: UUID,
    name: str,
    can_write: bool,
) -> tuple[dict[str, Any], str]:
    """Store a new key for the entered project (caller's transaction); (row, plaintext)."""
    key = new_project_key()
    row = conn.execute(
        "INSERT INTO project_keys (org_id, project_id, id, created_by, name, prefix, key_hash,"
        " can_read, can_write) VALUES (%s, %s, %s, %s, %s, %s, %s, true, %s)"
        f" RETURNING {PROJECT_KEY_COLUMNS}",
        (
            org_id,
            project_id,
            uuid4(),
            created_by,
            name,
            key[:VISIBLE_PREFIX_CHARS],
            hash_key(secret, key),
            can_write,
        ),
    ).fetchone()
    assert row is not None  # INSERT ... RETURNING answers the row it stored
    return row, key
